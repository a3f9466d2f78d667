//! Multi-stage distillation's MCL term (multistage-distillation.txt Eq. 5-7): the
//! student's cross-lingual similarities imitate the teacher's monolingual ones,
//!
//! ```text
//! L_mcl = (1/N²) Σ_i Σ_j ( s(x^t_i, x^t_j) - s(x_i, y_j) )²
//! ```
//!
//! used with the MSE distillation term in stage 4 of the multi-stage recipe.

use tch::Tensor;

use super::logit_distillation;
use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};

/// `teacher_x`: [N, d_t] teacher embeddings of the source side; `x`, `y`: [N, d].
///
/// The same matrix-matching MSE as LEALLA's logit distillation, with the teacher's
/// monolingual similarities as the target and no temperature.
pub fn mcl(teacher_x: &Tensor, x: &Tensor, y: &Tensor) -> Tensor {
    logit_distillation(teacher_x, teacher_x, x, y, 1.0)
}

/// `[objective.distillation] mcl = w` (multistage-distillation.txt stage 4; off by
/// default), on the side the teacher embeds.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct MclSettings {
    #[serde(default)]
    pub mcl: f64,
}

impl Settings for MclSettings {
    const SECTION: Section = Section::Distillation;
    const KEYS: &'static [&'static str] = &["mcl"];
    fn check(&self, checks: &mut Checks) {
        checks.non_negative("objective.distillation.mcl", self.mcl);
    }
}

impl Term for MclSettings {
    fn loss(&self, input: &TermInput) -> Tensor {
        let t = input.teacher.expect("MCL needs the teacher's vectors");
        mcl(&t.anchor, input.x, input.y) * self.mcl
    }
}

pub const TERM: TermSpec = TermSpec::of::<MclSettings>(
    "mcl",
    Switch::Weight("mcl", 0.0),
    term::settings_term::<MclSettings>,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn equals_a_hand_computation() {
        let t = fixed_embeddings(3, 4, 81);
        let (x, y) = (fixed_embeddings(3, 2, 82), fixed_embeddings(3, 2, 83));
        let mut expected = 0.0;
        for i in 0..3 {
            for j in 0..3 {
                expected += (cos(&t[i], &t[j]) - cos(&x[i], &y[j])).powi(2);
            }
        }
        expected /= 9.0;
        let got = mcl(&tensor(&t), &tensor(&x), &tensor(&y)).double_value(&[]);
        assert!((got - expected).abs() < 1e-14);
    }
}
