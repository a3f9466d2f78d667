//! Bidirectional InfoNCE with temperature (van den Oord et al. 2018; the in-batch
//! translation-ranking loss of Guo et al. 2018 / Yang et al. 2019, lecture §contrastive):
//!
//! ```text
//! L = (1/N) Σ_i [ -log( e^{s(x_i,y_i)/T} / Σ_j e^{s(x_i,y_j)/T} )
//!               - log( e^{s(y_i,x_i)/T} / Σ_j e^{s(y_i,x_j)/T} ) ]
//! ```
//!
//! Rows retrieve y from x, columns x from y; every other pair of the batch is a negative.

use tch::Tensor;

use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};
use super::{bidirectional_diagonal_cross_entropy, cosine_matrix};

/// Default temperature T (ems.txt §III-C uses 0.1, as SimCLR).
pub const DEFAULT_TEMPERATURE: f64 = 0.1;

/// `x`, `y`: [N, d] embeddings of the two sides (need not be normalised).
pub fn bidirectional_info_nce(x: &Tensor, y: &Tensor, temperature: f64) -> Tensor {
    bidirectional_diagonal_cross_entropy(&(cosine_matrix(x, y) / temperature))
}

/// `contrastive = "info-nce"` at `temperature` (default [`DEFAULT_TEMPERATURE`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct InfoNceSettings {
    #[serde(default = "InfoNceSettings::default_temperature")]
    pub temperature: f64,
}

impl InfoNceSettings {
    fn default_temperature() -> f64 {
        DEFAULT_TEMPERATURE
    }
}

impl Settings for InfoNceSettings {
    const SECTION: Section = Section::Objective;
    const KEYS: &'static [&'static str] = &["temperature"];
    fn check(&self, checks: &mut Checks) {
        checks.positive("objective.temperature", self.temperature);
    }
}

impl Term for InfoNceSettings {
    fn loss(&self, input: &TermInput) -> Tensor {
        bidirectional_info_nce(input.x, input.y, self.temperature)
    }
}

pub const TERM: TermSpec = TermSpec::of::<InfoNceSettings>(
    "info_nce",
    Switch::Contrastive("info-nce"),
    term::settings_term::<InfoNceSettings>,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn equals_a_hand_computation() {
        let x = fixed_embeddings(4, 3, 1);
        let y = fixed_embeddings(4, 3, 2);
        let t = 0.1;
        let mut expected = 0.0;
        for i in 0..4 {
            let row: Vec<f64> = (0..4).map(|j| cos(&x[i], &y[j]) / t).collect();
            let col: Vec<f64> = (0..4).map(|j| cos(&y[i], &x[j]) / t).collect();
            expected += ce(&row, i) + ce(&col, i);
        }
        expected /= 4.0;
        let got = bidirectional_info_nce(&tensor(&x), &tensor(&y), t).double_value(&[]);
        assert!((got - expected).abs() < 1e-10, "{got} vs {expected}");
    }
}
