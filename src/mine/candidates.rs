//! Turning scored candidates into pairs, as LASER's mine_bitexts.py: `fwd` takes each
//! source's best target, `bwd` each target's best source, `intersect` the pairs both
//! directions agree on, and `max` the union of both, taken greedily by score so that no
//! sentence is used twice.

use std::collections::HashSet;
use std::str::FromStr;

use super::margin::Margin;
use super::matrix::Neighbours;

/// Which candidates become pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Retrieval {
    Forward,
    Backward,
    #[default]
    Max,
    Intersect,
}

impl FromStr for Retrieval {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fwd" => Ok(Self::Forward),
            "bwd" => Ok(Self::Backward),
            "max" => Ok(Self::Max),
            "intersect" => Ok(Self::Intersect),
            other => Err(format!(
                "unknown retrieval {other:?} (fwd, bwd, max, intersect)"
            )),
        }
    }
}

/// A mined pair: margin score, source row, target row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoredPair {
    pub score: f32,
    pub src: usize,
    pub tgt: usize,
}

/// Margin scores of each query's k candidates [n x k] and the best candidate.
pub struct ScoredCandidates {
    pub scores: Vec<f32>,
    pub best: Vec<(f32, usize)>,
}

/// Scores the candidates of `queries` (neighbours in the other corpus) with `margin`;
/// `query_means[i]` and `other_means[j]` are the mean k-NN cosines of each side.
pub fn score_candidates(
    queries: &Neighbours,
    query_means: &[f32],
    other_means: &[f32],
    margin: Margin,
) -> ScoredCandidates {
    let k = queries.k;
    let mut scores = Vec::with_capacity(queries.scores.len());
    let mut best = Vec::with_capacity(queries.len());
    for (i, &query_mean) in query_means.iter().enumerate().take(queries.len()) {
        let mut top = (f32::NEG_INFINITY, 0usize);
        for (&cos, &j) in queries.scores_of(i).iter().zip(queries.indices_of(i)) {
            let s = margin.score(cos, query_mean, other_means[j as usize]);
            scores.push(s);
            if s > top.0 {
                top = (s, j as usize);
            }
        }
        debug_assert_eq!(scores.len(), (i + 1) * k);
        best.push(top);
    }
    ScoredCandidates { scores, best }
}

/// Pairs from forward (source -> target) and backward (target -> source) best candidates,
/// sorted by score (descending; ties by source then target row).
pub fn retrieve(
    forward: &ScoredCandidates,
    backward: &ScoredCandidates,
    retrieval: Retrieval,
) -> Vec<ScoredPair> {
    let fwd = || {
        forward
            .best
            .iter()
            .enumerate()
            .map(|(src, &(score, tgt))| ScoredPair { score, src, tgt })
    };
    let bwd = || {
        backward
            .best
            .iter()
            .enumerate()
            .map(|(tgt, &(score, src))| ScoredPair { score, src, tgt })
    };
    let mut pairs: Vec<ScoredPair> = match retrieval {
        Retrieval::Forward => fwd().collect(),
        Retrieval::Backward => bwd().collect(),
        Retrieval::Intersect => fwd().filter(|p| backward.best[p.tgt].1 == p.src).collect(),
        Retrieval::Max => {
            let mut all: Vec<ScoredPair> = fwd().chain(bwd()).collect();
            sort_by_score(&mut all);
            return one_to_one(all);
        }
    };
    sort_by_score(&mut pairs);
    pairs
}

/// Sorts by descending score; ties by source row, then target row (deterministic).
pub fn sort_by_score(pairs: &mut [ScoredPair]) {
    pairs.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.src.cmp(&b.src))
            .then(a.tgt.cmp(&b.tgt))
    });
}

/// Keeps, in order, each pair whose source and target are both still unused.
pub fn one_to_one(sorted: Vec<ScoredPair>) -> Vec<ScoredPair> {
    let mut seen_src = HashSet::new();
    let mut seen_tgt = HashSet::new();
    sorted
        .into_iter()
        .filter(|p| {
            if seen_src.contains(&p.src) || seen_tgt.contains(&p.tgt) {
                return false;
            }
            seen_src.insert(p.src);
            seen_tgt.insert(p.tgt);
            true
        })
        .collect()
}
