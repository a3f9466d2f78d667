//! Bidirectional additive margin softmax, AMS (Yang et al. 2019; LaBSE, Feng et al.
//! 2022; lealla.txt Eq. 1-2), with a similarity scale `s`:
//!
//! ```text
//! L(x_i, y_i) = -log( e^{s(φ(x_i,y_i) - m)} / ( e^{s(φ(x_i,y_i) - m)} + Σ_{n≠i} e^{s φ(x_i,y_n)} ) )
//! L_ams = (1/N) Σ_i [ L(x_i, y_i) + L(y_i, x_i) ],   φ = cosine similarity
//! ```
//!
//! The margin is subtracted from the positive (diagonal) similarity only. lealla.txt's
//! Eq. 2 has no scale (s = 1: e^{φ - m}); the default s = 10 is EMS's variant (ems.txt
//! §V, LaBSE-EMS-vanilla: margin 0.3, "scaling temperature to 0.1"). Recipes set it with
//! `objective.scale`.

use tch::{Kind, Tensor};

use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};
use super::{bidirectional_diagonal_cross_entropy, cosine_matrix};

/// Margin m used by ems.txt's AMS comparison (LaBSE: 0.3).
pub const DEFAULT_MARGIN: f64 = 0.3;
/// EMS's variant: s = 1/T with T = 0.1 (ems.txt §V, LaBSE-EMS-vanilla), the default of
/// `objective.scale`.
pub const DEFAULT_SCALE: f64 = 10.0;
/// lealla.txt Eq. 2 as printed: no scale.
pub const LEALLA_SCALE: f64 = 1.0;

/// `x`, `y`: [N, d] embeddings (need not be normalised).
pub fn additive_margin_softmax(x: &Tensor, y: &Tensor, margin: f64, scale: f64) -> Tensor {
    let sim = cosine_matrix(x, y);
    let n = sim.size()[0];
    let eye = Tensor::eye(n, (Kind::Float, sim.device())).to_kind(sim.kind());
    bidirectional_diagonal_cross_entropy(&((sim - eye * margin) * scale))
}

/// `contrastive = "ams"` with `margin` ([`DEFAULT_MARGIN`]) and `scale`
/// ([`DEFAULT_SCALE`], EMS's variant; LEALLA's recipes set [`LEALLA_SCALE`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct AmsSettings {
    #[serde(default = "AmsSettings::default_margin")]
    pub margin: f64,
    #[serde(default = "AmsSettings::default_scale")]
    pub scale: f64,
}

impl AmsSettings {
    fn default_margin() -> f64 {
        DEFAULT_MARGIN
    }
    fn default_scale() -> f64 {
        DEFAULT_SCALE
    }
}

impl Settings for AmsSettings {
    const SECTION: Section = Section::Objective;
    const KEYS: &'static [&'static str] = &["margin", "scale"];
    fn check(&self, checks: &mut Checks) {
        checks.finite("objective.margin", self.margin);
        checks.positive("objective.scale", self.scale);
    }
}

impl Term for AmsSettings {
    fn loss(&self, input: &TermInput) -> Tensor {
        additive_margin_softmax(input.x, input.y, self.margin, self.scale)
    }
}

pub const TERM: TermSpec = TermSpec::of::<AmsSettings>(
    "ams",
    Switch::Contrastive("ams"),
    term::settings_term::<AmsSettings>,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn equals_a_hand_computation() {
        let x = fixed_embeddings(5, 4, 3);
        let y = fixed_embeddings(5, 4, 4);
        let (m, s) = (0.3, 10.0);
        let mut expected = 0.0;
        for i in 0..5 {
            for (a, b) in [(&x, &y), (&y, &x)] {
                let pos = (s * (cos(&a[i], &b[i]) - m)).exp();
                let neg: f64 = (0..5)
                    .filter(|&n| n != i)
                    .map(|n| (s * cos(&a[i], &b[n])).exp())
                    .sum();
                expected += -(pos / (pos + neg)).ln();
            }
        }
        expected /= 5.0;
        let got = additive_margin_softmax(&tensor(&x), &tensor(&y), m, s).double_value(&[]);
        assert!((got - expected).abs() < 1e-10, "{got} vs {expected}");
        // m = 0 is InfoNCE with T = 1/s.
        let a = additive_margin_softmax(&tensor(&x), &tensor(&y), 0.0, s).double_value(&[]);
        let b = crate::losses::bidirectional_info_nce(&tensor(&x), &tensor(&y), 1.0 / s)
            .double_value(&[]);
        assert!((a - b).abs() < 1e-10);
    }
}
