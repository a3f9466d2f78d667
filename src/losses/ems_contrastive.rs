//! EMS sentence-level contrastive objective (ems.txt §III-C, Eq. 8-11): bidirectional
//! InfoNCE with temperature T on a two-layer MLP projection of the sentence vectors,
//! used only inside the loss (SimCLR's projection head):
//!
//! ```text
//! h(u) = W1 relu(W2 u + b2) + b1,   W2 ∈ R^{d×d},  W1 ∈ R^{d_cntrs×d}
//! L_cntrs = Σ_{(x_i,y_i)∈B} [ -log( e^{s(h(x_i),h(y_i))/T} / Σ_k e^{s(h(x_i),h(y_k))/T} )
//!                             -log( e^{s(h(y_i),h(x_i))/T} / Σ_k e^{s(h(y_i),h(x_k))/T} ) ]
//! ```
//!
//! The joint EMS loss divides the sum by |B| (Eq. 12), so this returns the batch mean.

use serde::{Deserialize, Serialize};
use tch::{Tensor, nn, nn::Module};

use super::info_nce::bidirectional_info_nce;
use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};

/// Hyperparameters of the EMS contrastive head, ems.txt's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmsContrastiveConfig {
    /// d_cntrs: output width of the projection (128).
    #[serde(default = "EmsContrastiveConfig::default_projection_dim")]
    pub projection_dim: usize,
    /// T (0.1).
    #[serde(default = "EmsContrastiveConfig::default_temperature")]
    pub temperature: f64,
}

impl EmsContrastiveConfig {
    fn default_projection_dim() -> usize {
        128
    }
    fn default_temperature() -> f64 {
        0.1
    }
}

impl Default for EmsContrastiveConfig {
    fn default() -> Self {
        Self {
            projection_dim: Self::default_projection_dim(),
            temperature: Self::default_temperature(),
        }
    }
}

/// The projection head and its loss.
#[derive(Debug)]
pub struct EmsContrastive {
    w2: nn::Linear,
    w1: nn::Linear,
    temperature: f64,
}

impl EmsContrastive {
    /// Parameters live under `path` (`w2`, `w1`); `input_dim` is d.
    pub fn new(path: nn::Path, input_dim: usize, config: &EmsContrastiveConfig) -> Self {
        let d = input_dim as i64;
        Self {
            w2: nn::linear(&path / "w2", d, d, Default::default()),
            w1: nn::linear(
                &path / "w1",
                d,
                config.projection_dim as i64,
                Default::default(),
            ),
            temperature: config.temperature,
        }
    }

    /// h(u) = W1 relu(W2 u + b2) + b1.
    pub fn project(&self, u: &Tensor) -> Tensor {
        self.w1.forward(&self.w2.forward(u).relu())
    }

    /// `u`, `v`: [N, d] sentence vectors of the two sides.
    pub fn loss(&self, u: &Tensor, v: &Tensor) -> Tensor {
        bidirectional_info_nce(&self.project(u), &self.project(v), self.temperature)
    }
}

/// `contrastive = "ems"` with its head's settings in `ems = { ... }`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EmsSettings {
    #[serde(default)]
    pub ems: EmsContrastiveConfig,
}

impl Settings for EmsSettings {
    const SECTION: Section = Section::Objective;
    const KEYS: &'static [&'static str] = &["ems"];
    fn check(&self, checks: &mut Checks) {
        checks.positive("objective.ems.temperature", self.ems.temperature);
        checks.at_least("objective.ems.projection_dim", self.ems.projection_dim, 1);
    }
}

impl Term for EmsContrastive {
    fn loss(&self, input: &TermInput) -> Tensor {
        EmsContrastive::loss(self, input.x, input.y)
    }
}

pub const TERM: TermSpec = TermSpec::of::<EmsSettings>(
    "ems_contrastive",
    Switch::Contrastive("ems"),
    |section, setup| {
        let settings = term::read::<EmsSettings>(section)?;
        Ok(Box::new(EmsContrastive::new(
            setup.path,
            setup.dim,
            &settings.ems,
        )))
    },
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;
    use tch::{Device, Kind};

    #[test]
    fn equals_a_hand_computation() {
        let vs = nn::VarStore::new(Device::Cpu);
        let config = EmsContrastiveConfig {
            projection_dim: 2,
            temperature: 0.1,
        };
        let head = EmsContrastive::new(vs.root(), 3, &config);
        let u = fixed_embeddings(4, 3, 31);
        let v = fixed_embeddings(4, 3, 32);
        let w2 = rows(&head.w2.ws);
        let b2: Vec<f64> =
            Vec::<f64>::try_from(head.w2.bs.as_ref().unwrap().to_kind(Kind::Double)).unwrap();
        let w1 = rows(&head.w1.ws);
        let b1: Vec<f64> =
            Vec::<f64>::try_from(head.w1.bs.as_ref().unwrap().to_kind(Kind::Double)).unwrap();
        let h = |x: &[f64]| -> Vec<f64> {
            let hidden: Vec<f64> = (0..3)
                .map(|r| (b2[r] + (0..3).map(|c| w2[r][c] * x[c]).sum::<f64>()).max(0.0))
                .collect();
            (0..2)
                .map(|r| b1[r] + (0..3).map(|c| w1[r][c] * hidden[c]).sum::<f64>())
                .collect()
        };
        let hu: Vec<Vec<f64>> = u.iter().map(|x| h(x)).collect();
        let hv: Vec<Vec<f64>> = v.iter().map(|x| h(x)).collect();
        let mut expected = 0.0;
        for i in 0..4 {
            let row: Vec<f64> = (0..4).map(|k| cos(&hu[i], &hv[k]) / 0.1).collect();
            let col: Vec<f64> = (0..4).map(|k| cos(&hv[i], &hu[k]) / 0.1).collect();
            expected += ce(&row, i) + ce(&col, i);
        }
        expected /= 4.0;
        let got = head
            .loss(
                &tensor(&u).to_kind(Kind::Float),
                &tensor(&v).to_kind(Kind::Float),
            )
            .double_value(&[]);
        assert!(
            (got - expected).abs() < 1e-4 * expected.abs().max(1.0),
            "{got} vs {expected}"
        );
    }
}
