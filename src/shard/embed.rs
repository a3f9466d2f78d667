//! `lase shard embed`: one shard of a store's corpus into its vectors.

use std::path::Path;
use std::time::Instant;

use super::StepOutcome;
use super::store::same_model;
use super::store::{ShardRecord, Store};
use crate::error::{LaseError, Result};
use crate::inference::EncodeOptions;
use crate::inference::embed_with_progress;
use crate::io::atomic::write_atomic;
use crate::io::npy::write_f32;
use crate::model::SentenceEncoder;

/// Embeds shard `i` of `store` with `encoder` (skipped if it is already complete). The
/// sentences go through the same chunked, length-sorted batching as `lase mine --model`.
pub fn embed_shard(
    store: &Store,
    i: usize,
    encoder: &SentenceEncoder,
    model_dir: &Path,
    options: &EncodeOptions,
    progress: bool,
) -> Result<StepOutcome> {
    if let Some(done) = store.finished(i)? {
        if !same_model(&done.model, model_dir) {
            return Err(LaseError::InvalidArgument(format!(
                "{}: shard {i} was embedded with {}, and this run names {}: vectors of two \
                 models cannot be mined together (use the same model, or a new store)",
                store.dir.display(),
                done.model.display(),
                model_dir.display()
            )));
        }
        return Ok(StepOutcome::Skipped { rows: done.rows });
    }
    let started = Instant::now();
    let sentences = store.sentences(i)?;
    let dim = encoder.dim();
    let vectors = embed_with_progress(
        encoder,
        &sentences,
        options,
        &format!("embedding shard {i}"),
        progress,
    )?;
    let unit = !vectors
        .chunks_exact(dim.max(1))
        .any(crate::mine::off_unit_length);
    write_f32(store.vectors_path(i), sentences.len(), dim, &vectors)?;
    let record = ShardRecord {
        rows: sentences.len(),
        dim,
        unit,
        model: model_dir.to_path_buf(),
        seconds: started.elapsed().as_secs_f64(),
    };
    let mut json = serde_json::to_string_pretty(&record).expect("record serialises");
    json.push('\n');
    write_atomic(store.record_path(i), json.as_bytes())?;
    Ok(StepOutcome::Written {
        rows: record.rows,
        seconds: record.seconds,
    })
}
