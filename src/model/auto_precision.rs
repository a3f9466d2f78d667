//! `--precision auto`: the fastest precision this machine runs well that keeps the
//! model's vectors within an accuracy budget of float32, checked on the model itself.
//!
//! The candidate comes from the hardware, by what was measured on the project's CPU kinds
//! (docs/benchmarks.md, "int8 with one scale per token"):
//! - AMX (Intel Xeon): bf16, whose AMX products encoded all-MiniLM-L6-v2 faster than int8
//!   there (1404.0 vs 1015.5 sentences/s on 2 cores, 2026-11-25); with per-token int8 on
//!   oneDNN and its fused epilogue (2026-11-28) int8 won one run (828.8 vs 702.9), but in
//!   5 interleaved rounds it was not faster on lase-base (median 578 vs 614), so bf16, the
//!   more accurate, stays (docs/benchmarks.md, "Today's code on an AMX Xeon"); after bf16's
//!   products were padded to row buckets, 5 more rounds: lase-base bf16 median 966 vs
//!   int8 873, lase-mini a tie (1481 vs 1468; 1261 vs 1313 on FLORES), so no model is
//!   faster in int8 there ("bf16 products in row buckets");
//! - otherwise AVX512-VNNI or AVX-VNNI (int8 dot products): int8, whose activations are
//!   quantised per token (src/model/int8.rs), so no sentence sets another's scale; on the
//!   AVX-512 EPYC (VNNI and AVX512-BF16, no AMX) it encoded faster than bf16 and kept
//!   Tatoeba and FLORES P@1 within the 0.5 of float32;
//! - otherwise AVX512-BF16: bf16;
//! - otherwise AVX2: int8 again, on oneDNN's AVX2 kernels (u8 x s8 pair sums, exact with
//!   int8.rs's 7-bit weights): 1.61x float32 on an AVX2-only EPYC (316.6 vs 196.4
//!   sentences/s), FLORES P@1 within 0.36 of float32 (docs/benchmarks.md, "int8 on an
//!   AVX2-only EPYC");
//! - otherwise (no AVX2) and on a GPU: float32.
//!
//! The candidate is then checked on this model: 32 sentences in 16 languages
//! (probe_sentences.txt, written for this check, in no test set) are encoded in float32
//! and in the candidate, and the candidate is kept only if the worst cosine between the
//! two is at least [`AutoPrecisionBudget::min_cosine`]. Otherwise float32 runs, and the
//! reason says so.

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
    /// over 4,000 sentences, in int8 (one scale per token) 0.9676; lase-base and
    /// lase-mini keep FLORES and Tatoeba P@1 within 0.12 of float32 in bf16 on AVX512-BF16
    /// and AMX CPUs, and within 0.5 in int8 (docs/benchmarks.md, "Inference precision and
    /// retrieval" and "int8 with one scale per token").
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
    cpu_candidate(&crate::runtime::cpu_flags())
}

/// [`hardware_candidate`] for a CPU with these /proc/cpuinfo flags.
pub fn cpu_candidate<S: AsRef<str>>(flags: &[S]) -> (Precision, &'static str) {
    let has = |name: &str| flags.iter().any(|f| f.as_ref() == name);
    if crate::runtime::has_amx(flags) {
        return (Precision::Bf16, "the CPU has AMX");
    }
    if has("avx512_vnni") || has("avx_vnni") {
        return (
            Precision::Int8,
            "the CPU has VNNI int8 dot products and no AMX",
        );
    }
    if crate::runtime::has_fast_bf16(flags) {
        return (Precision::Bf16, "the CPU has AVX512-BF16");
    }
    // oneDNN's AVX2 int8 GEMM (pair sums of u8 x s8 products): 1.61x float32 on an
    // AVX2-only EPYC (docs/benchmarks.md, "int8 on an AVX2-only EPYC").
    if has("avx2") {
        return (
            Precision::Int8,
            "the CPU has AVX2 int8 products (no AMX, VNNI or AVX512-BF16)",
        );
    }
    (
        Precision::F32,
        "the CPU has neither AMX, VNNI, AVX512-BF16 nor AVX2",
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

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(list: &str) -> Vec<&str> {
        list.split_whitespace().collect()
    }

    #[test]
    fn each_measured_cpu_kind_gets_its_fastest_precision() {
        // The AVX-512 and AMX flags of the project's three CPU kinds (/proc/cpuinfo).
        let amx_xeon = flags(
            "avx2 avx512f avx512bw avx512vl avx512_bf16 avx512_vnni avx_vnni amx_bf16 amx_tile amx_int8",
        );
        let avx512_epyc = flags("avx2 avx512f avx512bw avx512vl avx_vnni avx512_bf16 avx512_vnni");
        let avx2_epyc = flags("avx avx2 fma f16c");
        assert_eq!(cpu_candidate(&amx_xeon).0, Precision::Bf16);
        assert_eq!(cpu_candidate(&avx512_epyc).0, Precision::Int8);
        assert_eq!(cpu_candidate(&avx2_epyc).0, Precision::Int8);
        // Unmeasured kinds follow the same order: VNNI without AMX (e.g. Ice Lake) int8,
        // AVX512-BF16 alone bf16.
        assert_eq!(
            cpu_candidate(&flags("avx2 avx512f avx512_vnni")).0,
            Precision::Int8
        );
        assert_eq!(
            cpu_candidate(&flags("avx2 avx512f avx512_bf16")).0,
            Precision::Bf16
        );
        // Without AVX2 (older x86, other architectures): float32.
        assert_eq!(cpu_candidate(&flags("sse4_2 avx")).0, Precision::F32);
        assert_eq!(cpu_candidate::<&str>(&[]).0, Precision::F32);
    }
}
