//! Optimiser, step schedule and run bookkeeping.

use serde::{Deserialize, Serialize};

/// AdamW (Loshchilov & Hutter 2019) hyperparameters; ems.txt: lr 3e-4, weight decay 1e-5.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OptimizerConfig {
    pub lr: f64,
    pub weight_decay: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    /// Global gradient-norm clipping (0 = off).
    pub max_grad_norm: f64,
}

impl Default for OptimizerConfig {
    fn default() -> Self {
        Self {
            lr: 3e-4,
            weight_decay: 1e-5,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            max_grad_norm: 1.0,
        }
    }
}

/// Learning-rate decay after warm-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decay {
    Linear,
    Cosine,
    Constant,
}

/// Steps, batches and the warm-up/decay schedule (ems.txt: 10k warm-up steps, batch
/// 152 pairs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScheduleConfig {
    pub steps: u64,
    pub warmup_steps: u64,
    pub decay: Decay,
    /// Translation pairs per optimizer step (per accumulation micro-batch).
    pub batch_pairs: usize,
    /// Micro-batches accumulated per optimizer step.
    pub accumulation_steps: usize,
    /// Gradient caching: encode in chunks of this many sentences (0 = off), so a batch
    /// of thousands of pairs fits in memory with all of them as in-batch negatives.
    pub grad_cache_chunk: usize,
    /// Without gradient caching: each side is still embedded in length-sorted chunks of
    /// this many sentences, so each forward pads only to its own longest sentence (32
    /// suits a CPU; a GPU runs larger chunks faster, each forward being a fixed number of
    /// kernel launches). Changes the arithmetic's grouping, not the loss.
    pub padding_chunk: usize,
}

/// Sentences per forward pass in a direct (uncached) pass: small enough that sorting by
/// length removes most padding, large enough for efficient matrix products.
pub const DIRECT_PADDING_CHUNK: usize = 32;

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self {
            steps: 100_000,
            warmup_steps: 10_000,
            decay: Decay::Linear,
            batch_pairs: 152,
            accumulation_steps: 1,
            grad_cache_chunk: 0,
            padding_chunk: DIRECT_PADDING_CHUNK,
        }
    }
}

/// Bookkeeping: seeds, how often to log, evaluate and checkpoint, device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    pub seed: u64,
    pub log_every: u64,
    pub eval_every: u64,
    pub checkpoint_every: u64,
    /// Dev pairs used for the dev retrieval metric (0 = all): this many pairs with the
    /// pivot, and apart from them as many non-pivot dev pairs (see `train::dev_set`).
    pub dev_max_pairs: usize,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            log_every: 50,
            eval_every: 1000,
            checkpoint_every: 1000,
            dev_max_pairs: 2000,
        }
    }
}
