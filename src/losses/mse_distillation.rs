//! Multilingual knowledge distillation by MSE (Reimers & Gurevych 2020, "Making
//! monolingual sentence embeddings multilingual"; lecture §distillation), and its
//! two-sided form, stage 3 of multistage-distillation.txt (Eq. 4):
//!
//! ```text
//! L = (1/(N d)) Σ_i ‖t^x_i - f(x_i)‖² + (1/(N d)) Σ_i ‖t^y_i - f(y_i)‖²
//! ```
//!
//! Reimers & Gurevych: the teacher embeds only the English side, and the student f
//! learns to map both x and its translation y onto it (t^x = t^y = the teacher's vector
//! of the English sentence). Eq. 4 (`S(s) -> A(s)`, `S(t) -> A(t)`): a multilingual
//! teacher (the assistant A) embeds both sides, and each student side regresses onto
//! the teacher's vector of the same sentence. Both terms are means over elements, as
//! PyTorch's `MSELoss` in sentence-transformers.

use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};
use tch::Tensor;

/// `teacher_x`, `teacher_y`: [N, d] targets of the student's x and y sides (the same
/// tensor for a one-sided teacher); `student_x`, `student_y`: [N, d].
pub fn mse_distillation(
    teacher_x: &Tensor,
    teacher_y: &Tensor,
    student_x: &Tensor,
    student_y: &Tensor,
) -> Tensor {
    (student_x - teacher_x).square().mean(student_x.kind())
        + (student_y - teacher_y).square().mean(student_y.kind())
}

/// `[objective.distillation] mse = w` (on, 1.0, in every distillation recipe unless set to
/// 0), as sentence-transformers' element mean, or with `mse_sum_over_dimensions` as a
/// squared norm per sentence (multistage-distillation.txt Eq. 6: d times the mean).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct MseSettings {
    #[serde(default = "MseSettings::one")]
    pub mse: f64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mse_sum_over_dimensions: bool,
}

impl MseSettings {
    fn one() -> f64 {
        1.0
    }
}

impl Settings for MseSettings {
    const SECTION: Section = Section::Distillation;
    const KEYS: &'static [&'static str] = &["mse", "mse_sum_over_dimensions"];
    fn check(&self, checks: &mut Checks) {
        checks.non_negative("objective.distillation.mse", self.mse);
    }
}

impl Term for MseSettings {
    fn loss(&self, input: &TermInput) -> Tensor {
        let t = input
            .teacher
            .expect("MSE distillation needs the teacher's vectors");
        // Eq. 6 of multistage-distillation.txt sums over dimensions: d x the mean.
        let scale = if self.mse_sum_over_dimensions {
            input.x.size()[1] as f64
        } else {
            1.0
        };
        // Per-side targets: a two-sided teacher gives each student side its own side's
        // vector (Eq. 4); a one-sided teacher's vector is both sides' target (Reimers &
        // Gurevych 2020), as t.x == t.y then.
        mse_distillation(&t.x, &t.y, input.x, input.y) * (self.mse * scale)
    }
}

pub const TERM: TermSpec = TermSpec::of::<MseSettings>(
    "mse",
    Switch::Weight("mse", 1.0),
    |section, setup| {
        if let Some(teacher) = setup.teacher_dim.filter(|&t| t != setup.dim) {
            return Err(format!(
                "MSE distillation needs the student's output width ({}) to equal the teacher's ({teacher}); set model.output_dim = {teacher}",
                setup.dim
            ));
        }
        Ok(Box::new(term::read::<MseSettings>(section)?))
    },
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    #[test]
    fn equals_a_hand_computation() {
        let (tx, ty) = (fixed_embeddings(3, 4, 21), fixed_embeddings(3, 4, 24));
        let x = fixed_embeddings(3, 4, 22);
        let y = fixed_embeddings(3, 4, 23);
        let by_hand = |a: &[Vec<f64>], b: &[Vec<f64>]| {
            let mut sum = 0.0;
            for i in 0..3 {
                for j in 0..4 {
                    sum += (a[i][j] - x[i][j]).powi(2) + (b[i][j] - y[i][j]).powi(2);
                }
            }
            sum / 12.0
        };
        let (x, y) = (tensor(&x), tensor(&y));
        // One-sided (Reimers & Gurevych): both student sides onto the same vector.
        let got = mse_distillation(&tensor(&tx), &tensor(&tx), &x, &y).double_value(&[]);
        assert!((got - by_hand(&tx, &tx)).abs() < 1e-12);
        // Two-sided (Eq. 4): each side onto its own.
        let got = mse_distillation(&tensor(&tx), &tensor(&ty), &x, &y).double_value(&[]);
        assert!((got - by_hand(&tx, &ty)).abs() < 1e-12);
    }
}
