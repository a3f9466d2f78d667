//! Teacher embeddings of the training pairs for distillation, computed once into the run
//! folder (`teacher-source.npy`, `teacher-target.npy`), each distinct text embedded once,
//! and memory-mapped while training.

use std::collections::HashMap;
use std::path::Path;

use indicatif::ProgressBar;
use tch::Device;

use super::config::{DistillationConfig, TeacherSide};
use crate::data::{ParallelCorpus, TranslationPair};
use crate::error::{LaseError, Result};
use crate::inference::EncodeOptions;
use crate::io::npy::{NpyMatrix, NpyWriter};
use crate::model::SentenceEncoder;

/// Writes one `dim`-wide row per text of `texts` to `path` (atomically), embedding each
/// distinct text once (Tatoeba repeats many sentences: 249k of the 382k English sides
/// are distinct) into the scratch matrix `scratch`, removed afterwards.
fn write_embeddings_of_distinct(
    texts: &[String],
    dim: usize,
    path: &Path,
    scratch: &Path,
    bar: &ProgressBar,
    embed: &mut dyn FnMut(&[&str]) -> Result<Vec<f32>>,
) -> Result<()> {
    let mut row_of: HashMap<&str, usize> = HashMap::new();
    let mut distinct: Vec<&str> = Vec::new();
    let rows: Vec<usize> = texts
        .iter()
        .map(|text| {
            *row_of.entry(text.as_str()).or_insert_with(|| {
                distinct.push(text);
                distinct.len() - 1
            })
        })
        .collect();
    bar.set_length(distinct.len() as u64);
    let mut writer = NpyWriter::create(scratch, dim)?;
    for chunk in distinct.chunks(4096) {
        writer.write_rows(&embed(chunk)?)?;
        bar.inc(chunk.len() as u64);
    }
    writer.finish()?;
    let vectors = NpyMatrix::open(scratch)?;
    let mut writer = NpyWriter::create(path, dim)?;
    for chunk in rows.chunks(4096) {
        let values: Vec<f32> = chunk.iter().flat_map(|&r| vectors.row(r)).collect();
        writer.write_rows(&values)?;
    }
    writer.finish()?;
    drop(vectors);
    std::fs::remove_file(scratch).map_err(|e| LaseError::io(scratch, e))
}

/// 64-bit FNV-1a, the hash of the caches' fingerprints.
struct Fnv1a64(u64);

impl Fnv1a64 {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }

    fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// What a cache embeds, in one line: the row count and a 64-bit FNV-1a hash of the texts
/// in order (each followed by a 0 byte), kept beside the cache (`teacher-<side>.texts`) so
/// a run resumed after its data changed (another sample, split or reader) recomputes
/// rather than reading targets of other pairs. [`CacheFingerprint::line`] adds the
/// teacher's.
fn fingerprint(texts: &[String]) -> String {
    let mut h = Fnv1a64::new();
    for t in texts {
        h.update(t.as_bytes());
        h.update(&[0]);
    }
    format!("{} texts, fnv1a64 {:016x}", texts.len(), h.0)
}

/// Which teacher a cache holds the vectors of: a 64-bit FNV-1a hash of every file in the
/// teacher's folder (its weights, configuration and tokenizer; not its Markdown model
/// card), each by its path inside the folder, its length and its bytes, in path order. A
/// run whose recipe names another teacher, or whose teacher's files changed, recomputes.
fn teacher_fingerprint(folder: &Path) -> Result<String> {
    // Every file under the folder (io::files_under, sorted), leaving out Markdown, hidden
    // entries (`.git`, `.cache`, lase's own `.NAME.tmp-PID` leftovers) and links to nothing.
    let mut files = Vec::new();
    for relative in crate::io::files_under(folder)? {
        let hidden = relative.split('/').any(|part| part.starts_with('.'));
        if hidden || relative.ends_with(".md") {
            continue;
        }
        let path = folder.join(&relative);
        match std::fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(LaseError::io(&path, e)),
            Ok(_) => files.push((relative, path)),
        }
    }
    let mut h = Fnv1a64::new();
    let mut buffer = vec![0u8; 1 << 20];
    for (relative, path) in &files {
        let mut file = std::fs::File::open(path).map_err(|e| LaseError::io(path, e))?;
        let length = file.metadata().map_err(|e| LaseError::io(path, e))?.len();
        h.update(relative.as_bytes());
        h.update(&[0]);
        h.update(&length.to_le_bytes());
        loop {
            let n =
                std::io::Read::read(&mut file, &mut buffer).map_err(|e| LaseError::io(path, e))?;
            if n == 0 {
                break;
            }
            h.update(&buffer[..n]);
        }
    }
    Ok(format!("{} files, fnv1a64 {:016x}", files.len(), h.0))
}

/// A cache's fingerprint: what it embeds and with which teacher.
struct CacheFingerprint {
    texts: String,
    teacher: String,
}

impl CacheFingerprint {
    /// The line kept in `teacher-<side>.texts`.
    fn line(&self) -> String {
        format!("{}; teacher {}", self.texts, self.teacher)
    }

    /// Whether a cache whose recorded line is `stored` (None: no record) and whose row
    /// count matches this run's or not (`rows_match`) holds this run's vectors.
    fn judge(&self, stored: Option<&str>, rows_match: bool) -> CacheVerdict {
        match stored {
            Some(line) if line == self.line() => CacheVerdict::Reuse,
            // Recorded before teachers were fingerprinted: the texts are all there is to check.
            Some(line) if line == self.texts => {
                CacheVerdict::ReuseUnchecked("its teacher was not recorded")
            }
            Some(line) if line.starts_with(&format!("{}; teacher ", self.texts)) => {
                CacheVerdict::Recompute("another teacher (or the teacher's files changed)")
            }
            Some(_) => CacheVerdict::Recompute("other texts than this run's pairs"),
            // From before fingerprints (or linked in without one): its row count is all there
            // is to check.
            None if rows_match => CacheVerdict::ReuseUnchecked("no fingerprint beside it"),
            None => CacheVerdict::Recompute("another row count than this run's pairs"),
        }
    }
}

/// What [`CacheFingerprint::judge`] decided, and why where it is not a plain match.
#[derive(Debug, PartialEq)]
enum CacheVerdict {
    Reuse,
    ReuseUnchecked(&'static str),
    Recompute(&'static str),
}

/// The text the teacher embeds for a pair's target side. A pivot-language teacher
/// (`teacher_side = "target"`) embeds a non-pivot pair's row's pivot segment, so both of
/// its sides learn to land on the same English vector; a multilingual teacher
/// (`"both"`) embeds the target itself.
fn target_text(side: TeacherSide, pair: &TranslationPair) -> &str {
    match side {
        TeacherSide::Target => pair.pivot_text(),
        TeacherSide::Source | TeacherSide::Both => &pair.tgt,
    }
}

/// Teacher embeddings of the training pairs, computed once into the run folder
/// (`teacher-source.npy`, `teacher-target.npy`) and memory-mapped.
pub struct TeacherCache {
    pub source: Option<NpyMatrix>,
    pub target: Option<NpyMatrix>,
    pub dim: usize,
}

impl TeacherCache {
    pub fn build(
        d: &DistillationConfig,
        train_set: &ParallelCorpus,
        out: &Path,
        device: Device,
        progress: bool,
    ) -> Result<Self> {
        let mut teacher: Option<SentenceEncoder> = None;
        let teacher_print = teacher_fingerprint(&d.teacher)?;
        let mut side = |name: &str,
                        wanted: bool,
                        pick: &dyn Fn(&crate::data::TranslationPair) -> String|
         -> Result<Option<NpyMatrix>> {
            if !wanted {
                return Ok(None);
            }
            let path = out.join(format!("teacher-{name}.npy"));
            let texts: Vec<String> = train_set.pairs.iter().map(pick).collect();
            let print = CacheFingerprint {
                texts: fingerprint(&texts),
                teacher: teacher_print.clone(),
            };
            let print_path = out.join(format!("teacher-{name}.texts"));
            if path.exists() {
                let m = NpyMatrix::open(&path)?;
                let stored = std::fs::read_to_string(&print_path).ok();
                match print.judge(stored.as_deref().map(str::trim), m.rows == train_set.len()) {
                    CacheVerdict::Reuse => return Ok(Some(m)),
                    CacheVerdict::ReuseUnchecked(why) => {
                        tracing::warn!(
                            "{}: {why} ({}); reused as it is",
                            path.display(),
                            print_path.display()
                        );
                        return Ok(Some(m));
                    }
                    CacheVerdict::Recompute(why) => tracing::warn!(
                        "{}: holds the vectors of {why} ({} pairs, teacher {}); recomputing",
                        path.display(),
                        train_set.len(),
                        d.teacher.display()
                    ),
                }
            }
            if teacher.is_none() {
                teacher = Some(SentenceEncoder::load(&d.teacher, device)?);
            }
            let t = teacher.as_ref().expect("just loaded");
            let options = EncodeOptions::for_device(device);
            let bar = if progress {
                ProgressBar::new(train_set.len() as u64)
            } else {
                ProgressBar::hidden()
            };
            bar.set_message(format!("teacher embeddings ({name})"));
            // The old record goes first: a kill between the new cache and its record
            // leaves a cache with no record (reused on its row count, with a warning),
            // never one that vouches for another teacher's or other texts' vectors.
            match std::fs::remove_file(&print_path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(LaseError::io(&print_path, e));
                }
                _ => {}
            }
            let scratch = out.join(format!("teacher-{name}.distinct.npy"));
            write_embeddings_of_distinct(&texts, t.dim(), &path, &scratch, &bar, &mut |chunk| {
                Ok(crate::inference::embed_sentences(t, chunk, &options)?.vectors)
            })?;
            bar.finish_and_clear();
            crate::io::atomic::write_atomic(&print_path, format!("{}\n", print.line()).as_bytes())?;
            Ok(Some(NpyMatrix::open(&path)?))
        };
        let (want_src, want_tgt) = match d.teacher_side {
            TeacherSide::Source => (true, false),
            TeacherSide::Target => (false, true),
            TeacherSide::Both => (true, true),
        };
        let source = side("source", want_src, &|p| p.src.clone())?;
        let teacher_side = d.teacher_side;
        let target = side("target", want_tgt, &|p| {
            target_text(teacher_side, p).to_owned()
        })?;
        let dim = source
            .as_ref()
            .or(target.as_ref())
            .map(|m| m.cols)
            .unwrap_or(0);
        Ok(Self {
            source,
            target,
            dim,
        })
    }

    /// The mean teacher vector over every cached row of both sides, [d_t] on `device`.
    pub fn mean(&self, device: Device) -> tch::Tensor {
        let mut sum = vec![0f64; self.dim];
        let mut rows = 0usize;
        for m in [&self.source, &self.target].into_iter().flatten() {
            for row in m.values().chunks(m.cols) {
                for (s, &v) in sum.iter_mut().zip(row) {
                    *s += f64::from(v);
                }
            }
            rows += m.rows;
        }
        let mean: Vec<f32> = sum
            .iter()
            .map(|s| (s / rows.max(1) as f64) as f32)
            .collect();
        tch::Tensor::from_slice(&mean).to_device(device)
    }

    /// `rows` vectors drawn uniformly with replacement (seeded by `seed`) from the side the
    /// teacher embeds (the target side when it embeds both), as [rows, d_t] on `device`:
    /// the negatives of contrastive distillation (`losses::teacher_bank`). Fewer when the
    /// cache holds fewer rows: then every row once.
    pub fn bank(&self, rows: usize, seed: u64, device: Device) -> Option<tch::Tensor> {
        let m = self.target.as_ref().or(self.source.as_ref())?;
        let picked: Vec<u32> = if rows >= m.rows {
            (0..m.rows as u32).collect()
        } else {
            let mut rng = crate::rng::SplitMix64::new(seed);
            (0..rows).map(|_| rng.below(m.rows) as u32).collect()
        };
        Some(gather(m, &picked, device))
    }

    /// Rows `batch` of a side as [N, d_t] on `device`.
    pub fn rows(
        &self,
        side: &Option<NpyMatrix>,
        batch: &[u32],
        device: Device,
    ) -> Option<tch::Tensor> {
        side.as_ref().map(|m| gather(m, batch, device))
    }
}

/// Rows `picked` of `m` as [picked.len(), cols] on `device`.
fn gather(m: &NpyMatrix, picked: &[u32], device: Device) -> tch::Tensor {
    let flat: Vec<f32> = picked.iter().flat_map(|&i| m.row(i as usize)).collect();
    tch::Tensor::from_slice(&flat)
        .view([picked.len() as i64, m.cols as i64])
        .to_device(device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_changes_with_any_text_or_their_order() {
        let t = |v: &[&str]| fingerprint(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let base = t(&["a", "bc"]);
        assert!(base.starts_with("2 texts, fnv1a64 "));
        assert_eq!(base, t(&["a", "bc"]));
        for other in [t(&["bc", "a"]), t(&["ab", "c"]), t(&["a", "bd"]), t(&["a"])] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn the_teacher_fingerprint_follows_its_files_but_not_its_model_card() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path();
        std::fs::create_dir_all(t.join("1_Pooling")).unwrap();
        std::fs::write(t.join("model.safetensors"), [1u8, 2, 3]).unwrap();
        std::fs::write(t.join("1_Pooling/config.json"), "{}").unwrap();
        std::fs::write(t.join("README.md"), "card").unwrap();
        let base = teacher_fingerprint(t).unwrap();
        assert!(base.starts_with("2 files, fnv1a64 "), "{base}");
        std::fs::write(t.join("README.md"), "another card").unwrap();
        assert_eq!(teacher_fingerprint(t).unwrap(), base);
        std::fs::write(t.join("model.safetensors"), [1u8, 2, 4]).unwrap();
        let weights_changed = teacher_fingerprint(t).unwrap();
        assert_ne!(weights_changed, base);
        std::fs::write(t.join("1_Pooling/config.json"), "{ }").unwrap();
        let config_changed = teacher_fingerprint(t).unwrap();
        assert_ne!(config_changed, weights_changed);
        // Hidden entries and links to nothing are not the teacher's.
        std::fs::create_dir_all(t.join(".git")).unwrap();
        std::fs::write(t.join(".git/index"), "changes with every git status").unwrap();
        std::os::unix::fs::symlink(t.join("gone"), t.join("dangling")).unwrap();
        assert_eq!(teacher_fingerprint(t).unwrap(), config_changed);
        std::fs::write(t.join(".git/index"), "changed").unwrap();
        assert_eq!(teacher_fingerprint(t).unwrap(), config_changed);
        let missing = teacher_fingerprint(&t.join("absent"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("absent"), "{missing}");
    }

    #[test]
    fn a_cache_of_another_teacher_is_recomputed_and_an_older_record_reused() {
        let print = CacheFingerprint {
            texts: "2 texts, fnv1a64 00000000000000aa".into(),
            teacher: "3 files, fnv1a64 00000000000000bb".into(),
        };
        let line = print.line();
        assert_eq!(print.judge(Some(&line), true), CacheVerdict::Reuse);
        let other_teacher =
            "2 texts, fnv1a64 00000000000000aa; teacher 3 files, fnv1a64 00000000000000cc";
        assert!(
            matches!(print.judge(Some(other_teacher), true), CacheVerdict::Recompute(w) if w.contains("another teacher"))
        );
        let other_texts =
            "2 texts, fnv1a64 00000000000000ab; teacher 3 files, fnv1a64 00000000000000bb";
        assert!(
            matches!(print.judge(Some(other_texts), true), CacheVerdict::Recompute(w) if w.contains("other texts"))
        );
        assert!(matches!(
            print.judge(Some(&print.texts), false),
            CacheVerdict::ReuseUnchecked(_)
        ));
        assert!(matches!(
            print.judge(None, true),
            CacheVerdict::ReuseUnchecked(_)
        ));
        assert!(matches!(
            print.judge(None, false),
            CacheVerdict::Recompute(_)
        ));
    }

    #[test]
    fn a_pivot_teacher_embeds_a_non_pivot_pairs_pivot_segment() {
        let mut c = ParallelCorpus::default();
        let (de, fr, en) = (
            c.language_id("deu"),
            c.language_id("fra"),
            c.language_id("eng"),
        );
        c.push(
            "Am Anfang".into(),
            "In the beginning".into(),
            de,
            en,
            Some(0),
        );
        c.push_non_pivot(
            ("Am Anfang".into(), de),
            ("Au commencement".into(), fr),
            "In the beginning".into(),
            0,
        );
        let texts = |side| -> Vec<&str> { c.pairs.iter().map(|p| target_text(side, p)).collect() };
        assert_eq!(
            texts(TeacherSide::Target),
            ["In the beginning", "In the beginning"]
        );
        assert_eq!(
            texts(TeacherSide::Both),
            ["In the beginning", "Au commencement"]
        );
    }

    #[test]
    fn teacher_rows_follow_the_pairs_and_each_distinct_text_is_embedded_once() {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = ["b", "a", "b", "cc", "a", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut calls: Vec<String> = Vec::new();
        let path = dir.path().join("cache.npy");
        let scratch = dir.path().join("cache.distinct.npy");
        write_embeddings_of_distinct(
            &texts,
            2,
            &path,
            &scratch,
            &ProgressBar::hidden(),
            &mut |chunk| {
                calls.extend(chunk.iter().map(|s| s.to_string()));
                Ok(chunk
                    .iter()
                    .flat_map(|s| [s.len() as f32, s.as_bytes()[0] as f32])
                    .collect())
            },
        )
        .unwrap();
        assert_eq!(calls, ["b", "a", "cc"]);
        let m = NpyMatrix::open(&path).unwrap();
        assert_eq!(m.rows, texts.len());
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(
                m.row(i),
                vec![t.len() as f32, t.as_bytes()[0] as f32],
                "row {i}"
            );
        }
        assert!(!scratch.exists());
    }

    /// The bank draws real rows of the embedded side, the same ones for the same seed,
    /// other ones for another seed, and every row once when it asks for the whole cache.
    #[test]
    fn the_bank_draws_rows_of_the_embedded_side_by_seed() {
        let dir = tempfile::tempdir().unwrap();
        let (rows, cols) = (50usize, 3usize);
        let values: Vec<f32> = (0..rows * cols).map(|v| v as f32).collect();
        let path = dir.path().join("teacher-target.npy");
        crate::io::npy::write_f32(&path, rows, cols, &values).unwrap();
        let cache = TeacherCache {
            source: None,
            target: Some(NpyMatrix::open(&path).unwrap()),
            dim: cols,
        };
        let draw = |n: usize, seed: u64| -> Vec<f32> {
            let t = cache.bank(n, seed, Device::Cpu).unwrap();
            assert_eq!(t.size(), vec![n.min(rows) as i64, cols as i64]);
            Vec::<f32>::try_from(t.flatten(0, -1)).unwrap()
        };
        let a = draw(8, 1);
        for row in a.chunks(cols) {
            // Row r holds 3r, 3r+1, 3r+2.
            assert_eq!(row[0] % 3.0, 0.0);
            assert!((row[0] as usize) < rows * cols);
            assert_eq!(row[1], row[0] + 1.0);
        }
        assert_eq!(a, draw(8, 1));
        assert_ne!(a, draw(8, 2));
        assert_eq!(draw(60, 3), values);
        let none = TeacherCache {
            source: None,
            target: None,
            dim: 0,
        };
        assert!(none.bank(4, 1, Device::Cpu).is_none());
    }
}
