//! Loading a model for inference, shared by every command that encodes (embed, eval,
//! mine, shard embed, serve): the folder, the device, and `--precision`.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use lase::model::auto_precision::{AutoPrecisionBudget, set_auto_precision};
use lase::model::{Precision, SentenceEncoder};

/// `--precision`: one precision, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PrecisionChoice {
    /// The fastest precision this machine runs well that stays within
    /// [`AutoPrecisionBudget`] of float32 on the model (lase::model::auto_precision).
    Auto,
    Fixed(Precision),
}

impl std::str::FromStr for PrecisionChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            other => other
                .parse()
                .map(Self::Fixed)
                .map_err(|e: String| e.replace("(f32,", "(auto, f32,")),
        }
    }
}

#[derive(Args, Clone, Debug)]
pub struct PrecisionArgs {
    /// Numeric precision of the forward pass: auto (default: bf16 on CPUs with AMX, int8
    /// on CPUs with VNNI and no AMX, bf16 on other AVX512-BF16 CPUs, int8 on other AVX2
    /// CPUs, else f32, each only
    /// where the model's vectors stay within cosine 0.95 of f32 on 32 probe sentences;
    /// prints what it picked and why), f32 (exact), bf16 (bfloat16 products), int8 (int8
    /// linear layers, activations quantised per token; CPU only). bf16 kept FLORES and
    /// Tatoeba P@1 within 0.12 of f32, int8 within 0.5 (docs/benchmarks.md, "Inference
    /// precision and retrieval", "int8 with one scale per token").
    #[arg(long, default_value = "auto")]
    pub precision: PrecisionChoice,
}

/// Loads `dir` on `device` and converts it to `precision`, warning where that precision
/// runs on slow kernels; `auto` prints its pick and the reason on stderr.
pub fn load_encoder(
    dir: &Path,
    device: tch::Device,
    precision: PrecisionChoice,
) -> Result<SentenceEncoder> {
    let mut encoder = SentenceEncoder::load(dir, device)
        .with_context(|| format!("loading model {}", dir.display()))?;
    let precision = match precision {
        PrecisionChoice::Fixed(p) => p,
        PrecisionChoice::Auto => {
            let pick = set_auto_precision(&mut encoder, AutoPrecisionBudget::default())
                .with_context(|| format!("model {}: choosing a precision", dir.display()))?;
            eprintln!(
                "precision auto: {} ({})",
                format!("{:?}", pick.precision).to_lowercase(),
                pick.reason
            );
            return Ok(encoder);
        }
    };
    if precision == Precision::Bf16
        && device == tch::Device::Cpu
        && !lase::runtime::cpu_has_fast_bf16()
    {
        tracing::warn!(
            "this CPU has neither AVX512-BF16 nor AMX: bf16 runs on slow fallback kernels; f32 is faster here"
        );
    }
    encoder
        .set_precision(precision)
        .with_context(|| format!("model {}: precision {precision:?}", dir.display()))?;
    Ok(encoder)
}
