//! LEALLA feature distillation, FD (lealla.txt Eq. 3): a trainable dense layer f lifts
//! the student's d-dimensional embeddings to the teacher's width, and
//!
//! ```text
//! L_fd = (1/N) Σ_i ( ‖x^t_i - f(x̂_i)‖² + ‖y^t_i - f(ŷ_i)‖² ),   x̂ = x / ‖x‖
//! ```
//!
//! on L2-normalised student embeddings, as LaBSE/LEALLA sentence embeddings are (the
//! teacher's are too). Un-normalised pooled outputs have norms in the tens at the start of
//! training, which made f(x) and the loss hundreds of times the contrastive term.
//! f exists only for training; the exported student keeps its d-dimensional output.

use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};
use tch::{Tensor, nn, nn::Module};

/// The up-projection f: d -> d_teacher and the loss.
#[derive(Debug)]
pub struct FeatureDistillation {
    up: nn::Linear,
}

impl FeatureDistillation {
    pub fn new(path: nn::Path, student_dim: usize, teacher_dim: usize) -> Self {
        Self {
            up: nn::linear(
                path / "up_projection",
                student_dim as i64,
                teacher_dim as i64,
                Default::default(),
            ),
        }
    }

    /// `teacher_x`, `teacher_y`: [N, d_t]; `x`, `y`: [N, d] student embeddings.
    pub fn loss(&self, teacher_x: &Tensor, teacher_y: &Tensor, x: &Tensor, y: &Tensor) -> Tensor {
        let n = x.size()[0] as f64;
        let kind = x.kind();
        let l2 = crate::model::sentence_encoder::l2_normalize;
        let (x, y) = (l2(x), l2(y));
        ((teacher_x - self.up.forward(&x)).square().sum(kind)
            + (teacher_y - self.up.forward(&y)).square().sum(kind))
            / n
    }
}

/// `[objective.distillation] feature = β` (lealla.txt: 1e3 small/base, 1e4 large; off by
/// default).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FeatureDistillationSettings {
    #[serde(default)]
    pub feature: f64,
}

impl Settings for FeatureDistillationSettings {
    const SECTION: Section = Section::Distillation;
    const KEYS: &'static [&'static str] = &["feature"];
    fn check(&self, checks: &mut Checks) {
        checks.non_negative("objective.distillation.feature", self.feature);
    }
}

/// The up-projection with its weight β.
struct WeightedFeatureDistillation {
    head: FeatureDistillation,
    weight: f64,
}

impl Term for WeightedFeatureDistillation {
    fn loss(&self, input: &TermInput) -> Tensor {
        let t = input
            .teacher
            .expect("feature distillation needs the teacher's vectors");
        self.head.loss(&t.x, &t.y, input.x, input.y) * self.weight
    }
}

pub const TERM: TermSpec = TermSpec::of::<FeatureDistillationSettings>(
    "feature_distillation",
    Switch::Weight("feature", 0.0),
    |section, setup| {
        let settings = term::read::<FeatureDistillationSettings>(section)?;
        let teacher_dim = setup
            .teacher_dim
            .ok_or("feature distillation needs the teacher's vector width")?;
        Ok(Box::new(WeightedFeatureDistillation {
            head: FeatureDistillation::new(setup.path, setup.dim, teacher_dim),
            weight: settings.feature,
        }))
    },
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;
    use tch::{Device, Kind};

    #[test]
    fn equals_a_hand_computation() {
        let mut vs = nn::VarStore::new(Device::Cpu);
        let fd = FeatureDistillation::new(vs.root(), 2, 3);
        vs.set_kind(Kind::Double);
        let (tx, ty) = (fixed_embeddings(4, 3, 51), fixed_embeddings(4, 3, 52));
        let (x, y) = (fixed_embeddings(4, 2, 53), fixed_embeddings(4, 2, 54));
        let w = rows(&fd.up.ws);
        let b: Vec<f64> = Vec::<f64>::try_from(fd.up.bs.as_ref().unwrap().copy()).unwrap();
        let f = |v: &[f64]| -> Vec<f64> {
            let norm = (v[0] * v[0] + v[1] * v[1]).sqrt();
            (0..3)
                .map(|r| b[r] + (w[r][0] * v[0] + w[r][1] * v[1]) / norm)
                .collect()
        };
        let sq =
            |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(p, q)| (p - q).powi(2)).sum() };
        let expected: f64 = (0..4)
            .map(|i| sq(&tx[i], &f(&x[i])) + sq(&ty[i], &f(&y[i])))
            .sum::<f64>()
            / 4.0;
        let got = fd
            .loss(&tensor(&tx), &tensor(&ty), &tensor(&x), &tensor(&y))
            .double_value(&[]);
        assert!((got - expected).abs() < 1e-10, "{got} vs {expected}");
    }
}
