//! Training checkpoints: everything a killed run needs to continue exactly as if it had
//! not stopped: encoder weights (a normal lase model folder), loss-head weights, AdamW
//! moments and step, the sampler's position, and the step counter. Dropout seeds are
//! derived from (seed, step), so no libtorch RNG state needs storing.
//!
//! A checkpoint is written into `checkpoint.partial/`, then swapped in by renames
//! (`checkpoint` -> `checkpoint.old`, `checkpoint.partial` -> `checkpoint`, old removed):
//! at any instant one complete checkpoint exists on disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tch::Tensor;

use super::objective::Objective;
use super::optimizer::AdamW;
use crate::data::SamplerState;
use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;
use crate::io::safetensors::{read_safetensors, write_safetensors};
use crate::model::SentenceEncoder;

/// The non-tensor part of a checkpoint (`state.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    /// Optimizer steps completed.
    pub step: u64,
    pub sampler: SamplerState,
    pub optimizer_steps: u64,
    /// Language table of the objective (index = language id).
    pub languages: Vec<String>,
    pub pairs_seen: u64,
    pub elapsed_seconds: f64,
    /// CRC-32 of every other file of the checkpoint (path relative to its folder), checked
    /// when it is read back: a byte changed after the write (a bad disk, a bad copy) is an
    /// error naming the file, not weights silently different from the run's. Empty in
    /// checkpoints written before it existed (then nothing is checked).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, u32>,
}

const CURRENT: &str = "checkpoint";
const PARTIAL: &str = "checkpoint.partial";
const OLD: &str = "checkpoint.old";
/// Marks a checkpoint folder carried between machines without `optimizer.safetensors`.
pub const TRANSFERRED: &str = "TRANSFERRED";

/// The newest complete checkpoint under `out`, if any.
pub fn find(out: &Path) -> Option<PathBuf> {
    [CURRENT, OLD]
        .iter()
        .map(|d| out.join(d))
        .find(|d| d.join("state.json").is_file())
}

/// Writes a checkpoint of the run under `out`.
pub fn save(
    out: &Path,
    encoder: &SentenceEncoder,
    objective: &Objective,
    optimizer: &AdamW,
    state: &TrainState,
) -> Result<()> {
    let partial = out.join(PARTIAL);
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| LaseError::io(&partial, e))?;
    }
    std::fs::create_dir_all(&partial).map_err(|e| LaseError::io(&partial, e))?;
    let written = write_partial(&partial, encoder, objective, optimizer, state);
    if written.is_err() {
        // A failed write (full disk, quota, read-only mount) leaves no partial folder;
        // the complete checkpoint before it stays where it was.
        let _ = std::fs::remove_dir_all(&partial);
    }
    written?;
    let current = out.join(CURRENT);
    let old = out.join(OLD);
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| LaseError::io(&old, e))?;
    }
    if current.exists() {
        std::fs::rename(&current, &old).map_err(|e| LaseError::io(&current, e))?;
    }
    std::fs::rename(&partial, &current).map_err(|e| LaseError::io(&partial, e))?;
    if old.exists() {
        std::fs::remove_dir_all(&old).map_err(|e| LaseError::io(&old, e))?;
    }
    Ok(())
}

fn write_partial(
    partial: &Path,
    encoder: &SentenceEncoder,
    objective: &Objective,
    optimizer: &AdamW,
    state: &TrainState,
) -> Result<()> {
    encoder.save(partial.join("encoder"))?;
    write_safetensors(
        &partial.join("objective.safetensors"),
        &objective.named_parameters(),
    )?;
    let (moments, _) = optimizer.state();
    write_safetensors(&partial.join("optimizer.safetensors"), &moments)?;
    let state = TrainState {
        files: checksums(partial)?,
        ..state.clone()
    };
    let mut json = serde_json::to_string_pretty(&state).expect("state serialises");
    json.push('\n');
    // state.json last: its presence marks the folder complete.
    write_atomic(partial.join("state.json"), json.as_bytes())
}

/// Reads `state.json` of a checkpoint folder and checks the other files against the
/// checksums it lists (except in a checkpoint carried between machines, whose weights
/// were re-exported on the way: [`TRANSFERRED`]).
pub fn read_state(dir: &Path) -> Result<TrainState> {
    let path = dir.join("state.json");
    let text = crate::io::text::read_text(&path)?;
    let state: TrainState = serde_json::from_str(&text)
        .map_err(|e| LaseError::bad_line(&path, e.line(), e.to_string()))?;
    if !dir.join(TRANSFERRED).exists() {
        for (name, &recorded) in &state.files {
            let file = dir.join(name);
            let found = crc32_of(&file)?;
            if found != recorded {
                return Err(LaseError::bad_file(
                    &file,
                    format!(
                        "checksum mismatch: CRC-32 {found:08x}, state.json recorded \
                         {recorded:08x} (the file changed after the checkpoint was written)"
                    ),
                ));
            }
        }
    }
    Ok(state)
}

/// CRC-32 of every file under `dir` (recursively), by path relative to `dir`.
fn checksums(dir: &Path) -> Result<BTreeMap<String, u32>> {
    crate::io::files_under(dir)?
        .into_iter()
        .map(|name| {
            let crc = crc32_of(&dir.join(&name))?;
            Ok((name, crc))
        })
        .collect()
}

fn crc32_of(path: &Path) -> Result<u32> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| LaseError::io(path, e))?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).map_err(|e| LaseError::io(path, e))?;
        if n == 0 {
            return Ok(hasher.finalize());
        }
        hasher.update(&buffer[..n]);
    }
}

/// Restores loss-head weights and optimizer moments from a checkpoint folder.
pub fn restore(
    dir: &Path,
    objective: &mut Objective,
    optimizer: &mut AdamW,
    state: &TrainState,
) -> Result<()> {
    let heads = read_safetensors(&dir.join("objective.safetensors"))?;
    let params = objective.named_parameters();
    tch::no_grad(|| -> Result<()> {
        for (name, mut p) in params {
            let src: &Tensor = heads.get(&name).ok_or_else(|| {
                LaseError::bad_file(dir.join("objective.safetensors"), format!("lacks {name}"))
            })?;
            p.copy_(src);
        }
        Ok(())
    })?;
    let moments_path = dir.join("optimizer.safetensors");
    if !moments_path.exists() && dir.join(TRANSFERRED).exists() {
        // A checkpoint carried between machines without its AdamW moments (twice the
        // weights' size; scripts/gpu_train.sh): training goes on from the same weights,
        // step and sampler position with fresh moments (not bit-identical to an
        // uninterrupted run).
        tracing::warn!(
            "{}: no optimizer moments (a transferred checkpoint): AdamW restarts its moments at step {}",
            dir.display(),
            state.step
        );
        return Ok(());
    }
    let moments: BTreeMap<String, Tensor> = read_safetensors(&moments_path)?;
    optimizer.restore(moments, state.optimizer_steps)
}
