//! A model whose weights lie on the line between two models of the same architecture and
//! vocabulary (`lase interpolate`): θ = (1 − α)·θ_from + α·θ_to, every parameter alike.
//!
//! WiSE-FT (Wortsman et al. 2022, "Robust fine-tuning of zero-shot models") interpolates a
//! fine-tuned model's weights back towards the model it was fine-tuned from: the two lie in
//! one basin, so points between them keep much of what each does well (there: the
//! zero-shot model's robustness and the fine-tuned one's accuracy). In lase the two ends are
//! two runs of one lineage, e.g. a default before and after a contrastive leg that gained
//! cross-lingual retrieval and lost English similarity; α is chosen on a dev split.
//! Everything but the weights (tokenizer, pooling, heads' configs) comes from `from`.
//!
//! Across a vocabulary extension (`lase tokenizer extend`, or `extend_vocabulary` in a
//! recipe): when `from`'s vocabulary is `to`'s with pieces appended (every piece of `to` at
//! the same id in `from`, the tokenizers otherwise alike), the rows of the shared pieces are
//! interpolated like every other weight and the appended rows stay `from`'s at every α: `to`
//! has no row for them. The output keeps `from`'s tokenizer, so `from` must be the extended
//! model (the other way round is refused, naming the swap: `--alpha 1 − α`).

use std::path::Path;

use tch::Tensor;

use crate::error::{LaseError, Result};
use crate::model::SentenceEncoder;

/// Loads `from` and `to`, checks that they share every parameter's name and shape and
/// the tokenizer (or that `from`'s vocabulary extends `to`'s: see the module doc), and
/// returns `from` with its weights moved to (1 − α)·from + α·to.
pub fn interpolate(from: &Path, to: &Path, alpha: f64) -> Result<SentenceEncoder> {
    if !(0.0..=1.0).contains(&alpha) {
        return Err(LaseError::InvalidArgument(format!(
            "alpha {alpha} must be between 0 (the first model) and 1 (the second)"
        )));
    }
    let device = tch::Device::Cpu;
    let mut base = SentenceEncoder::load(from, device)?;
    let other = SentenceEncoder::load(to, device)?;
    // Rows of `to`'s embedding table that `from`'s first rows mean: None where the two
    // tokenizers are the same.
    let shared_rows = shared_vocabulary(&base, &other, from, to)?;
    let theirs = other.var_store().variables();
    let ours = base.var_store().variables();
    if ours.len() != theirs.len() {
        return Err(LaseError::InvalidArgument(format!(
            "{} has {} parameters, {} has {}",
            from.display(),
            ours.len(),
            to.display(),
            theirs.len()
        )));
    }
    // Sorted, so the first mismatch named is the same on every run.
    let mut names: Vec<&String> = ours.keys().collect();
    names.sort();
    for name in names {
        let t = &ours[name];
        let Some(u) = theirs.get(name) else {
            return Err(LaseError::InvalidArgument(format!(
                "{} has no parameter {name}, which {} has",
                to.display(),
                from.display()
            )));
        };
        let extended_rows = shared_rows.is_some_and(|n| {
            name.ends_with(WORD_EMBEDDINGS)
                && u.size().first() == Some(&n)
                && t.size().first().is_some_and(|&m| m > n)
                && t.size()[1..] == u.size()[1..]
        });
        if t.size() != u.size() && !extended_rows {
            return Err(LaseError::InvalidArgument(format!(
                "parameter {name}: shape {:?} in {} but {:?} in {}",
                t.size(),
                from.display(),
                u.size(),
                to.display()
            )));
        }
    }
    tch::no_grad(|| {
        let vars = base.var_store_mut().variables();
        for (name, t) in vars {
            let u: &Tensor = &theirs[&name];
            // The appended rows (an extended vocabulary's) stay `from`'s.
            let mut shared = t.narrow(0, 0, u.size()[0]);
            let mixed = &shared * (1.0 - alpha) + u.to_kind(t.kind()) * alpha;
            shared.copy_(&mixed);
        }
    });
    Ok(base)
}

/// The embedding table's parameter name ends so (BERT's `embeddings.word_embeddings`).
const WORD_EMBEDDINGS: &str = "word_embeddings.weight";

/// None where the two tokenizers are the same; Some(n) where `from`'s vocabulary is `to`'s n
/// pieces (same ids) with more appended and the tokenizers are otherwise alike; an error
/// naming the difference otherwise.
fn shared_vocabulary(
    base: &SentenceEncoder,
    other: &SentenceEncoder,
    from: &Path,
    to: &Path,
) -> Result<Option<i64>> {
    if base.tokenizer_json() == other.tokenizer_json() {
        return Ok(None);
    }
    let different = || {
        LaseError::InvalidArgument(format!(
            "{} and {} have different tokenizers: their embedding rows do not mean the same pieces",
            from.display(),
            to.display()
        ))
    };
    let parse = |text: &str| -> Option<(
        serde_json::Value,
        serde_json::Map<String, serde_json::Value>,
    )> {
        let mut json: serde_json::Value = serde_json::from_str(text).ok()?;
        let vocab = json.get_mut("model")?.as_object_mut()?.remove("vocab")?;
        Some((json, vocab.as_object()?.clone()))
    };
    let (Some((rest_from, vocab_from)), Some((rest_to, vocab_to))) =
        (parse(base.tokenizer_json()), parse(other.tokenizer_json()))
    else {
        return Err(different());
    };
    if rest_from != rest_to {
        return Err(different());
    }
    let contains = |big: &serde_json::Map<String, serde_json::Value>,
                    small: &serde_json::Map<String, serde_json::Value>| {
        small.len() < big.len() && small.iter().all(|(piece, id)| big.get(piece) == Some(id))
    };
    if contains(&vocab_from, &vocab_to) {
        return Ok(Some(vocab_to.len() as i64));
    }
    if contains(&vocab_to, &vocab_from) {
        return Err(LaseError::InvalidArgument(format!(
            "{}'s vocabulary extends {}'s: give the extended model as the first (--model {} \
             --to {} --alpha 1 - alpha), whose tokenizer the output keeps",
            to.display(),
            from.display(),
            to.display(),
            from.display()
        )));
    }
    Err(different())
}
