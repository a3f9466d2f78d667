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
//! has no row for them (only the raw rows: where the table is factorised, the projection
//! after it and the embedding LayerNorm are averaged like every weight, so the appended
//! pieces' vectors still move with α). The output keeps `from`'s tokenizer, so `from` must
//! be the extended model (the other way round is refused, naming the swap: `--alpha 1 − α`).

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
        if let Some(n) = shared_rows.filter(|_| name.ends_with(WORD_EMBEDDINGS)) {
            // Across an extension only the shared pieces' rows must line up; either table
            // may hold more (the extension's rows, or spare rows past the vocabulary).
            let (ts, us) = (t.size(), u.size());
            if ts.len() != 2 || us.len() != 2 || ts[0] < n || us[0] < n || ts[1] != us[1] {
                return Err(LaseError::InvalidArgument(format!(
                    "parameter {name}: shape {:?} in {} and {:?} in {} do not both hold rows for the {n} pieces the two vocabularies share",
                    t.size(),
                    from.display(),
                    u.size(),
                    to.display()
                )));
            }
            continue;
        }
        if t.size() != u.size() {
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
            // Across an extension, the embedding table's first n rows only: the appended
            // rows stay `from`'s.
            let (mut mine, theirs_part) = match shared_rows {
                Some(n) if name.ends_with(WORD_EMBEDDINGS) => {
                    (t.narrow(0, 0, n), u.narrow(0, 0, n))
                }
                _ => (t, u.shallow_clone()),
            };
            let mixed = &mine * (1.0 - alpha) + theirs_part.to_kind(mine.kind()) * alpha;
            mine.copy_(&mixed);
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
    let different = |what: &str| {
        LaseError::InvalidArgument(format!(
            "{} and {} have different tokenizers ({what}): their embedding rows do not mean the same pieces",
            from.display(),
            to.display()
        ))
    };
    type Vocab = serde_json::Map<String, serde_json::Value>;
    let parse = |text: &str| -> Option<(serde_json::Value, Vocab)> {
        let mut json: serde_json::Value = serde_json::from_str(text).ok()?;
        let vocab = json.get_mut("model")?.as_object_mut()?.remove("vocab")?;
        Some((json, vocab.as_object()?.clone()))
    };
    let (Some((rest_from, vocab_from)), Some((rest_to, vocab_to))) =
        (parse(base.tokenizer_json()), parse(other.tokenizer_json()))
    else {
        return Err(different("no model.vocab map to compare"));
    };
    if rest_from != rest_to {
        let differing = rest_from
            .as_object()
            .zip(rest_to.as_object())
            .and_then(|(a, b)| {
                a.keys()
                    .chain(b.keys())
                    .find(|k| a.get(*k) != b.get(*k))
                    .cloned()
            })
            .unwrap_or_else(|| "their settings".into());
        return Err(different(&format!("{differing} differs")));
    }
    // `small` is `big`'s first n ids: every piece of `small` at the same id in `big`, its
    // ids exactly 0..n (its added tokens among them), and `big`'s other pieces at n or above.
    let extends = |big: &Vocab, small: &Vocab, rest: &serde_json::Value| {
        let n = small.len() as u64;
        let id = |v: &serde_json::Value| v.as_u64().unwrap_or(u64::MAX);
        let mut seen = vec![false; small.len()];
        let small_is_0_to_n = small.values().all(|v| {
            let i = id(v);
            i < n && !std::mem::replace(&mut seen[i as usize], true)
        });
        let added_inside = rest["added_tokens"]
            .as_array()
            .is_none_or(|tokens| tokens.iter().all(|t| id(&t["id"]) < n));
        small.len() < big.len()
            && small_is_0_to_n
            && added_inside
            && small.iter().all(|(piece, i)| big.get(piece) == Some(i))
            && big
                .iter()
                .all(|(piece, i)| small.contains_key(piece) || id(i) >= n)
    };
    if extends(&vocab_from, &vocab_to, &rest_to) {
        return Ok(Some(vocab_to.len() as i64));
    }
    if extends(&vocab_to, &vocab_from, &rest_from) {
        return Err(LaseError::InvalidArgument(format!(
            "{}'s vocabulary extends {}'s: give the extended model as the first (--model {} \
             --to {} --alpha 1 - alpha), whose tokenizer the output keeps",
            to.display(),
            from.display(),
            to.display(),
            from.display()
        )));
    }
    Err(different(
        "neither vocabulary is the other's with pieces appended",
    ))
}
