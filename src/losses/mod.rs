//! Training losses, one per file, each with its equation and source in the doc comment
//! (notation of ../shared/docs/methods.md: a batch holds N pairs (x_i, y_i), s(a, b) is
//! cosine similarity). Every loss takes embeddings (not models), so gradient caching can
//! run it on cached vectors, and returns a scalar tensor.

pub mod additive_margin;
pub mod bottleneck_alignment;
pub mod ems_contrastive;
pub mod feature_distillation;
pub mod info_nce;
pub mod logit_distillation;
pub mod mcl;
pub mod mse_distillation;
pub mod registry;
pub mod simcse;
pub mod soft_contrastive;
pub mod teacher_bank;
pub mod term;
pub mod triplet;
pub mod xtr;

pub use additive_margin::additive_margin_softmax;
pub use bottleneck_alignment::bottleneck_alignment;
pub use ems_contrastive::{EmsContrastive, EmsContrastiveConfig};
pub use feature_distillation::FeatureDistillation;
pub use info_nce::bidirectional_info_nce;
pub use logit_distillation::logit_distillation;
pub use mcl::mcl;
pub use mse_distillation::mse_distillation;
pub use simcse::simcse;
pub use soft_contrastive::{
    SoftLabel, TeacherVectors, soft_contrastive, soft_contrastive_tcm, soft_labels,
};
pub use teacher_bank::teacher_bank_info_nce;
pub use triplet::{TripletDistance, hardest_in_batch_negatives, triplet};
pub use xtr::{Xtr, XtrConfig, bag_of_tokens};

use tch::{Kind, Tensor};

/// Cosine similarity matrix S[i, j] = s(x_i, y_j) ([N, d] x [M, d] -> [N, M]).
pub fn cosine_matrix(x: &Tensor, y: &Tensor) -> Tensor {
    let xn = crate::model::sentence_encoder::l2_normalize(x);
    let yn = crate::model::sentence_encoder::l2_normalize(y);
    xn.matmul(&yn.transpose(0, 1))
}

/// (1/N) Σ_i [ CE(row i of `logits`, i) + CE(column i of `logits`, i) ]: cross-entropy
/// with the diagonal as the target, in both retrieval directions (x -> y and y -> x).
pub(crate) fn bidirectional_diagonal_cross_entropy(logits: &Tensor) -> Tensor {
    let n = logits.size()[0];
    let targets = Tensor::arange(n, (Kind::Int64, logits.device()));
    let rows = diagonal_cross_entropy(logits, &targets);
    let cols = diagonal_cross_entropy(&logits.transpose(0, 1), &targets);
    rows + cols
}

/// Mean cross-entropy of rows of `logits` against `targets`, in the logits' precision
/// (tch's `cross_entropy_for_logits` always computes in float32).
pub(crate) fn diagonal_cross_entropy(logits: &Tensor, targets: &Tensor) -> Tensor {
    logits.log_softmax(-1, logits.kind()).nll_loss(targets)
}

#[cfg(test)]
pub(crate) mod reference {
    //! Plain-f64 reimplementations used as hand computations in the value tests.

    pub fn cos(a: &[f64], b: &[f64]) -> f64 {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let na: f64 = a.iter().map(|x| x * x).sum::<f64>().sqrt();
        let nb: f64 = b.iter().map(|x| x * x).sum::<f64>().sqrt();
        dot / (na * nb)
    }

    /// -log( e^{l[t]} / Σ_j e^{l[j]} ).
    pub fn ce(logits: &[f64], target: usize) -> f64 {
        let lse = logits.iter().map(|l| l.exp()).sum::<f64>().ln();
        lse - logits[target]
    }

    pub fn rows(t: &tch::Tensor) -> Vec<Vec<f64>> {
        let t = t.to_kind(tch::Kind::Double);
        let (n, d) = (t.size()[0], t.size()[1]);
        (0..n)
            .map(|i| (0..d).map(|j| t.double_value(&[i, j])).collect())
            .collect()
    }

    pub fn tensor(rows: &[Vec<f64>]) -> tch::Tensor {
        let n = rows.len() as i64;
        let d = rows[0].len() as i64;
        let flat: Vec<f64> = rows.iter().flatten().copied().collect();
        tch::Tensor::from_slice(&flat).reshape([n, d])
    }

    pub fn fixed_embeddings(n: usize, d: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = crate::rng::SplitMix64::new(seed);
        (0..n)
            .map(|_| (0..d).map(|_| rng.next_f64() * 2.0 - 1.0).collect())
            .collect()
    }
}
