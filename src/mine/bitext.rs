//! Mining parallel sentences from two text files: read (optionally unify) the sentences,
//! embed them with a model or take precomputed `.npy` embeddings, mine, and write
//! `score<TAB>src<TAB>tgt` sorted by score.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{MatrixView, MineOptions, ScoredPair, knn, normalized_copy_if_needed, unify};
use crate::error::{LaseError, Result};
use crate::inference::{EncodeOptions, embed_with_progress, progress_bar};
use crate::io::atomic::AtomicFile;
use crate::io::npy::NpyMatrix;
use crate::io::text::read_lines;
use crate::model::SentenceEncoder;

/// Where sentence vectors come from.
pub enum EmbeddingSource<'a> {
    /// Embed the sentences with this model.
    Model(&'a SentenceEncoder, EncodeOptions),
    /// Precomputed float32 `.npy` files, one row per line of the source and target files.
    Precomputed { src: PathBuf, tgt: PathBuf },
}

/// A mined sentence pair with its 0-based line numbers in the input files.
#[derive(Clone, Debug, PartialEq)]
pub struct MinedBitext {
    pub score: f32,
    pub src_line: usize,
    pub tgt_line: usize,
    pub src: String,
    pub tgt: String,
}

/// Sentences of one side, after optional unification.
struct Side {
    sentences: Vec<String>,
    /// Input line of each kept sentence.
    lines: Vec<usize>,
    vectors: Vec<f32>,
}

fn load_side(
    path: &Path,
    source: &EmbeddingSource,
    npy: Option<&Path>,
    unify_lines: bool,
    label: &str,
    show: bool,
) -> Result<Side> {
    let all = read_lines(path)?;
    let line_count = all.len();
    let (sentences, lines) = if unify_lines {
        unify(&all)
    } else {
        let n = all.len();
        (all, (0..n).collect())
    };
    let vectors = match (source, npy) {
        (EmbeddingSource::Model(encoder, options), _) => {
            embed_with_progress(encoder, &sentences, options, label, show)?
        }
        (EmbeddingSource::Precomputed { .. }, Some(npy)) => {
            let m = NpyMatrix::open(npy)?;
            if m.rows != line_count {
                return Err(LaseError::bad_file(
                    npy,
                    format!(
                        "has {} rows but {} has {line_count} lines",
                        m.rows,
                        path.display()
                    ),
                ));
            }
            let values = m.values();
            if let Some(at) = values.iter().position(|v| !v.is_finite()) {
                let row = at / m.cols.max(1);
                return Err(LaseError::bad_file(
                    npy,
                    format!(
                        "row {row} (0-based; line {} of {}) holds a non-finite value (NaN or inf)",
                        row + 1,
                        path.display()
                    ),
                ));
            }
            let mut out = Vec::with_capacity(lines.len() * m.cols);
            for &l in &lines {
                out.extend_from_slice(&values[l * m.cols..(l + 1) * m.cols]);
            }
            out
        }
        (EmbeddingSource::Precomputed { .. }, None) => {
            unreachable!("paths passed with Precomputed")
        }
    };
    Ok(Side {
        sentences,
        lines,
        vectors,
    })
}

/// What [`mine_files`] found, with what the search measured of itself.
pub struct MinedFiles {
    pub pairs: Vec<MinedBitext>,
    /// For approximate search: recall against exact search on sampled queries.
    pub approximation: Option<super::ApproximationReport>,
    /// Wall seconds of the neighbour search alone (not reading, embedding or scoring).
    pub search_seconds: f64,
}

/// Mines `src` against `tgt` (text files, one sentence per line).
pub fn mine_files(
    src: &Path,
    tgt: &Path,
    source: &EmbeddingSource,
    options: &MineOptions,
    unify_lines: bool,
    show_progress: bool,
) -> Result<MinedFiles> {
    let (src_npy, tgt_npy) = match source {
        EmbeddingSource::Precomputed { src, tgt } => (Some(src.as_path()), Some(tgt.as_path())),
        EmbeddingSource::Model(..) => (None, None),
    };
    let x = load_side(
        src,
        source,
        src_npy,
        unify_lines,
        "embedding source",
        show_progress,
    )?;
    let y = load_side(
        tgt,
        source,
        tgt_npy,
        unify_lines,
        "embedding target",
        show_progress,
    )?;
    let dim_x = x.vectors.len() / x.sentences.len().max(1);
    let dim_y = y.vectors.len() / y.sentences.len().max(1);
    if let (Some(a), Some(b)) = (src_npy, tgt_npy)
        && dim_x != dim_y
        && !x.sentences.is_empty()
        && !y.sentences.is_empty()
    {
        return Err(LaseError::InvalidArgument(format!(
            "{} holds {dim_x}-d vectors but {} holds {dim_y}-d vectors: embed both sides with one model",
            a.display(),
            b.display()
        )));
    }
    let xv = MatrixView::new(&x.vectors, x.sentences.len(), dim_x)?;
    let yv = MatrixView::new(&y.vectors, y.sentences.len(), dim_y)?;
    knn::validate_pair(&xv, &yv)?;
    let x_unit = normalized_copy_if_needed(&xv);
    let y_unit = normalized_copy_if_needed(&yv);
    if x_unit.is_some() || y_unit.is_some() {
        tracing::warn!("embeddings are not unit length; mining on L2-normalised copies");
    }
    let xv = x_unit
        .as_deref()
        .map_or(Ok(xv), |d| MatrixView::new(d, xv.rows, xv.cols))?;
    let yv = y_unit
        .as_deref()
        .map_or(Ok(yv), |d| MatrixView::new(d, yv.rows, yv.cols))?;

    let bar = progress_bar(show_progress, 1, "searching");
    let result = super::mine_with_progress(&xv, &yv, options, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64)
    })?;
    bar.finish_and_clear();
    let mined = result
        .pairs
        .into_iter()
        .map(|ScoredPair { score, src, tgt }| MinedBitext {
            score,
            src_line: x.lines[src],
            tgt_line: y.lines[tgt],
            src: x.sentences[src].clone(),
            tgt: y.sentences[tgt].clone(),
        })
        .collect();
    Ok(MinedFiles {
        pairs: mined,
        approximation: result.approximation,
        search_seconds: result.search_seconds,
    })
}

/// Writes `score<TAB>src<TAB>tgt` lines (plus `<TAB>src_line<TAB>tgt_line`, 0-based, with
/// `with_lines`) atomically.
pub fn write_pairs_tsv(path: &Path, pairs: &[MinedBitext], with_lines: bool) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    for p in pairs {
        let r = if with_lines {
            writeln!(
                f,
                "{:.6}\t{}\t{}\t{}\t{}",
                p.score, p.src, p.tgt, p.src_line, p.tgt_line
            )
        } else {
            writeln!(f, "{:.6}\t{}\t{}", p.score, p.src, p.tgt)
        };
        r.map_err(|e| LaseError::io(path, e))?;
    }
    f.commit()
}

/// Mined pairs scored against known translation pairs.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GoldScores {
    pub mined: usize,
    pub gold: usize,
    /// Mined pairs that are gold pairs.
    pub correct: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    /// The `--threshold` (pairs scoring above it are kept) with the best F1 on these gold
    /// pairs, and its precision, recall and F1: an oracle for this data, to calibrate a
    /// model on a held-out split, not a result.
    pub best_threshold: f32,
    pub best_precision: f64,
    pub best_recall: f64,
    pub best_f1: f64,
}

/// Reads gold pairs, `src<TAB>tgt` per line (plain or .gz); a line without exactly one
/// tab is an error naming the file and line.
pub fn read_gold_pairs(path: &Path) -> Result<std::collections::HashSet<(String, String)>> {
    let mut gold = std::collections::HashSet::new();
    for (i, line) in read_lines(path)?.into_iter().enumerate() {
        if line.is_empty() {
            continue;
        }
        let mut fields = line.split('\t');
        match (fields.next(), fields.next(), fields.next()) {
            (Some(s), Some(t), None) => {
                gold.insert((s.trim().to_owned(), t.trim().to_owned()));
            }
            _ => {
                return Err(LaseError::bad_line(
                    path,
                    i + 1,
                    "expected source<TAB>target",
                ));
            }
        }
    }
    Ok(gold)
}

/// The cut of a scored pair list with the best F1: everything scoring >= `score` is kept;
/// `next` is the highest score below the cut (None when the cut keeps every pair).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BestCut {
    pub score: f32,
    pub next: Option<f32>,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

/// Best F1 over the cuts between distinct scores (a tie is never split). `scored` holds
/// each mined pair's score and whether it is gold; `gold` counts all gold pairs. None
/// when no cut has a positive F1.
pub fn best_f1_cut(scored: &[(f32, bool)], gold: usize) -> Option<BestCut> {
    let mut sorted = scored.to_vec();
    sorted.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut best: Option<BestCut> = None;
    let mut tp = 0usize;
    for (i, &(score, ok)) in sorted.iter().enumerate() {
        tp += ok as usize;
        let next = sorted.get(i + 1).map(|n| n.0);
        if next == Some(score) {
            continue;
        }
        let precision = tp as f64 / (i + 1) as f64;
        let recall = tp as f64 / gold.max(1) as f64;
        let f1 = f1_score(precision, recall);
        if f1 > best.map_or(0.0, |b| b.f1) {
            best = Some(BestCut {
                score,
                next,
                precision,
                recall,
                f1,
            });
        }
    }
    best
}

fn f1_score(precision: f64, recall: f64) -> f64 {
    if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    }
}

/// Precision (correct / mined), recall (correct / gold) and F1 of `pairs` against `gold`
/// (compared as trimmed texts).
pub fn score_against_gold(
    pairs: &[MinedBitext],
    gold: &std::collections::HashSet<(String, String)>,
) -> GoldScores {
    let is_gold: Vec<(f32, bool)> = pairs
        .iter()
        .map(|p| {
            let key = (p.src.trim().to_owned(), p.tgt.trim().to_owned());
            (p.score, gold.contains(&key))
        })
        .collect();
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    let correct = is_gold.iter().filter(|g| g.1).count();
    let (precision, recall) = (ratio(correct, pairs.len()), ratio(correct, gold.len()));
    // `lase mine --threshold t` keeps scores > t: put t between the cut and the next score.
    let best = best_f1_cut(&is_gold, gold.len()).map_or((f32::INFINITY, 0.0, 0.0, 0.0), |c| {
        let threshold = c.next.map_or(c.score - c.score.abs() * 1e-6 - 1e-6, |n| {
            (c.score + n) / 2.0
        });
        (threshold, c.precision, c.recall, c.f1)
    });
    GoldScores {
        mined: pairs.len(),
        gold: gold.len(),
        correct,
        precision,
        recall,
        f1: f1_score(precision, recall),
        best_threshold: best.0,
        best_precision: best.1,
        best_recall: best.2,
        best_f1: best.3,
    }
}
