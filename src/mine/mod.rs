//! Bitext mining over two embedded corpora, in LASER's three steps:
//! 1. search: exact k-NN both ways ([`knn`]),
//! 2. score: margin of each candidate against both neighbourhoods ([`margin`]),
//! 3. mine: pick pairs by a retrieval strategy, threshold, de-duplicate ([`candidates`]).

pub mod ann;
pub mod bitext;
pub mod candidates;
pub mod knn;
pub mod locality;
pub mod margin;
pub mod matrix;
pub mod quantized;
pub mod tile_gemm;
pub mod topk_cpu;

use std::collections::HashMap;

pub use crate::deadline::Deadline;
pub use candidates::{Retrieval, ScoredPair};
pub use knn::{KnnOptions, SearchKernel, knn, knn_both_ways};
pub use margin::Margin;
pub use matrix::{MatrixView, Neighbours};

use crate::error::Result;

/// Options of [`mine`], with LASER's defaults (k 4, ratio margin, max retrieval).
#[derive(Clone, Debug)]
pub struct MineOptions {
    pub knn: KnnOptions,
    pub margin: Margin,
    pub retrieval: Retrieval,
    /// Keep pairs scoring strictly above this.
    pub threshold: Option<f32>,
    /// Use each source and each target sentence at most once (implied by `max`).
    pub one_to_one: bool,
    /// Approximate shortlist (binary / int8 codes) before exact float rescoring.
    pub quantization: quantized::Quantization,
    /// Shortlist size as a multiple of k.
    pub rescore: usize,
    /// Approximate search through HNSW graphs (then exact float scores of what they
    /// return); not together with `quantization`.
    pub ann: Option<ann::HnswOptions>,
    /// Queries per direction on which approximate search is checked against exact search.
    pub recall_sample: usize,
}

impl Default for MineOptions {
    fn default() -> Self {
        Self {
            knn: KnnOptions::new(4),
            margin: Margin::Ratio,
            retrieval: Retrieval::Max,
            threshold: None,
            one_to_one: false,
            quantization: quantized::Quantization::None,
            rescore: 10,
            ann: None,
            recall_sample: 1000,
        }
    }
}

/// Everything the search found, for callers that need more than the pairs (evaluation).
pub struct MiningResult {
    pub forward: Neighbours,
    pub backward: Neighbours,
    pub pairs: Vec<ScoredPair>,
    /// For approximate search: what was measured against exact search.
    pub approximation: Option<ApproximationReport>,
    /// Wall seconds of the neighbour search alone (both directions; graph or code building
    /// included, recall sampling and margin scoring not).
    pub search_seconds: f64,
}

/// Quality and size of an approximate search, measured by the search itself.
#[derive(Clone, Debug, PartialEq)]
pub struct ApproximationReport {
    /// Queries per direction compared with exact search.
    pub sampled: usize,
    pub recall_forward: f64,
    pub recall_backward: f64,
    /// Bytes of the search structures: the codes of both matrices (quantised search;
    /// float32 would take 4 x rows x dim) or both HNSW graphs with their vectors.
    pub index_bytes: usize,
}

/// Every `n / count`-th row (deterministic sample).
fn sample_rows(n: usize, count: usize) -> Vec<usize> {
    let step = n.div_ceil(count.max(1)).max(1);
    (0..n).step_by(step).collect()
}

/// Recall@k of `approx` (neighbours of `x`'s rows in `y`) against exact search on a sample.
fn sampled_recall(
    x: &MatrixView,
    y: &MatrixView,
    approx: &Neighbours,
    count: usize,
    knn_options: &KnnOptions,
) -> Result<(usize, f64)> {
    let rows = sample_rows(x.rows, count);
    let data: Vec<f32> = rows
        .iter()
        .flat_map(|&i| x.row(i).iter().copied())
        .collect();
    let sub = MatrixView::new(&data, rows.len(), x.cols)?;
    let exact = knn(
        &sub,
        y,
        &KnnOptions {
            k: approx.k,
            ..knn_options.clone()
        },
    )?;
    let approx_sub = Neighbours {
        k: approx.k,
        scores: rows
            .iter()
            .flat_map(|&i| approx.scores_of(i).iter().copied())
            .collect(),
        indices: rows
            .iter()
            .flat_map(|&i| approx.indices_of(i).iter().copied())
            .collect(),
    };
    let all: Vec<usize> = (0..rows.len()).collect();
    Ok((
        rows.len(),
        quantized::recall_at_k(&approx_sub, &exact, &all),
    ))
}

/// Mines pairs between source rows `x` and target rows `y` (L2-normalised embeddings).
pub fn mine(x: &MatrixView, y: &MatrixView, options: &MineOptions) -> Result<MiningResult> {
    mine_with_progress(x, y, options, &mut |_, _| {})
}

/// [`mine`] with a progress callback for the exact search.
pub fn mine_with_progress(
    x: &MatrixView,
    y: &MatrixView,
    options: &MineOptions,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<MiningResult> {
    if options.ann.is_some() && options.quantization != quantized::Quantization::None {
        return Err(crate::error::LaseError::InvalidArgument(
            "choose one approximate search: an HNSW graph or a quantised shortlist".into(),
        ));
    }
    let threads = tch::get_num_threads().max(1) as usize;
    let approximate = |f: &Neighbours, b: &Neighbours, index_bytes: usize| -> Result<_> {
        let (sampled, recall_forward) =
            sampled_recall(x, y, f, options.recall_sample, &options.knn)?;
        let (_, recall_backward) = sampled_recall(y, x, b, options.recall_sample, &options.knn)?;
        Ok(ApproximationReport {
            sampled,
            recall_forward,
            recall_backward,
            index_bytes,
        })
    };
    let start = std::time::Instant::now();
    let (forward, backward, index_bytes) = match (&options.ann, options.quantization) {
        (Some(hnsw), _) => {
            knn::validate_pair(x, y)?;
            let (f, b, bytes) = ann::knn_both_ways_hnsw(x, y, options.knn.k, hnsw, threads)?;
            (f, b, Some(bytes))
        }
        (None, quantized::Quantization::None) => {
            let (f, b) = knn::knn_both_ways_with_progress(x, y, &options.knn, progress)?;
            (f, b, None)
        }
        (None, q) => {
            knn::validate_pair(x, y)?;
            let (f, b, code_bytes) = quantized::knn_both_ways_quantized(
                x,
                y,
                options.knn.k,
                q,
                options.rescore,
                threads,
            );
            (f, b, Some(code_bytes))
        }
    };
    let search_seconds = start.elapsed().as_secs_f64();
    let approximation = index_bytes
        .map(|bytes| approximate(&forward, &backward, bytes))
        .transpose()?;
    let pairs = mine_from_neighbours(&forward, &backward, options);
    Ok(MiningResult {
        forward,
        backward,
        pairs,
        approximation,
        search_seconds,
    })
}

/// Steps 2 and 3 on neighbour lists already found.
pub fn mine_from_neighbours(
    forward: &Neighbours,
    backward: &Neighbours,
    options: &MineOptions,
) -> Vec<ScoredPair> {
    let x_means = forward.mean_scores();
    let y_means = backward.mean_scores();
    let fwd = candidates::score_candidates(forward, &x_means, &y_means, options.margin);
    let bwd = candidates::score_candidates(backward, &y_means, &x_means, options.margin);
    let mut pairs = candidates::retrieve(&fwd, &bwd, options.retrieval);
    if options.one_to_one && options.retrieval != Retrieval::Max {
        pairs = candidates::one_to_one(pairs);
    }
    if let Some(t) = options.threshold {
        pairs.retain(|p| p.score > t);
    }
    pairs
}

/// Unique sentences in first-occurrence order, and for each unique sentence the line
/// (0-based) where it first occurs (LASER's `--unify`).
pub fn unify(lines: &[String]) -> (Vec<String>, Vec<usize>) {
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut unique = Vec::new();
    let mut origin = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !first.contains_key(line.as_str()) {
            first.insert(line, unique.len());
            unique.push(line.clone());
            origin.push(i);
        }
    }
    (unique, origin)
}

/// Scales each `dim`-wide row of `values` to unit L2 norm (rows of zeros stay zero).
pub fn normalize_rows(values: &mut [f32], dim: usize) {
    for row in values.chunks_exact_mut(dim.max(1)) {
        let n = row.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        row.iter_mut().for_each(|v| *v /= n);
    }
}

/// Whether a row's L2 norm is off 1 by more than 1e-3 (the check before a search).
pub fn off_unit_length(row: &[f32]) -> bool {
    let n: f32 = row.iter().map(|v| v * v).sum::<f32>().sqrt();
    (n - 1.0).abs() > 1e-3
}

/// Checks that rows are unit vectors; returns a normalised copy when they are not.
pub fn normalized_copy_if_needed(m: &MatrixView) -> Option<Vec<f32>> {
    let off = (0..m.rows).any(|i| off_unit_length(m.row(i)));
    off.then(|| {
        let mut out = m.data.to_vec();
        normalize_rows(&mut out, m.cols);
        out
    })
}
