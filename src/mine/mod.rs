//! Bitext mining over two embedded corpora, in LASER's three steps:
//! 1. search: exact k-NN both ways ([`knn`]),
//! 2. score: margin of each candidate against both neighbourhoods ([`margin`]),
//! 3. mine: pick pairs by a retrieval strategy, threshold, de-duplicate ([`retrieval`]).

pub mod bitext;
pub mod knn;
pub mod margin;
pub mod retrieval;
pub mod topk_cpu;

use std::collections::HashMap;

pub use knn::{KnnOptions, MatrixView, Neighbours, SearchKernel, knn, knn_both_ways};
pub use margin::Margin;
pub use retrieval::{Retrieval, ScoredPair};

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
}

impl Default for MineOptions {
    fn default() -> Self {
        Self {
            knn: KnnOptions::new(4),
            margin: Margin::Ratio,
            retrieval: Retrieval::Max,
            threshold: None,
            one_to_one: false,
        }
    }
}

/// Everything the search found, for callers that need more than the pairs (evaluation).
pub struct MiningResult {
    pub forward: Neighbours,
    pub backward: Neighbours,
    pub pairs: Vec<ScoredPair>,
}

/// Mines pairs between source rows `x` and target rows `y` (L2-normalised embeddings).
pub fn mine(x: &MatrixView, y: &MatrixView, options: &MineOptions) -> Result<MiningResult> {
    let (forward, backward) = knn_both_ways(x, y, &options.knn)?;
    let pairs = mine_from_neighbours(&forward, &backward, options);
    Ok(MiningResult {
        forward,
        backward,
        pairs,
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
    let fwd = retrieval::score_candidates(forward, &x_means, &y_means, options.margin);
    let bwd = retrieval::score_candidates(backward, &y_means, &x_means, options.margin);
    let mut pairs = retrieval::retrieve(&fwd, &bwd, options.retrieval);
    if options.one_to_one && options.retrieval != Retrieval::Max {
        pairs = retrieval::one_to_one(pairs);
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

/// Checks that rows are unit vectors; returns a normalised copy when they are not.
pub fn normalized_copy_if_needed(m: &MatrixView) -> Option<Vec<f32>> {
    let off = (0..m.rows).any(|i| {
        let n: f32 = m.row(i).iter().map(|v| v * v).sum::<f32>().sqrt();
        (n - 1.0).abs() > 1e-3
    });
    off.then(|| {
        let mut out = m.data.to_vec();
        for row in out.chunks_exact_mut(m.cols) {
            let n = row.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            row.iter_mut().for_each(|v| *v /= n);
        }
        out
    })
}
