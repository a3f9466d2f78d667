//! `lase shard knn`: the k nearest neighbours of one shard's rows over every shard of the
//! other store, in one direction. Output in the k-NN folder, for shard i of direction d
//! (`fwd` = source rows over the target store, `bwd` = target rows over the source store):
//! `d-NNNNN.scores.npy` (float32, rows x k, best first), `d-NNNNN.indices.npy` (int64,
//! rows in the other store, numbered over the whole corpus), then `d-NNNNN.json` (written
//! last: its presence marks the shard complete). LASER's margin needs the mean of each
//! row's k scores, which these lists hold.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::StepOutcome;
use super::store::Store;
use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;
use crate::io::npy::{NpyIndexMatrix, NpyMatrix, NpyWriter};
use crate::mine::topk_cpu::RunningTopK;
use crate::mine::{MatrixView, Neighbours};

/// Which side's rows are the queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Source rows searched in the target store.
    Fwd,
    /// Target rows searched in the source store.
    Bwd,
}

impl std::str::FromStr for Direction {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "fwd" => Ok(Self::Fwd),
            "bwd" => Ok(Self::Bwd),
            _ => Err(format!("direction {s:?}: expected fwd or bwd")),
        }
    }
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Self::Fwd => "fwd",
            Self::Bwd => "bwd",
        }
    }
}

/// What a finished k-NN shard records (`d-NNNNN.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KnnRecord {
    pub rows: usize,
    pub k: usize,
    /// Rows in the searched store (for the check that the lists belong to it).
    pub keys: usize,
    pub seconds: f64,
}

fn paths(dir: &Path, direction: Direction, i: usize) -> (PathBuf, PathBuf, PathBuf) {
    let stem = format!("{}-{i:05}", direction.name());
    (
        dir.join(format!("{stem}.scores.npy")),
        dir.join(format!("{stem}.indices.npy")),
        dir.join(format!("{stem}.json")),
    )
}

/// The finished record of shard `i`, if its lists are complete and fit `k` and `keys`.
fn finished(
    dir: &Path,
    direction: Direction,
    i: usize,
    rows: usize,
    k: usize,
    keys: usize,
) -> Result<Option<KnnRecord>> {
    let (scores, indices, record) = paths(dir, direction, i);
    if !record.exists() {
        return Ok(None);
    }
    let text = crate::io::text::read_text(&record)?;
    let r: KnnRecord = serde_json::from_str(&text)
        .map_err(|e| LaseError::bad_line(&record, e.line(), e.to_string()))?;
    let kept = k.min(keys).max(1);
    let files_ok = NpyMatrix::open(&scores).is_ok_and(|m| m.rows == rows && m.cols == kept)
        && NpyIndexMatrix::open(&indices).is_ok_and(|m| m.rows == rows && m.cols == kept);
    Ok((files_ok && r.rows == rows && r.k == kept && r.keys == keys).then_some(r))
}

/// Searches shard `i` of the query side over every shard of the other store, keeping
/// `k` neighbours per row, into `out` (skipped if already complete there).
pub fn knn_shard(
    src: &Store,
    tgt: &Store,
    direction: Direction,
    i: usize,
    k: usize,
    out: &Path,
    workers: usize,
) -> Result<StepOutcome> {
    let (queries, keys) = match direction {
        Direction::Fwd => (src, tgt),
        Direction::Bwd => (tgt, src),
    };
    let rows = queries.range(i)?.len();
    if rows == 0 {
        return Err(LaseError::InvalidArgument(format!(
            "{}: shard {i} has no sentences to search with",
            queries.dir.display()
        )));
    }
    let key_rows = keys.manifest.lines;
    if key_rows == 0 {
        return Err(LaseError::InvalidArgument(format!(
            "{}: the store searched has no sentences",
            keys.dir.display()
        )));
    }
    if let Some(done) = finished(out, direction, i, rows, k, key_rows)? {
        return Ok(StepOutcome::Skipped { rows: done.rows });
    }
    same_space(queries, keys)?;
    let started = Instant::now();
    let (q_values, q_rows, q_cols) = queries.vectors(i, queries.needs_normalizing()?)?;
    if q_rows != rows {
        return Err(LaseError::bad_file(
            queries.vectors_path(i),
            format!("has {q_rows} rows; shard {i} has {rows} lines"),
        ));
    }
    let x = MatrixView::new(&q_values, q_rows, q_cols)?;
    let normalize_keys = keys.needs_normalizing()?;
    // No more neighbours than keys (as `finished` and `merged` count them): a huge `-k`
    // must not size the lists.
    let mut lists = RunningTopK::new(rows, k.min(key_rows).max(1));
    for j in 0..keys.shards() {
        let (values, key_count, cols) = keys.vectors(j, normalize_keys)?;
        let y = MatrixView::new(&values, key_count, cols)?;
        lists.update(&x, &y, workers, None)?;
    }
    let neighbours = lists.into_neighbours();
    write_lists(out, direction, i, &neighbours)?;
    let record = KnnRecord {
        rows,
        k: neighbours.k,
        keys: key_rows,
        seconds: started.elapsed().as_secs_f64(),
    };
    let mut json = serde_json::to_string_pretty(&record).expect("record serialises");
    json.push('\n');
    write_atomic(paths(out, direction, i).2, json.as_bytes())?;
    Ok(StepOutcome::Written {
        rows,
        seconds: record.seconds,
    })
}

/// Refuses to search `keys` with `queries` of another width, naming both stores and their
/// models; warns when their models differ by path only (one model named from two places
/// is common on clusters; two models of one width cannot be told apart here).
fn same_space(queries: &Store, keys: &Store) -> Result<()> {
    let (q, k) = (queries.records()?, keys.records()?);
    let (Some(q), Some(k)) = (q.first(), k.first()) else {
        return Ok(());
    };
    if q.dim != k.dim {
        return Err(LaseError::InvalidArgument(format!(
            "{} holds {}-d vectors (embedded with {}) but {} holds {}-d vectors (embedded with {}): embed both stores with one model",
            queries.dir.display(),
            q.dim,
            q.model.display(),
            keys.dir.display(),
            k.dim,
            k.model.display()
        )));
    }
    if !super::store::same_model(&q.model, &k.model) {
        tracing::warn!(
            "{} was embedded with {} and {} with {}: mining needs one model for both sides",
            queries.dir.display(),
            q.model.display(),
            keys.dir.display(),
            k.model.display()
        );
    }
    Ok(())
}

fn write_lists(out: &Path, direction: Direction, i: usize, n: &Neighbours) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| LaseError::io(out, e))?;
    let (scores, indices, _) = paths(out, direction, i);
    let mut w = NpyWriter::create(&scores, n.k)?;
    w.write_rows(&n.scores)?;
    w.finish()?;
    let mut w = NpyWriter::create_i64(&indices, n.k)?;
    w.write_rows_i64(&n.indices)?;
    w.finish()?;
    Ok(())
}

/// Every shard's lists of one direction, concatenated in corpus order: the neighbours of
/// all `queries` rows. An error names the first shard not searched yet.
pub fn merged(
    out: &Path,
    direction: Direction,
    queries: &Store,
    keys: &Store,
    k: usize,
) -> Result<Neighbours> {
    let kept = k.min(keys.manifest.lines).max(1);
    let mut scores = Vec::with_capacity(queries.manifest.lines * kept);
    let mut indices = Vec::with_capacity(queries.manifest.lines * kept);
    for i in 0..queries.shards() {
        let rows = queries.range(i)?.len();
        if finished(out, direction, i, rows, k, keys.manifest.lines)?.is_none() {
            return Err(LaseError::InvalidArgument(format!(
                "{}: {} shard {i} has no complete k-NN lists for k = {k} (run lase shard knn --direction {} --shard {i})",
                out.display(),
                direction.name(),
                direction.name()
            )));
        }
        let (s, ix, _) = paths(out, direction, i);
        scores.extend_from_slice(&NpyMatrix::open(&s)?.values());
        let first_row = queries.range(i)?.start;
        let shard_indices = NpyIndexMatrix::open(&ix)?.values();
        // The lists are read back from disk: a row index outside the other side (a
        // damaged or foreign file) would index past its arrays when mining.
        if let Some(at) = shard_indices
            .iter()
            .position(|&j| j < 0 || j as u64 >= keys.manifest.lines as u64)
        {
            return Err(LaseError::bad_file(
                &ix,
                format!(
                    "row {} (query line {}) lists neighbour {}, outside the other side's {} lines",
                    at / kept,
                    first_row + at / kept + 1,
                    shard_indices[at],
                    keys.manifest.lines
                ),
            ));
        }
        indices.extend(shard_indices);
    }
    Ok(Neighbours {
        k: kept,
        scores,
        indices,
    })
}
