//! An embedding store: one corpus cut into line ranges (`manifest.json`), and per shard
//! its vectors (`shard-NNNNN.npy`, float32, one row per line) with a record of how they
//! were made (`shard-NNNNN.json`, written last: its presence marks the shard complete).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;
use crate::io::npy::NpyMatrix;
use crate::io::text::LineReader;

const FORMAT: &str = "lase-embedding-store/1";
const MANIFEST: &str = "manifest.json";

/// Lines `start..end` (0-based) of the corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardRange {
    pub start: usize,
    pub end: usize,
}

impl ShardRange {
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// The plan of a store: which corpus, cut where.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreManifest {
    pub format: String,
    /// The corpus, one sentence per line (plain or gzip), as given to `init`.
    pub input: PathBuf,
    pub lines: usize,
    /// Every shard but the last starts and ends at a multiple of this (the embedding
    /// chunk), so a shard's sentences are batched exactly as one process batches them.
    pub align: usize,
    pub shards: Vec<ShardRange>,
}

impl StoreManifest {
    /// `lines` cut into `shards` ranges as even as `align` allows, none empty: fewer
    /// shards than asked when the corpus has fewer than `shards` aligned blocks.
    pub fn plan(input: PathBuf, lines: usize, shards: usize, align: usize) -> Result<Self> {
        if shards == 0 || align == 0 {
            return Err(LaseError::InvalidArgument(
                "a store needs at least one shard and an alignment of at least 1".into(),
            ));
        }
        let blocks = lines.div_ceil(align);
        let n = shards.min(blocks).max(1);
        let ranges = (0..n)
            .map(|i| ShardRange {
                start: (blocks * i / n * align).min(lines),
                end: (blocks * (i + 1) / n * align).min(lines),
            })
            .collect();
        Ok(Self {
            format: FORMAT.into(),
            input,
            lines,
            align,
            shards: ranges,
        })
    }
}

/// How a shard's vectors were made (`shard-NNNNN.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    pub rows: usize,
    pub dim: usize,
    /// Every row has unit L2 norm (within 1e-3), as `lase mine` checks before searching.
    pub unit: bool,
    pub model: PathBuf,
    pub seconds: f64,
}

/// A store folder.
#[derive(Clone, Debug)]
pub struct Store {
    pub dir: PathBuf,
    pub manifest: StoreManifest,
}

impl Store {
    /// Writes the manifest of `input` cut into `shards` (counting its lines), or, if the
    /// folder has one, checks that it is the same plan (a re-run is a no-op).
    pub fn init(dir: &Path, input: &Path, shards: usize, align: usize) -> Result<Self> {
        let mut reader = LineReader::open(input)?;
        let mut lines = 0usize;
        loop {
            let chunk = reader.next_chunk(65_536)?;
            if chunk.is_empty() {
                break;
            }
            lines += chunk.len();
        }
        let manifest = StoreManifest::plan(input.to_path_buf(), lines, shards, align)?;
        let path = dir.join(MANIFEST);
        if path.exists() {
            let existing = Self::open(dir)?;
            if existing.manifest != manifest {
                return Err(LaseError::bad_file(
                    &path,
                    format!(
                        "holds another plan ({} lines of {} in {} shards); use a new folder",
                        existing.manifest.lines,
                        existing.manifest.input.display(),
                        existing.manifest.shards.len()
                    ),
                ));
            }
            return Ok(existing);
        }
        std::fs::create_dir_all(dir).map_err(|e| LaseError::io(dir, e))?;
        let mut json = serde_json::to_string_pretty(&manifest).expect("manifest serialises");
        json.push('\n');
        write_atomic(&path, json.as_bytes())?;
        Ok(Self {
            dir: dir.to_path_buf(),
            manifest,
        })
    }

    pub fn open(dir: &Path) -> Result<Self> {
        let path = dir.join(MANIFEST);
        let text = crate::io::text::read_text(&path)?;
        let manifest: StoreManifest = serde_json::from_str(&text)
            .map_err(|e| LaseError::bad_line(&path, e.line(), e.to_string()))?;
        if manifest.format != FORMAT {
            return Err(LaseError::bad_file(
                &path,
                format!("format {:?}, expected {FORMAT:?}", manifest.format),
            ));
        }
        let mut at = 0;
        for r in &manifest.shards {
            if r.start != at || r.end < r.start {
                return Err(LaseError::bad_file(
                    &path,
                    "shard ranges do not tile the corpus",
                ));
            }
            at = r.end;
        }
        if at != manifest.lines {
            return Err(LaseError::bad_file(
                &path,
                "shard ranges do not tile the corpus",
            ));
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            manifest,
        })
    }

    pub fn shards(&self) -> usize {
        self.manifest.shards.len()
    }

    /// Range of shard `i`, or an error naming the store if there is no such shard.
    pub fn range(&self, i: usize) -> Result<ShardRange> {
        self.manifest.shards.get(i).copied().ok_or_else(|| {
            LaseError::InvalidArgument(format!(
                "{} has {} shards (0..{}); there is no shard {i}",
                self.dir.display(),
                self.shards(),
                self.shards()
            ))
        })
    }

    pub fn vectors_path(&self, i: usize) -> PathBuf {
        self.dir.join(format!("shard-{i:05}.npy"))
    }

    pub fn record_path(&self, i: usize) -> PathBuf {
        self.dir.join(format!("shard-{i:05}.json"))
    }

    /// Shard `i`'s record if its vectors are complete and match it, else `None`.
    pub fn finished(&self, i: usize) -> Result<Option<ShardRecord>> {
        let path = self.record_path(i);
        if !path.exists() {
            return Ok(None);
        }
        let text = crate::io::text::read_text(&path)?;
        let record: ShardRecord = serde_json::from_str(&text)
            .map_err(|e| LaseError::bad_line(&path, e.line(), e.to_string()))?;
        let vectors = self.vectors_path(i);
        let ok = NpyMatrix::open(&vectors)
            .map(|m| m.rows == record.rows && m.cols == record.dim)
            .unwrap_or(false);
        Ok((ok && record.rows == self.range(i)?.len()).then_some(record))
    }

    /// Every shard's record; an error naming the first shard not embedded yet, or the
    /// first shard embedded with another model than shard 0.
    pub fn records(&self) -> Result<Vec<ShardRecord>> {
        let records = (0..self.shards())
            .map(|i| {
                self.finished(i)?.ok_or_else(|| {
                    LaseError::InvalidArgument(format!(
                        "{}: shard {i} is not embedded yet (run lase shard embed --shard {i})",
                        self.dir.display()
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if let Some(i) = records
            .iter()
            .position(|r| !same_model(&r.model, &records[0].model))
        {
            return Err(LaseError::InvalidArgument(format!(
                "{}: shard 0 was embedded with {} but shard {i} with {}",
                self.dir.display(),
                records[0].model.display(),
                records[i].model.display()
            )));
        }
        Ok(records)
    }

    /// Whether the search must L2-normalise this store's rows: `lase mine`'s rule (any
    /// row of the side off unit length -> every row normalised), over all shards.
    pub fn needs_normalizing(&self) -> Result<bool> {
        let records = self.records()?;
        let dims: std::collections::BTreeSet<usize> = records.iter().map(|r| r.dim).collect();
        if dims.len() > 1 {
            return Err(LaseError::InvalidArgument(format!(
                "{}: shards of different widths {dims:?}",
                self.dir.display()
            )));
        }
        Ok(records.iter().any(|r| !r.unit))
    }

    /// Shard `i`'s vectors as the search uses them (normalised when `normalize`).
    pub fn vectors(&self, i: usize, normalize: bool) -> Result<(Vec<f32>, usize, usize)> {
        let m = NpyMatrix::open(self.vectors_path(i))?;
        let mut values = m.values().into_owned();
        if normalize {
            crate::mine::normalize_rows(&mut values, m.cols);
        }
        Ok((values, m.rows, m.cols))
    }

    /// The sentences of shard `i` (reads the corpus up to the shard's end).
    pub fn sentences(&self, i: usize) -> Result<Vec<String>> {
        let range = self.range(i)?;
        let mut reader = LineReader::open(&self.manifest.input)?;
        let mut skipped = 0;
        while skipped < range.start {
            let chunk = reader.next_chunk((range.start - skipped).min(65_536))?;
            if chunk.is_empty() {
                break;
            }
            skipped += chunk.len();
        }
        let lines = reader.next_chunk(range.len())?;
        if skipped != range.start || lines.len() != range.len() {
            return Err(LaseError::bad_file(
                &self.manifest.input,
                format!(
                    "has {} lines now; the store {} was planned for {}",
                    skipped + lines.len(),
                    self.dir.display(),
                    self.manifest.lines
                ),
            ));
        }
        Ok(lines)
    }

    /// Lines `wanted` (sorted, distinct, 0-based) of the corpus, in that order.
    pub fn lines_at(&self, wanted: &[usize]) -> Result<Vec<String>> {
        let mut out = Vec::with_capacity(wanted.len());
        let mut reader = LineReader::open(&self.manifest.input)?;
        let mut at = 0usize;
        let mut next = wanted.iter().peekable();
        while next.peek().is_some() {
            let chunk = reader.next_chunk(65_536)?;
            if chunk.is_empty() {
                break;
            }
            let end = at + chunk.len();
            while let Some(&&w) = next.peek() {
                if w >= end {
                    break;
                }
                out.push(chunk[w - at].clone());
                next.next();
            }
            at = end;
        }
        if out.len() != wanted.len() {
            return Err(LaseError::bad_file(
                &self.manifest.input,
                format!("is shorter than the store {} planned", self.dir.display()),
            ));
        }
        Ok(out)
    }
}

/// Whether two model paths name one folder: equal after resolving links and relative
/// parts where both exist (Slurm jobs may name it from other working folders), else equal
/// as written.
pub fn same_model(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_tile_the_corpus_on_aligned_boundaries() {
        for (lines, shards, align) in [(10, 3, 1), (1000, 7, 64), (65, 7, 64), (0, 3, 8), (5, 1, 8)]
        {
            let m = StoreManifest::plan("c.txt".into(), lines, shards, align).unwrap();
            assert!(!m.shards.is_empty() && m.shards.len() <= shards);
            let mut at = 0;
            for (i, r) in m.shards.iter().enumerate() {
                assert_eq!(r.start, at, "{lines} {shards} {align}: {:?}", m.shards);
                assert!(r.start.is_multiple_of(align));
                assert!(i + 1 == m.shards.len() || r.end.is_multiple_of(align));
                assert!(lines == 0 || !r.is_empty(), "{:?}", m.shards);
                at = r.end;
            }
            assert_eq!(at, lines);
        }
        // 1000 lines in blocks of 64 over 7 shards: 16 blocks -> 2 or 3 blocks each.
        let m = StoreManifest::plan("c.txt".into(), 1000, 7, 64).unwrap();
        let sizes: Vec<usize> = m.shards.iter().map(ShardRange::len).collect();
        assert_eq!(sizes.iter().sum::<usize>(), 1000);
        assert!(sizes.iter().all(|&s| (64..=192).contains(&s)), "{sizes:?}");
    }
}
