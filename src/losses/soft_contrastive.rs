//! Soft contrastive distillation (soft-contrastive.txt Eq. 2-7): the row/column InfoNCE
//! of translation ranking, with soft targets w(i, j) from a teacher instead of the
//! identity. With sim_f(a, b) = s(f(a), f(b)) / τ for the student f:
//!
//! ```text
//! L_row   = -(1/N) Σ_i Σ_j w(i,j) log( e^{sim_f(s_i,t_j)} / Σ_n e^{sim_f(s_i,t_n)} )
//! L_col   = -(1/N) Σ_i Σ_j w(i,j) log( e^{sim_f(s_i,t_j)} / Σ_n e^{sim_f(s_n,t_j)} )
//! L_cross = L_row + L_col                                                    (Eq. 2)
//! Priority label: w(i,j) = softmax_j( s_g(s_i, s_j) / τ )   (teacher g, anchor side)  (Eq. 4)
//! Average label:  w(i,j) = softmax_j( (s_g(s_i,s_j) + s_g(t_i,t_j)) / (2τ) )        (Eq. 5)
//! L_mono  = -(1/N) Σ_ij w(i,j) [ log( e^{sim_f(s_i,s_j)} / Σ_n e^{sim_f(s_n,s_j)} )
//!                              + log( e^{sim_f(t_i,t_j)} / Σ_n e^{sim_f(t_n,t_j)} ) ]  (Eq. 6)
//! TCM:     L = λ L_cross + L_mono,  λ = 0.1, τ = 0.1                          (Eq. 7)
//! ```

use tch::Tensor;

use super::cosine_matrix;
use super::term::{self, Checks, Section, Settings, Switch, Term, TermInput, TermSpec};

/// soft-contrastive.txt's defaults.
pub const DEFAULT_TEMPERATURE: f64 = 0.1;
pub const DEFAULT_TCM_LAMBDA: f64 = 0.1;

/// Where the soft labels come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SoftLabel {
    /// Teacher similarities on the anchor (source) side only: a monolingual teacher works.
    Priority,
    /// Mean of both sides' teacher similarities: needs a multilingual teacher.
    Average,
}

/// The teacher vectors a soft label is computed from. Average needs both sides: there is
/// no way to ask for it with one (it used to fall back to Priority without a word).
#[derive(Clone, Copy, Debug)]
pub enum TeacherVectors<'a> {
    /// Eq. 4: the anchor (source) side only; a monolingual teacher works.
    Priority { anchor: &'a Tensor },
    /// Eq. 5: both sides of each pair; needs a multilingual teacher.
    Average {
        source: &'a Tensor,
        target: &'a Tensor,
    },
}

impl<'a> TeacherVectors<'a> {
    /// The vectors `label` needs, or `None` for Average without the target side.
    pub fn for_label(
        label: SoftLabel,
        anchor: &'a Tensor,
        other: Option<&'a Tensor>,
    ) -> Option<Self> {
        match (label, other) {
            (SoftLabel::Priority, _) => Some(Self::Priority { anchor }),
            (SoftLabel::Average, Some(target)) => Some(Self::Average {
                source: anchor,
                target,
            }),
            (SoftLabel::Average, None) => None,
        }
    }
}

/// w [N, N] (Eq. 4 or Eq. 5) from the teacher's vectors.
pub fn soft_labels(teacher: TeacherVectors<'_>, temperature: f64) -> Tensor {
    let (logits, kind) = match teacher {
        TeacherVectors::Priority { anchor } => (cosine_matrix(anchor, anchor), anchor.kind()),
        TeacherVectors::Average { source, target } => (
            (cosine_matrix(source, source) + cosine_matrix(target, target)) / 2.0,
            source.kind(),
        ),
    };
    (logits / temperature).softmax(-1, kind).detach()
}

/// -(1/N) Σ_ij w(i,j) log softmax over the first index (columns) of `logits`[i][j].
fn column_soft_ce(logits: &Tensor, w: &Tensor) -> Tensor {
    let n = logits.size()[0] as f64;
    -(w * logits.log_softmax(0, logits.kind())).sum(logits.kind()) / n
}

/// L_cross = L_row + L_col on student embeddings `s` (anchor side) and `t`.
pub fn soft_contrastive(s: &Tensor, t: &Tensor, w: &Tensor, temperature: f64) -> Tensor {
    let logits = cosine_matrix(s, t) / temperature;
    let n = logits.size()[0] as f64;
    let row = -(w * logits.log_softmax(1, logits.kind())).sum(logits.kind()) / n;
    row + column_soft_ce(&logits, w)
}

/// TCM: λ L_cross + L_mono.
pub fn soft_contrastive_tcm(
    s: &Tensor,
    t: &Tensor,
    w: &Tensor,
    temperature: f64,
    lambda: f64,
) -> Tensor {
    let mono = column_soft_ce(&(cosine_matrix(s, s) / temperature), w)
        + column_soft_ce(&(cosine_matrix(t, t) / temperature), w);
    soft_contrastive(s, t, w, temperature) * lambda + mono
}

/// `[objective.distillation] soft_contrastive = w` (off by default) with `soft_label`
/// (Priority), `soft_temperature` τ ([`DEFAULT_TEMPERATURE`]), `soft_label_centering`
/// (off = the paper) and `tcm_lambda` (none = L_cross only; TCM: [`DEFAULT_TCM_LAMBDA`]).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct SoftContrastiveSettings {
    #[serde(default)]
    pub soft_contrastive: f64,
    #[serde(default = "SoftContrastiveSettings::default_label")]
    pub soft_label: SoftLabel,
    #[serde(default = "SoftContrastiveSettings::default_temperature")]
    pub soft_temperature: f64,
    /// Soft labels from the teacher's vectors minus their mean over the cached training
    /// pairs. For anisotropic teachers, whose cosines crowd near 1, so that
    /// softmax(cos / τ) is nearly uniform and the labels carry no signal.
    #[serde(default)]
    pub soft_label_centering: bool,
    #[serde(default)]
    pub tcm_lambda: Option<f64>,
}

impl SoftContrastiveSettings {
    fn default_label() -> SoftLabel {
        SoftLabel::Priority
    }
    fn default_temperature() -> f64 {
        DEFAULT_TEMPERATURE
    }
}

/// Why these settings cannot run with a teacher of `teacher_both_sides`, if they cannot.
pub fn soft_label_conflict(
    soft: &SoftContrastiveSettings,
    teacher_both_sides: bool,
) -> Option<&'static str> {
    (soft.soft_contrastive > 0.0 && soft.soft_label == SoftLabel::Average && !teacher_both_sides)
        .then_some(
            "soft_label = \"average\" averages the teacher's similarities on both sides of each pair: set teacher_side = \"both\" (a multilingual teacher)",
        )
}

impl Settings for SoftContrastiveSettings {
    const SECTION: Section = Section::Distillation;
    const KEYS: &'static [&'static str] = &[
        "soft_contrastive",
        "soft_label",
        "soft_temperature",
        "soft_label_centering",
        "tcm_lambda",
    ];
    fn check(&self, checks: &mut Checks) {
        checks.non_negative(
            "objective.distillation.soft_contrastive",
            self.soft_contrastive,
        );
        checks.positive(
            "objective.distillation.soft_temperature",
            self.soft_temperature,
        );
        if let Some(l) = self.tcm_lambda {
            checks.non_negative("objective.distillation.tcm_lambda", l);
        }
    }
}

impl Term for SoftContrastiveSettings {
    fn loss(&self, input: &TermInput) -> Tensor {
        let t = input
            .teacher
            .expect("soft contrastive needs the teacher's vectors");
        let centred = |v: &Tensor| match &t.center {
            Some(mean) => v - mean.to_kind(v.kind()),
            None => v.shallow_clone(),
        };
        let (anchor, other) = (centred(&t.anchor), t.both_sides.then(|| centred(&t.y)));
        let teacher = TeacherVectors::for_label(self.soft_label, &anchor, other.as_ref())
            .expect("the term refuses Average labels without a two-sided teacher");
        let w = soft_labels(teacher, self.soft_temperature);
        let (x, y, tau) = (input.x, input.y, self.soft_temperature);
        let l = match self.tcm_lambda {
            Some(lambda) => soft_contrastive_tcm(x, y, &w, tau, lambda),
            None => soft_contrastive(x, y, &w, tau),
        };
        l * self.soft_contrastive
    }

    fn wants_teacher_center(&self) -> bool {
        self.soft_label_centering
    }
}

pub const TERM: TermSpec = TermSpec {
    // Average labels need the teacher's vectors of both sides (`teacher_side`).
    check: |section, checks| {
        term::check::<SoftContrastiveSettings>(section, checks);
        let both = section.get("teacher_side").and_then(toml::Value::as_str) == Some("both");
        if let Ok(soft) = term::read::<SoftContrastiveSettings>(section)
            && let Some(message) = soft_label_conflict(&soft, both)
        {
            checks.conflict(format!("objective.distillation: {message}"));
        }
    },
    ..TermSpec::of::<SoftContrastiveSettings>(
        "soft_contrastive",
        Switch::Weight("soft_contrastive", 0.0),
        |section, setup| {
            let soft = term::read::<SoftContrastiveSettings>(section)?;
            match soft_label_conflict(&soft, setup.teacher_both_sides) {
                Some(message) => Err(message.to_string()),
                None => Ok(Box::new(soft)),
            }
        },
    )
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::reference::*;

    fn softmax(v: &[f64]) -> Vec<f64> {
        let z: f64 = v.iter().map(|x| x.exp()).sum();
        v.iter().map(|x| x.exp() / z).collect()
    }

    #[test]
    #[allow(clippy::needless_range_loop)] // matrix indices read best as indices
    fn equals_a_hand_computation() {
        let n = 4;
        let (gs, gt) = (fixed_embeddings(n, 6, 71), fixed_embeddings(n, 6, 72));
        let (s, t) = (fixed_embeddings(n, 3, 73), fixed_embeddings(n, 3, 74));
        let tau = 0.1;
        let priority: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                softmax(
                    &(0..n)
                        .map(|j| cos(&gs[i], &gs[j]) / tau)
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let average: Vec<Vec<f64>> = (0..n)
            .map(|i| {
                softmax(
                    &(0..n)
                        .map(|j| (cos(&gs[i], &gs[j]) + cos(&gt[i], &gt[j])) / (2.0 * tau))
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let sim = |a: &[Vec<f64>], b: &[Vec<f64>], i: usize, j: usize| cos(&a[i], &b[j]) / tau;
        // log e^{sim(a_i,b_j)} / Σ_n e^{sim(a_n,b_j)}  (column) and row versions.
        let col = |a: &[Vec<f64>], b: &[Vec<f64>], i: usize, j: usize| {
            sim(a, b, i, j) - (0..n).map(|m| sim(a, b, m, j).exp()).sum::<f64>().ln()
        };
        let row = |a: &[Vec<f64>], b: &[Vec<f64>], i: usize, j: usize| {
            sim(a, b, i, j) - (0..n).map(|m| sim(a, b, i, m).exp()).sum::<f64>().ln()
        };
        for (label, w) in [
            (SoftLabel::Priority, &priority),
            (SoftLabel::Average, &average),
        ] {
            let mut cross = 0.0;
            let mut mono = 0.0;
            for i in 0..n {
                for j in 0..n {
                    cross -= w[i][j] * (row(&s, &t, i, j) + col(&s, &t, i, j));
                    mono -= w[i][j] * (col(&s, &s, i, j) + col(&t, &t, i, j));
                }
            }
            cross /= n as f64;
            mono /= n as f64;
            let (tgs, tgt) = (tensor(&gs), tensor(&gt));
            let teacher = TeacherVectors::for_label(label, &tgs, Some(&tgt)).unwrap();
            let wt = soft_labels(teacher, tau);
            for i in 0..n {
                for j in 0..n {
                    assert!((wt.double_value(&[i as i64, j as i64]) - w[i][j]).abs() < 1e-12);
                }
            }
            let got = soft_contrastive(&tensor(&s), &tensor(&t), &wt, tau).double_value(&[]);
            assert!((got - cross).abs() < 1e-10, "{label:?}: {got} vs {cross}");
            let got =
                soft_contrastive_tcm(&tensor(&s), &tensor(&t), &wt, tau, 0.1).double_value(&[]);
            assert!((got - (0.1 * cross + mono)).abs() < 1e-10, "{label:?} TCM");
        }
        // The identity as w gives back bidirectional InfoNCE.
        let eye = tch::Tensor::eye(n as i64, (tch::Kind::Double, tch::Device::Cpu));
        let hard = soft_contrastive(&tensor(&s), &tensor(&t), &eye, tau).double_value(&[]);
        let info =
            crate::losses::bidirectional_info_nce(&tensor(&s), &tensor(&t), tau).double_value(&[]);
        assert!((hard - info).abs() < 1e-10);
        // Average without the target side is not expressible.
        let tgs = tensor(&gs);
        assert!(TeacherVectors::for_label(SoftLabel::Average, &tgs, None).is_none());
        assert!(TeacherVectors::for_label(SoftLabel::Priority, &tgs, None).is_some());
    }
}
