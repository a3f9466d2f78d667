//! `--precision auto`: the fastest precision this machine runs well that keeps the
//! model's vectors within an accuracy budget of float32, checked on the model itself.
//!
//! The candidate comes from the hardware: on a CPU with AVX512-BF16 or AMX, bf16 (native
//! bfloat16 products); on a GPU or any other CPU, float32. int8 is never the automatic
//! choice: its activations are quantised with one scale per forward pass
//! (src/model/int8.rs), so a sentence's vector depends on the sentences it shares a batch
//! with (in `lase serve`, on other users' requests), and its speed and accuracy on
//! AVX2-only CPUs are not measured; `--precision int8` opts in. The candidate is then checked
//! on this model: 32 sentences in 16 languages (probe_sentences.txt, written for this
//! check, in no test set) are encoded in float32 and in the candidate, and the candidate
//! is kept only if the worst cosine between the two is at least
//! [`AutoPrecisionBudget::min_cosine`]. Otherwise float32 runs, and the reason says so.

use tch::Device;

use super::sentence_encoder::{Precision, SentenceEncoder, l2_normalize};
use crate::error::Result;

/// The check's sentences (one per line).
pub const PROBE_SENTENCES: &str = include_str!("probe_sentences.txt");

/// How far from float32 the automatic choice may go.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AutoPrecisionBudget {
    /// Lowest worst-case cosine, over the probe sentences, between the candidate's
    /// vectors and float32's. 0.95: all-MiniLM-L6-v2 in bf16 has a worst cosine of 0.9998
    /// over 4,000 sentences; lase-base and lase-mini in bf16 keep FLORES and Tatoeba P@1
    /// within 0.12 of float32 on AVX512-BF16 and AMX CPUs (docs/benchmarks.md, "Inference
    /// precision and retrieval").
    pub min_cosine: f64,
}

impl Default for AutoPrecisionBudget {
    fn default() -> Self {
        Self { min_cosine: 0.95 }
    }
}

/// What `auto` picked and why, for the log.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoPrecision {
    pub precision: Precision,
    pub reason: String,
}

/// The precision this machine's hardware favours for `device`, before any accuracy check.
pub fn hardware_candidate(device: Device) -> (Precision, &'static str) {
    if device != Device::Cpu {
        return (
            Precision::F32,
            "GPU: float32 (bf16 is not checked as a default there yet)",
        );
    }
    if crate::runtime::cpu_has_fast_bf16() {
        return (Precision::Bf16, "the CPU has AVX512-BF16 or AMX");
    }
    (
        Precision::F32,
        "the CPU has neither AVX512-BF16 nor AMX (int8 is never automatic: --precision int8 opts in)",
    )
}

/// Sets `encoder` (float32, as loaded) to the automatic precision and says why.
pub fn set_auto_precision(
    encoder: &mut SentenceEncoder,
    budget: AutoPrecisionBudget,
) -> Result<AutoPrecision> {
    let (candidate, why) = hardware_candidate(encoder.device());
    encoder.set_precision(Precision::F32)?;
    if candidate == Precision::F32 {
        return Ok(AutoPrecision {
            precision: Precision::F32,
            reason: why.to_string(),
        });
    }
    let sentences: Vec<&str> = PROBE_SENTENCES.lines().filter(|l| !l.is_empty()).collect();
    let _guard = tch::no_grad_guard();
    let float = encoder.encode(&sentences, sentences.len())?;
    // Converting to bfloat16 rounds the weights in place, and converting back does not
    // undo it: keep the float32 weights to put back if the candidate is refused.
    let float_weights: Vec<(String, tch::Tensor)> = if candidate == Precision::Bf16 {
        encoder
            .var_store()
            .variables()
            .into_iter()
            .map(|(name, t)| (name, t.copy()))
            .collect()
    } else {
        Vec::new()
    };
    encoder.set_precision(candidate)?;
    let other = encoder.encode(&sentences, sentences.len())?;
    let cosines = (l2_normalize(&float.to_kind(tch::Kind::Float))
        * l2_normalize(&other.to_kind(tch::Kind::Float)))
    .sum_dim_intlist(1, false, tch::Kind::Float);
    let worst = f64::try_from(cosines.min())?;
    let name = format!("{candidate:?}").to_lowercase();
    if worst >= budget.min_cosine {
        Ok(AutoPrecision {
            precision: candidate,
            reason: format!(
                "{why}; {name} vs float32 on {} probe sentences: worst cosine {worst:.4} >= {}",
                sentences.len(),
                budget.min_cosine
            ),
        })
    } else {
        encoder.set_precision(Precision::F32)?;
        let mut variables = encoder.var_store().variables();
        for (name, saved) in &float_weights {
            if let Some(v) = variables.get_mut(name) {
                v.copy_(saved);
            }
        }
        Ok(AutoPrecision {
            precision: Precision::F32,
            reason: format!(
                "{why}, but {name} vs float32 on {} probe sentences has worst cosine {worst:.4} < {}: float32",
                sentences.len(),
                budget.min_cosine
            ),
        })
    }
}
