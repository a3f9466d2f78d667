//! Bitext retrieval metrics on aligned embeddings (row i of X translates row i of Y):
//! - P@1: the nearest neighbour by cosine is the translation (LASER's Tatoeba similarity
//!   search; LaBSE, LEALLA and EMS report it per direction);
//! - xSIM error (LASER's xsim.py): among each query's k = 4 nearest neighbours, take the
//!   one with the best ratio margin; the error rate is the share that is not the gold
//!   translation.
//!
//! As in xsim.py with `eval_text`, a prediction whose text equals the gold translation's
//! text counts as correct (test sets repeat sentences).

use serde::Serialize;

use crate::error::{LaseError, Result};
use crate::mine::candidates::score_candidates;
use crate::mine::{KnnOptions, Margin, MatrixView, Neighbours, knn_both_ways};

/// Neighbours considered by xSIM's margin (LASER's default).
pub const XSIM_K: usize = 4;

/// Both directions' scores for one aligned test set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RetrievalScores {
    /// Pairs evaluated.
    pub pairs: usize,
    /// P@1 searching X's rows among Y (e.g. xx -> en).
    pub p_at_1_xy: f64,
    /// P@1 searching Y's rows among X (e.g. en -> xx).
    pub p_at_1_yx: f64,
    /// xSIM error rate, X -> Y.
    pub xsim_error_xy: f64,
    /// xSIM error rate, Y -> X.
    pub xsim_error_yx: f64,
}

impl RetrievalScores {
    /// Mean P@1 of the two directions.
    pub fn p_at_1(&self) -> f64 {
        (self.p_at_1_xy + self.p_at_1_yx) / 2.0
    }
}

fn correct(predicted: usize, gold: usize, texts: Option<&[String]>) -> bool {
    predicted == gold || texts.is_some_and(|t| t[predicted] == t[gold])
}

fn direction_scores(
    nn: &Neighbours,
    query_means: &[f32],
    other_means: &[f32],
    other_texts: Option<&[String]>,
) -> (f64, f64) {
    let n = nn.len();
    let p1 = (0..n)
        .filter(|&i| correct(nn.indices_of(i)[0] as usize, i, other_texts))
        .count();
    let margin = score_candidates(nn, query_means, other_means, Margin::Ratio);
    let xsim_errors = margin
        .best
        .iter()
        .enumerate()
        .filter(|&(i, &(_, j))| !correct(j, i, other_texts))
        .count();
    (p1 as f64 / n as f64, xsim_errors as f64 / n as f64)
}

/// Scores aligned embeddings `x`, `y` (L2-normalised). `texts` = (X's sentences, Y's
/// sentences) lets identical sentences count as correct.
pub fn bitext_retrieval(
    x: &MatrixView,
    y: &MatrixView,
    texts: Option<(&[String], &[String])>,
) -> Result<RetrievalScores> {
    if x.rows != y.rows {
        return Err(LaseError::InvalidArgument(format!(
            "aligned test set needs as many source as target rows ({} vs {})",
            x.rows, y.rows
        )));
    }
    let (fwd, bwd) = knn_both_ways(x, y, &KnnOptions::new(XSIM_K))?;
    let (fwd_means, bwd_means) = (fwd.mean_scores(), bwd.mean_scores());
    let (p1_xy, xsim_xy) = direction_scores(&fwd, &fwd_means, &bwd_means, texts.map(|t| t.1));
    let (p1_yx, xsim_yx) = direction_scores(&bwd, &bwd_means, &fwd_means, texts.map(|t| t.0));
    Ok(RetrievalScores {
        pairs: x.rows,
        p_at_1_xy: p1_xy,
        p_at_1_yx: p1_yx,
        xsim_error_xy: xsim_xy,
        xsim_error_yx: xsim_yx,
    })
}
