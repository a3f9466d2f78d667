//! Triplet loss (Schroff et al. 2015; sentence-transformers' `TripletLoss`):
//!
//! ```text
//! L = (1/N) Σ_i max( d(a_i, p_i) - d(a_i, n_i) + ε, 0 )
//! ```
//!
//! with d the Euclidean distance (margin ε = 5, sentence-transformers' default) or the
//! cosine distance 1 - s(a, b). For translation pairs the negative of x_i is usually the
//! hardest in-batch non-translation ([`hardest_in_batch_negatives`]).

use tch::{Kind, Tensor};

use super::cosine_matrix;
use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};

/// Distance used inside the triplet loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TripletDistance {
    Euclidean,
    Cosine,
}

impl TripletDistance {
    /// sentence-transformers' default margins: 5 (Euclidean); 0.5 is usual for cosine.
    pub fn default_margin(self) -> f64 {
        match self {
            Self::Euclidean => 5.0,
            Self::Cosine => 0.5,
        }
    }

    fn distance(self, a: &Tensor, b: &Tensor) -> Tensor {
        match self {
            Self::Euclidean => (a - b)
                .square()
                .sum_dim_intlist([-1].as_slice(), false, a.kind())
                .sqrt(),
            Self::Cosine => {
                let an = crate::model::sentence_encoder::l2_normalize(a);
                let bn = crate::model::sentence_encoder::l2_normalize(b);
                1.0 - (an * bn).sum_dim_intlist([-1].as_slice(), false, a.kind())
            }
        }
    }
}

/// `anchor`, `positive`, `negative`: [N, d].
pub fn triplet(
    anchor: &Tensor,
    positive: &Tensor,
    negative: &Tensor,
    distance: TripletDistance,
    margin: f64,
) -> Tensor {
    let d_pos = distance.distance(anchor, positive);
    let d_neg = distance.distance(anchor, negative);
    (d_pos - d_neg + margin).relu().mean(anchor.kind())
}

/// For each x_i, the index of the y_j (j ≠ i) most similar to it: the hardest
/// in-batch negative. No gradient flows through the choice.
pub fn hardest_in_batch_negatives(x: &Tensor, y: &Tensor) -> Tensor {
    tch::no_grad(|| {
        let sim = cosine_matrix(x, y);
        let n = sim.size()[0];
        let eye = Tensor::eye(n, (Kind::Bool, sim.device()));
        sim.masked_fill(&eye, f64::NEG_INFINITY).argmax(1, false)
    })
}

/// `contrastive = "triplet"`: the hardest in-batch negative, `triplet_distance` (cosine)
/// and `triplet_margin` (the distance's [default](TripletDistance::default_margin)).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TripletSettings {
    #[serde(default = "TripletSettings::default_distance")]
    pub triplet_distance: TripletDistance,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triplet_margin: Option<f64>,
}

impl TripletSettings {
    fn default_distance() -> TripletDistance {
        TripletDistance::Cosine
    }
}

impl Settings for TripletSettings {
    const SECTION: Section = Section::Objective;
    const KEYS: &'static [&'static str] = &["triplet_distance", "triplet_margin"];
    fn check(&self, checks: &mut Checks) {
        if let Some(v) = self.triplet_margin {
            checks.non_negative("objective.triplet_margin", v);
        }
    }
}

impl Term for TripletSettings {
    fn loss(&self, input: &TermInput) -> Tensor {
        let (x, y) = (input.x, input.y);
        let neg = y.index_select(0, &hardest_in_batch_negatives(x, y));
        let margin = self
            .triplet_margin
            .unwrap_or(self.triplet_distance.default_margin());
        triplet(x, y, &neg, self.triplet_distance, margin)
    }
}

pub const TERM: TermSpec = TermSpec::of::<TripletSettings>(
    "triplet",
    Switch::Contrastive("triplet"),
    term::settings_term::<TripletSettings>,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn equals_a_hand_computation() {
        let a = fixed_embeddings(4, 3, 11);
        let p = fixed_embeddings(4, 3, 12);
        let n = fixed_embeddings(4, 3, 13);
        let dist = |u: &[f64], v: &[f64]| -> f64 {
            u.iter()
                .zip(v)
                .map(|(x, y)| (x - y).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        for (metric, margin) in [
            (TripletDistance::Euclidean, 1.0),
            (TripletDistance::Cosine, 0.5),
        ] {
            let expected: f64 = (0..4)
                .map(|i| {
                    let (dp, dn) = match metric {
                        TripletDistance::Euclidean => (dist(&a[i], &p[i]), dist(&a[i], &n[i])),
                        TripletDistance::Cosine => {
                            (1.0 - cos(&a[i], &p[i]), 1.0 - cos(&a[i], &n[i]))
                        }
                    };
                    (dp - dn + margin).max(0.0)
                })
                .sum::<f64>()
                / 4.0;
            let got =
                triplet(&tensor(&a), &tensor(&p), &tensor(&n), metric, margin).double_value(&[]);
            assert!(
                (got - expected).abs() < 1e-10,
                "{metric:?}: {got} vs {expected}"
            );
        }
    }

    #[test]
    fn hardest_negative_is_never_the_positive() {
        let x = tensor(&fixed_embeddings(6, 4, 5));
        let y = x.copy();
        let hard = hardest_in_batch_negatives(&x, &y);
        for i in 0..6 {
            assert_ne!(hard.int64_value(&[i]), i);
        }
    }
}
