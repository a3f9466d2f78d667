//! LEALLA logit distillation, LD (lealla.txt Eq. 4): the student reproduces the
//! teacher's whole cross-lingual similarity matrix, scaled by a temperature T = 100:
//!
//! ```text
//! L_ld = (1/N²) Σ_i Σ_j ( (φ(x^t_i, y^t_j) - φ(x_i, y_j)) / T )²,   φ = cosine
//! ```
//!
//! LEALLA weights it by γ = 1e-2; alone it collapses (lealla.txt Table 3).

use tch::Tensor;

use super::cosine_matrix;
use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};

/// lealla.txt's distillation temperature.
pub const DEFAULT_TEMPERATURE: f64 = 100.0;

pub fn logit_distillation(
    teacher_x: &Tensor,
    teacher_y: &Tensor,
    x: &Tensor,
    y: &Tensor,
    temperature: f64,
) -> Tensor {
    ((cosine_matrix(teacher_x, teacher_y) - cosine_matrix(x, y)) / temperature)
        .square()
        .mean(x.kind())
}

/// `[objective.distillation] logit = γ` (lealla.txt: 1e-2; off by default) at
/// `logit_temperature` ([`DEFAULT_TEMPERATURE`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LogitDistillationSettings {
    #[serde(default)]
    pub logit: f64,
    #[serde(default = "LogitDistillationSettings::default_temperature")]
    pub logit_temperature: f64,
}

impl LogitDistillationSettings {
    fn default_temperature() -> f64 {
        DEFAULT_TEMPERATURE
    }
}

impl Settings for LogitDistillationSettings {
    const SECTION: Section = Section::Distillation;
    const KEYS: &'static [&'static str] = &["logit", "logit_temperature"];
    fn check(&self, checks: &mut Checks) {
        checks.non_negative("objective.distillation.logit", self.logit);
        checks.positive(
            "objective.distillation.logit_temperature",
            self.logit_temperature,
        );
    }
}

impl Term for LogitDistillationSettings {
    fn loss(&self, input: &TermInput) -> Tensor {
        let t = input
            .teacher
            .expect("logit distillation needs the teacher's vectors");
        logit_distillation(&t.x, &t.y, input.x, input.y, self.logit_temperature) * self.logit
    }
}

pub const TERM: TermSpec = TermSpec::of::<LogitDistillationSettings>(
    "logit_distillation",
    Switch::Weight("logit", 0.0),
    term::settings_term::<LogitDistillationSettings>,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn equals_a_hand_computation() {
        let (tx, ty) = (fixed_embeddings(3, 5, 61), fixed_embeddings(3, 5, 62));
        let (x, y) = (fixed_embeddings(3, 2, 63), fixed_embeddings(3, 2, 64));
        let mut expected = 0.0;
        for i in 0..3 {
            for j in 0..3 {
                expected += ((cos(&tx[i], &ty[j]) - cos(&x[i], &y[j])) / 100.0).powi(2);
            }
        }
        expected /= 9.0;
        let got = logit_distillation(&tensor(&tx), &tensor(&ty), &tensor(&x), &tensor(&y), 100.0)
            .double_value(&[]);
        assert!((got - expected).abs() < 1e-14, "{got} vs {expected}");
    }
}
