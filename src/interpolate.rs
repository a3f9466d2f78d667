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

use std::path::Path;

use tch::Tensor;

use crate::error::{LaseError, Result};
use crate::model::SentenceEncoder;

/// Loads `from` and `to`, checks that they share every parameter's name and shape and
/// the tokenizer, and returns `from` with its weights moved to (1 − α)·from + α·to.
pub fn interpolate(from: &Path, to: &Path, alpha: f64) -> Result<SentenceEncoder> {
    if !(0.0..=1.0).contains(&alpha) {
        return Err(LaseError::InvalidArgument(format!(
            "alpha {alpha} must be between 0 (the first model) and 1 (the second)"
        )));
    }
    let device = tch::Device::Cpu;
    let mut base = SentenceEncoder::load(from, device)?;
    let other = SentenceEncoder::load(to, device)?;
    if base.tokenizer_json() != other.tokenizer_json() {
        return Err(LaseError::InvalidArgument(format!(
            "{} and {} have different tokenizers: their embedding rows do not mean the same pieces",
            from.display(),
            to.display()
        )));
    }
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
        for (name, mut t) in vars {
            let u: &Tensor = &theirs[&name];
            let mixed = &t * (1.0 - alpha) + u.to_kind(t.kind()) * alpha;
            t.copy_(&mixed);
        }
    });
    Ok(base)
}
