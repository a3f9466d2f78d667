//! Unsupervised SimCSE (Gao et al. 2021, lecture §SimCSE): the same sentences encoded
//! twice with different dropout masks, h and h', are each other's positives:
//!
//! ```text
//! L = (1/N) Σ_i -log( e^{s(h_i, h'_i)/τ} / Σ_j e^{s(h_i, h'_j)/τ} ),   τ = 0.05
//! ```
//!
//! Recipes select it with `objective.contrastive = "simcse"`, on each side of the pairs
//! separately (src/train/objective.rs).

use tch::{Kind, Tensor};

use super::cosine_matrix;
use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};

/// SimCSE's temperature.
pub const DEFAULT_TEMPERATURE: f64 = 0.05;

/// `first`, `second`: [N, d] embeddings of the same N sentences under two dropout masks.
pub fn simcse(first: &Tensor, second: &Tensor, temperature: f64) -> Tensor {
    let logits = cosine_matrix(first, second) / temperature;
    let n = logits.size()[0];
    super::diagonal_cross_entropy(&logits, &Tensor::arange(n, (Kind::Int64, logits.device())))
}

/// `contrastive = "simcse"` at `simcse_temperature` ([`DEFAULT_TEMPERATURE`]): each
/// side's sentences, encoded a second time under another dropout mask, are their own
/// positives: L = L_simcse(x, x') + L_simcse(y, y').
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SimcseSettings {
    #[serde(default = "SimcseSettings::default_temperature")]
    pub simcse_temperature: f64,
}

impl SimcseSettings {
    fn default_temperature() -> f64 {
        DEFAULT_TEMPERATURE
    }
}

impl Settings for SimcseSettings {
    const SECTION: Section = Section::Objective;
    const KEYS: &'static [&'static str] = &["simcse_temperature"];
    fn check(&self, checks: &mut Checks) {
        checks.positive("objective.simcse_temperature", self.simcse_temperature);
    }
}

impl Term for SimcseSettings {
    fn loss(&self, input: &TermInput) -> Tensor {
        let (x2, y2) = input
            .again
            .expect("SimCSE needs both sides encoded again under another dropout mask");
        let t = self.simcse_temperature;
        simcse(input.x, x2, t) + simcse(input.y, y2, t)
    }
}

pub const TERM: TermSpec = TermSpec::of::<SimcseSettings>(
    "simcse",
    Switch::Contrastive("simcse"),
    term::settings_term::<SimcseSettings>,
)
.needing_second_view();

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn equals_a_hand_computation() {
        let a = fixed_embeddings(3, 5, 7);
        let b = fixed_embeddings(3, 5, 8);
        let t = 0.05;
        let expected: f64 = (0..3)
            .map(|i| {
                let row: Vec<f64> = (0..3).map(|j| cos(&a[i], &b[j]) / t).collect();
                ce(&row, i)
            })
            .sum::<f64>()
            / 3.0;
        let got = simcse(&tensor(&a), &tensor(&b), t).double_value(&[]);
        assert!((got - expected).abs() < 1e-10, "{got} vs {expected}");
    }
}
