//! The loss a recipe trains with: contrastive part, XTR and distillation terms, each
//! number with its paper's default.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::losses::{EmsContrastiveConfig, SoftLabel, TripletDistance, XtrConfig};

/// Which contrastive loss, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContrastiveKind {
    /// EMS: InfoNCE on a two-layer MLP projection (ems.txt Eq. 8-11).
    Ems,
    /// Bidirectional InfoNCE on the sentence vectors.
    InfoNce,
    /// LaBSE additive margin softmax.
    Ams,
    /// Triplet loss with the hardest in-batch negative.
    Triplet,
    /// Unsupervised SimCSE (Gao et al. 2021, src/losses/simcse.rs) at
    /// `simcse_temperature`: each side's sentences, encoded a second time under another
    /// dropout mask, are their own positives (the other sentences of the same side are
    /// the negatives; translations are not positives): L = L_simcse(x, x') +
    /// L_simcse(y, y'). The encoder needs dropout (0.1 in the paper).
    Simcse,
    None,
}

/// The training objective: contrastive part + optional XTR (EMS joint loss, Eq. 12).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ObjectiveConfig {
    pub contrastive: ContrastiveKind,
    /// Temperature of InfoNCE (0.1).
    pub temperature: f64,
    /// AMS margin m (LaBSE and lealla.txt: 0.3).
    pub margin: f64,
    /// AMS similarity scale s: the logits are s (φ - m) and s φ. The default, 10 (= 1/T
    /// at T = 0.1), is EMS's variant (ems.txt §V, LaBSE-EMS-vanilla); lealla.txt Eq. 2 has
    /// no scale, i.e. 1.0 ([`crate::losses::additive_margin::LEALLA_SCALE`]).
    pub scale: f64,
    pub triplet_distance: TripletDistance,
    pub triplet_margin: Option<f64>,
    /// Temperature τ of `contrastive = "simcse"` (Gao et al. 2021: 0.05).
    pub simcse_temperature: f64,
    pub ems: EmsContrastiveConfig,
    /// Cross-lingual token-level reconstruction on/off.
    pub xtr: bool,
    pub xtr_head: XtrConfig,
    /// Knowledge distillation from a teacher model (terms added to the loss above).
    pub distillation: Option<DistillationConfig>,
}

/// Which side(s) of each pair the teacher embeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TeacherSide {
    /// The target side (English in Tatoeba-Challenge folders): a monolingual English
    /// teacher (Reimers & Gurevych 2020).
    Target,
    Source,
    /// Both sides: a multilingual teacher (LEALLA's LaBSE, Average labels). MSE then
    /// takes each student side to the teacher's vector of the same side
    /// (multistage-distillation.txt Eq. 4), not both sides to one.
    Both,
}

/// Distillation terms and their weights; a weight of 0 turns a term off. Teacher
/// embeddings are computed once and cached in the run folder (memory-mapped .npy).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistillationConfig {
    /// Teacher model folder (lase / HF / sentence-transformers layout).
    pub teacher: PathBuf,
    #[serde(default = "DistillationConfig::default_side")]
    pub teacher_side: TeacherSide,
    /// MSE distillation (Reimers & Gurevych 2020): ‖t - f(x)‖² + ‖t - f(y)‖², t the
    /// teacher's vector of the side it embeds; with `teacher_side = "both"`,
    /// ‖t(x) - f(x)‖² + ‖t(y) - f(y)‖² (multistage-distillation.txt Eq. 4).
    #[serde(default = "DistillationConfig::one")]
    pub mse: f64,
    /// LEALLA feature distillation weight β (lealla.txt: 1e3 small/base, 1e4 large).
    #[serde(default)]
    pub feature: f64,
    /// LEALLA logit distillation weight γ (lealla.txt: 1e-2) and temperature T (100).
    #[serde(default)]
    pub logit: f64,
    #[serde(default = "DistillationConfig::default_logit_temperature")]
    pub logit_temperature: f64,
    /// Soft contrastive weight and label kind (soft-contrastive.txt; τ 0.1).
    #[serde(default)]
    pub soft_contrastive: f64,
    #[serde(default = "DistillationConfig::default_label")]
    pub soft_label: SoftLabel,
    #[serde(default = "DistillationConfig::default_soft_temperature")]
    pub soft_temperature: f64,
    /// Soft labels from the teacher's vectors minus their mean over the cached training
    /// pairs (off = the paper). For anisotropic teachers, whose cosines crowd near 1, so
    /// that softmax(cos / τ) is nearly uniform and the labels carry no signal
    /// (docs/results.md: lase-small's mean cosine between unrelated sentences is 0.84).
    #[serde(default)]
    pub soft_label_centering: bool,
    /// TCM's λ (0.1): L = λ L_cross + L_mono; none = cross-lingual loss only.
    #[serde(default)]
    pub tcm_lambda: Option<f64>,
    /// MCL weight (multistage-distillation.txt stage 4).
    #[serde(default)]
    pub mcl: f64,
    /// MSE as a squared norm per sentence, summed over the d dimensions and averaged
    /// over the batch (multistage-distillation.txt Eq. 6: (1/|N|) Σ_i (h_T - h_S)², the
    /// square of a vector) instead of sentence-transformers' mean over N·d elements
    /// (off): on, the MSE term is d times larger at the same `mse` weight.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mse_sum_over_dimensions: bool,
    /// L2-normalise the student's vectors in training, as a sentence-transformers
    /// teacher with a Normalize module does (all-MiniLM-L6-v2): MSE then compares unit
    /// vectors, and a student initialised from that teacher matches it at step 0, as in
    /// Reimers & Gurevych 2020, where the student keeps the teacher's modules. Off =
    /// unnormalised student vectors (the losses that need unit vectors normalise).
    #[serde(default)]
    pub normalize_student: bool,
}

impl DistillationConfig {
    /// MSE distillation alone (Reimers & Gurevych 2020) from `teacher` on `side`.
    pub fn mse_only(teacher: PathBuf, side: TeacherSide) -> Self {
        Self {
            teacher,
            teacher_side: side,
            mse: 1.0,
            feature: 0.0,
            logit: 0.0,
            logit_temperature: Self::default_logit_temperature(),
            soft_contrastive: 0.0,
            soft_label: Self::default_label(),
            soft_temperature: Self::default_soft_temperature(),
            soft_label_centering: false,
            tcm_lambda: None,
            mcl: 0.0,
            mse_sum_over_dimensions: false,
            normalize_student: false,
        }
    }

    /// Why these terms cannot run, if they cannot: Average soft labels need the
    /// teacher's vectors of both sides. Checked by recipes and by `Objective::new`.
    pub fn soft_label_conflict(&self) -> Option<&'static str> {
        (self.soft_contrastive > 0.0
            && self.soft_label == SoftLabel::Average
            && self.teacher_side != TeacherSide::Both)
            .then_some(
                "soft_label = \"average\" averages the teacher's similarities on both sides of each pair: set teacher_side = \"both\" (a multilingual teacher)",
            )
    }

    fn default_side() -> TeacherSide {
        TeacherSide::Target
    }
    fn one() -> f64 {
        1.0
    }
    fn default_logit_temperature() -> f64 {
        crate::losses::logit_distillation::DEFAULT_TEMPERATURE
    }
    fn default_label() -> SoftLabel {
        SoftLabel::Priority
    }
    fn default_soft_temperature() -> f64 {
        crate::losses::soft_contrastive::DEFAULT_TEMPERATURE
    }
}

impl Default for ObjectiveConfig {
    fn default() -> Self {
        Self {
            contrastive: ContrastiveKind::Ems,
            temperature: crate::losses::info_nce::DEFAULT_TEMPERATURE,
            margin: crate::losses::additive_margin::DEFAULT_MARGIN,
            scale: crate::losses::additive_margin::DEFAULT_SCALE,
            triplet_distance: TripletDistance::Cosine,
            triplet_margin: None,
            simcse_temperature: crate::losses::simcse::DEFAULT_TEMPERATURE,
            ems: EmsContrastiveConfig::default(),
            xtr: true,
            xtr_head: XtrConfig::default(),
            distillation: None,
        }
    }
}
