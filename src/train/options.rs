//! Run-time options of a training run that are not part of the recipe.

use tch::Device;

use crate::model::Precision;

/// Run-time options that are not part of the recipe.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    pub device: Device,
    /// Stop (after checkpointing) once this many steps are done in this process, as if
    /// the run were killed there; for resume tests and time-sliced runs.
    pub stop_after_steps: Option<u64>,
    /// Stop (after checkpointing) at the first step that ends past this instant: a run
    /// sliced to a scheduler's or a lent GPU's time slot. Reading the data and the
    /// teacher's vectors count towards it (the CLI sets it from the process's start): a
    /// slow start is charged to the slot (a start longer than the slot still runs one
    /// step, its evaluation and its checkpoint).
    pub deadline: Option<crate::deadline::Deadline>,
    pub progress: bool,
    /// Mixed precision of the student's forward and backward passes (bf16: bfloat16
    /// matrix products over float32 weights; faster on GPUs and AMX / AVX512-BF16 CPUs).
    /// A run option like the device, not part of the recipe: a run may resume in
    /// another precision.
    pub precision: Precision,
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            device: Device::Cpu,
            stop_after_steps: None,
            deadline: None,
            progress: false,
            precision: Precision::F32,
        }
    }
}
