//! Typed training configuration, read from TOML. Every number that matters has the
//! default of the paper it comes from (ems.txt unless said otherwise); a config file
//! only states what it changes. Unknown keys are errors, so a typo cannot silently
//! fall back to a default.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data::{CorpusSource, DevSplitConfig, SamplingConfig};
use crate::error::{LaseError, Result};
use crate::losses::{EmsContrastiveConfig, SoftLabel, TripletDistance, XtrConfig};

/// The whole recipe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    #[serde(default)]
    pub model: ModelConfig,
    #[serde(default)]
    pub tokenizer: TokenizerConfig,
    pub data: DataConfig,
    #[serde(default)]
    pub objective: ObjectiveConfig,
    #[serde(default)]
    pub optimizer: OptimizerConfig,
    #[serde(default)]
    pub schedule: ScheduleConfig,
    #[serde(default)]
    pub run: RunConfig,
}

/// Encoder shape (ems.txt §IV-A: 6 layers, 1024 hidden, 16 heads, FFN 4096, max 120
/// tokens, dropout 0.1, mean pooling).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    pub layers: usize,
    pub hidden: usize,
    pub heads: usize,
    pub ffn: usize,
    pub max_tokens: usize,
    pub dropout: f64,
    /// Pooling mode: mean (EMS), cls (LaBSE/LEALLA), max, ...
    pub pooling: String,
    /// Factorised token embedding width B (V x B then B x H); none = V x H.
    pub embedding_size: Option<usize>,
    /// Layers in a recurring unit (parameter sharing); none = all distinct.
    pub recurrent_unit_layers: Option<usize>,
    /// Dense head d -> k after pooling (dimension reduction); none = no head.
    pub output_dim: Option<usize>,
    /// Train only the dense head after pooling (e.g. the new `output_dim` layer) and keep
    /// the transformer frozen: lealla.txt 3.2's dimension-reduction head on a frozen
    /// encoder.
    #[serde(default)]
    pub freeze_encoder: bool,
    /// Start from this lase/HF model folder instead of random weights (its tokenizer
    /// is used and the shape fields above are ignored, except `output_dim`: a width
    /// other than the model's appends a new, randomly initialised dense layer).
    pub init_from: Option<PathBuf>,
    /// Append new WordPiece pieces to `init_from`'s vocabulary before training, learnt
    /// from the training text ([`crate::tokenizer::extend`]): the new languages' words
    /// stop being strings of single characters. Off when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extend_vocabulary: Option<VocabularyExtension>,
    /// Cut training sentences to this many tokens (none = the model's own limit, which
    /// the saved model keeps for inference): bounds the cost of long training text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub train_max_tokens: Option<usize>,
}

/// How many pieces [`ModelConfig::extend_vocabulary`] adds and from what sample.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VocabularyExtension {
    pub pieces: usize,
    /// Source-side (non-pivot) training sentences sampled, language-balanced.
    #[serde(default = "VocabularyExtension::default_sample")]
    pub sample_sentences: usize,
    /// Temperature exponent of the sample (XLM-R's 0.3).
    #[serde(default = "VocabularyExtension::default_alpha")]
    pub alpha: f64,
}

impl VocabularyExtension {
    fn default_sample() -> usize {
        300_000
    }
    fn default_alpha() -> f64 {
        0.3
    }
}

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            layers: 6,
            hidden: 1024,
            heads: 16,
            ffn: 4096,
            max_tokens: 120,
            dropout: 0.1,
            pooling: "mean".into(),
            embedding_size: None,
            recurrent_unit_layers: None,
            output_dim: None,
            freeze_encoder: false,
            init_from: None,
            extend_vocabulary: None,
            train_max_tokens: None,
        }
    }
}

/// Tokenizer: an existing tokenizer.json, or one trained on the training text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TokenizerConfig {
    pub path: Option<PathBuf>,
    /// Unigram vocabulary size (ems.txt: 60k pieces).
    pub vocab_size: usize,
    /// Sentences sampled for training it (language-balanced).
    pub sample_sentences: usize,
    /// Temperature exponent of the language-balanced sample.
    pub alpha: f64,
}

impl Default for TokenizerConfig {
    fn default() -> Self {
        Self {
            path: None,
            vocab_size: 60_000,
            sample_sentences: 1_000_000,
            alpha: 0.3,
        }
    }
}

/// Training data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    pub sources: Vec<CorpusSource>,
    #[serde(default)]
    pub dev: DevSplitConfig,
    #[serde(default)]
    pub sampling: SamplingConfig,
    /// Required: a benchmark data folder (as `lase eval --data-dir`) or a sentence-list
    /// file, whose test sentences drop every training pair with a side equal to one of
    /// them before the dev split; or `false`, written out, to train without the check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_test_sets: Option<TestSetExclusion>,
    /// Train on a seeded random sample of this many training pairs (after the dev split):
    /// quick experiments, and teacher caches that cover only what a short run can use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_train_pairs: Option<usize>,
}

/// `data.exclude_test_sets`: where the test sentences are, or `false`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TestSetExclusion {
    /// A benchmark folder or a file of test sentences, one per line.
    Folder(PathBuf),
    /// `false`: no exclusion (an explicit opt-out; `true` is refused).
    Off(bool),
}

impl DataConfig {
    /// The folder or file the training pairs are checked against, if any.
    pub fn exclusion(&self) -> Option<&Path> {
        match &self.exclude_test_sets {
            Some(TestSetExclusion::Folder(p)) => Some(p),
            _ => None,
        }
    }
}

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

/// AdamW (Loshchilov & Hutter 2019) hyperparameters; ems.txt: lr 3e-4, weight decay 1e-5.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OptimizerConfig {
    pub lr: f64,
    pub weight_decay: f64,
    pub beta1: f64,
    pub beta2: f64,
    pub eps: f64,
    /// Global gradient-norm clipping (0 = off).
    pub max_grad_norm: f64,
}

impl Default for OptimizerConfig {
    fn default() -> Self {
        Self {
            lr: 3e-4,
            weight_decay: 1e-5,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            max_grad_norm: 1.0,
        }
    }
}

/// Learning-rate decay after warm-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decay {
    Linear,
    Cosine,
    Constant,
}

/// Steps, batches and the warm-up/decay schedule (ems.txt: 10k warm-up steps, batch
/// 152 pairs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScheduleConfig {
    pub steps: u64,
    pub warmup_steps: u64,
    pub decay: Decay,
    /// Translation pairs per optimizer step (per accumulation micro-batch).
    pub batch_pairs: usize,
    /// Micro-batches accumulated per optimizer step.
    pub accumulation_steps: usize,
    /// Gradient caching: encode in chunks of this many sentences (0 = off), so a batch
    /// of thousands of pairs fits in memory with all of them as in-batch negatives.
    pub grad_cache_chunk: usize,
    /// Without gradient caching: each side is still embedded in length-sorted chunks of
    /// this many sentences, so each forward pads only to its own longest sentence (32
    /// suits a CPU; a GPU runs larger chunks faster, each forward being a fixed number of
    /// kernel launches). Changes the arithmetic's grouping, not the loss.
    pub padding_chunk: usize,
}

/// Sentences per forward pass in a direct (uncached) pass: small enough that sorting by
/// length removes most padding, large enough for efficient matrix products.
pub const DIRECT_PADDING_CHUNK: usize = 32;

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self {
            steps: 100_000,
            warmup_steps: 10_000,
            decay: Decay::Linear,
            batch_pairs: 152,
            accumulation_steps: 1,
            grad_cache_chunk: 0,
            padding_chunk: DIRECT_PADDING_CHUNK,
        }
    }
}

/// Bookkeeping: seeds, how often to log, evaluate and checkpoint, device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    pub seed: u64,
    pub log_every: u64,
    pub eval_every: u64,
    pub checkpoint_every: u64,
    /// Dev pairs used for the dev retrieval metric (0 = all).
    pub dev_max_pairs: usize,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            seed: 1,
            log_every: 50,
            eval_every: 1000,
            checkpoint_every: 1000,
            dev_max_pairs: 2000,
        }
    }
}

impl TrainConfig {
    /// Reads a TOML config; relative data paths are taken relative to the working
    /// directory (as the command line would).
    pub fn from_file(path: &Path) -> Result<Self> {
        Self::from_file_with(path, &[])
    }

    /// [`TrainConfig::from_file`] with command-line `--set` changes applied.
    pub fn from_file_with(path: &Path, overrides: &[RecipeOverride]) -> Result<Self> {
        let config: Self = read_recipe(path, overrides)?;
        config.validate()?;
        Ok(config)
    }

    pub fn from_toml(text: &str) -> Result<Self> {
        let config: Self = parse_toml(text, Path::new("<config>"))?;
        config.validate()?;
        Ok(config)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("configs serialise")
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(LaseError::InvalidArgument(m));
        let m = &self.model;
        if m.init_from.is_none()
            && (m.hidden == 0 || m.heads == 0 || !m.hidden.is_multiple_of(m.heads))
        {
            return bad(format!(
                "model.hidden {} must be a positive multiple of model.heads {}",
                m.hidden, m.heads
            ));
        }
        if m.extend_vocabulary.is_some() && m.init_from.is_none() {
            return bad(
                "model.extend_vocabulary extends a pretrained model's vocabulary: set model.init_from".into(),
            );
        }
        if m.freeze_encoder && m.output_dim.is_none() {
            return bad(
                "model.freeze_encoder trains only the dense head: set model.output_dim".into(),
            );
        }
        let s = &self.schedule;
        if s.batch_pairs < 2 {
            return bad("schedule.batch_pairs must be at least 2 (in-batch negatives)".into());
        }
        if s.accumulation_steps == 0 {
            return bad("schedule.accumulation_steps must be at least 1".into());
        }
        if self.objective.contrastive == ContrastiveKind::None
            && !self.objective.xtr
            && self.objective.distillation.is_none()
        {
            return bad(
                "objective: no loss enabled (contrastive = \"none\" and xtr = false)".into(),
            );
        }
        let o = &self.objective;
        if o.contrastive == ContrastiveKind::Ams && !(o.scale.is_finite() && o.scale > 0.0) {
            return bad(format!(
                "objective.scale {} must be a positive number (AMS's similarity scale; lealla.txt Eq. 2: 1.0)",
                o.scale
            ));
        }
        if o.contrastive == ContrastiveKind::Simcse
            && !(o.simcse_temperature.is_finite() && o.simcse_temperature > 0.0)
        {
            return bad(format!(
                "objective.simcse_temperature {} must be a positive number (SimCSE: 0.05)",
                o.simcse_temperature
            ));
        }
        if self.optimizer.lr <= 0.0 || !self.optimizer.lr.is_finite() {
            return bad(format!(
                "optimizer.lr {} must be positive",
                self.optimizer.lr
            ));
        }
        if self.data.sources.is_empty() {
            return bad("data.sources is empty".into());
        }
        match &self.data.exclude_test_sets {
            None => {
                return bad(
                    "data.exclude_test_sets is required: the benchmark folder (or test-sentence list) whose sentences must not be trained on, e.g. \"../shared/data\", or false to train without the check".into(),
                );
            }
            Some(TestSetExclusion::Off(true)) => {
                return bad(
                    "data.exclude_test_sets = true: give the benchmark folder (or test-sentence list) instead".into(),
                );
            }
            _ => {}
        }
        if let Some(d) = &self.objective.distillation
            && d.teacher_side != TeacherSide::Both
            && let Some(s) = self.data.sources.iter().find(|s| s.non_pivot_pairs() > 0)
        {
            return bad(format!(
                "data.sources: {} draws non-pivot pairs, whose target side is not the pivot language the teacher embeds (teacher_side = \"{}\"): set non_pivot_pairs = 0 or use a teacher on both sides",
                s.path().display(),
                if d.teacher_side == TeacherSide::Target {
                    "target"
                } else {
                    "source"
                }
            ));
        }
        if let Some(w) = self
            .data
            .sources
            .iter()
            .filter_map(|s| s.weight())
            .find(|w| !(w.is_finite() && *w > 0.0))
        {
            return bad(format!(
                "data.sources: weight {w} must be a positive number"
            ));
        }
        if let Some(message) = self
            .objective
            .distillation
            .as_ref()
            .and_then(DistillationConfig::soft_label_conflict)
        {
            return bad(format!("objective.distillation: {message}"));
        }
        self.validate_ranges()
    }

    /// Every numeric setting inside the range where training means something: a NaN,
    /// a dropout of 5, a temperature of 0 or a beta1 of 2 is refused here, naming the key,
    /// rather than surfacing as a NaN loss (or silence) steps later.
    fn validate_ranges(&self) -> Result<()> {
        let mut checks = RangeChecks::default();
        let m = &self.model;
        checks.fraction("model.dropout", m.dropout);
        checks.at_least("model.layers", m.layers, 1);
        checks.at_least("model.ffn", m.ffn, 1);
        checks.at_least("model.max_tokens", m.max_tokens, 3);
        for (key, value) in [
            ("model.embedding_size", m.embedding_size),
            ("model.recurrent_unit_layers", m.recurrent_unit_layers),
            ("model.output_dim", m.output_dim),
        ] {
            if let Some(v) = value {
                checks.at_least(key, v, 1);
            }
        }
        if let Some(v) = m.train_max_tokens {
            checks.at_least("model.train_max_tokens", v, 3);
        }
        if let Some(e) = &m.extend_vocabulary {
            checks.at_least("model.extend_vocabulary.pieces", e.pieces, 1);
            checks.at_least(
                "model.extend_vocabulary.sample_sentences",
                e.sample_sentences,
                1,
            );
            checks.positive("model.extend_vocabulary.alpha", e.alpha);
        }
        let t = &self.tokenizer;
        if t.path.is_none() {
            checks.at_least("tokenizer.vocab_size", t.vocab_size, 1);
            checks.at_least("tokenizer.sample_sentences", t.sample_sentences, 1);
            checks.positive("tokenizer.alpha", t.alpha);
        }
        checks.positive("data.sampling.alpha", self.data.sampling.alpha);
        if let Some(n) = self.data.max_train_pairs {
            checks.at_least("data.max_train_pairs", n, 1);
        }
        let o = &self.objective;
        checks.positive("objective.temperature", o.temperature);
        checks.finite("objective.margin", o.margin);
        checks.positive("objective.scale", o.scale);
        if let Some(v) = o.triplet_margin {
            checks.non_negative("objective.triplet_margin", v);
        }
        checks.positive("objective.simcse_temperature", o.simcse_temperature);
        checks.positive("objective.ems.temperature", o.ems.temperature);
        checks.at_least("objective.ems.projection_dim", o.ems.projection_dim, 1);
        checks.at_least(
            "objective.xtr_head.language_dim",
            o.xtr_head.language_dim,
            1,
        );
        if let Some(d) = &o.distillation {
            for (key, weight) in [
                ("mse", d.mse),
                ("feature", d.feature),
                ("logit", d.logit),
                ("soft_contrastive", d.soft_contrastive),
                ("mcl", d.mcl),
            ] {
                checks.non_negative(&format!("objective.distillation.{key}"), weight);
            }
            checks.positive(
                "objective.distillation.logit_temperature",
                d.logit_temperature,
            );
            checks.positive(
                "objective.distillation.soft_temperature",
                d.soft_temperature,
            );
            if let Some(l) = d.tcm_lambda {
                checks.non_negative("objective.distillation.tcm_lambda", l);
            }
        }
        let p = &self.optimizer;
        checks.non_negative("optimizer.weight_decay", p.weight_decay);
        checks.fraction("optimizer.beta1", p.beta1);
        checks.fraction("optimizer.beta2", p.beta2);
        checks.positive("optimizer.eps", p.eps);
        checks.non_negative("optimizer.max_grad_norm", p.max_grad_norm);
        let s = &self.schedule;
        checks.at_least("schedule.steps", s.steps, 1);
        checks.at_least("schedule.padding_chunk", s.padding_chunk, 1);
        match checks.first {
            Some(message) => Err(LaseError::InvalidArgument(message)),
            None => Ok(()),
        }
    }
}

/// The first out-of-range setting [`TrainConfig::validate`] finds, as a message that
/// names its key, the value and the range.
#[derive(Default)]
struct RangeChecks {
    first: Option<String>,
}

impl RangeChecks {
    fn fail(&mut self, key: &str, value: impl std::fmt::Display, range: &str) {
        if self.first.is_none() {
            self.first = Some(format!("{key} = {value}: must be {range}"));
        }
    }
    fn finite(&mut self, key: &str, v: f64) {
        if !v.is_finite() {
            self.fail(key, v, "a finite number");
        }
    }
    fn positive(&mut self, key: &str, v: f64) {
        if !(v.is_finite() && v > 0.0) {
            self.fail(key, v, "a positive finite number");
        }
    }
    fn non_negative(&mut self, key: &str, v: f64) {
        if !(v.is_finite() && v >= 0.0) {
            self.fail(key, v, "a finite number >= 0");
        }
    }
    fn fraction(&mut self, key: &str, v: f64) {
        if !(0.0..1.0).contains(&v) {
            self.fail(key, v, "in [0, 1)");
        }
    }
    fn at_least<T: PartialOrd + std::fmt::Display>(&mut self, key: &str, v: T, min: T) {
        if v < min {
            self.fail(key, v, &format!("at least {min}"));
        }
    }
}

/// One command-line change to a recipe (`--set KEY=VALUE`), for sweeps without a file per
/// point: `student.embedding_size=32` sets a key (the value is read as TOML: 32, 2e-4,
/// true, "text", [1, 2]; anything else is taken as a string) and `student.embedding_size=`
/// (nothing after `=`) removes it, so an optional setting falls back to its default.
#[derive(Clone, Debug, PartialEq)]
pub struct RecipeOverride {
    keys: Vec<String>,
    value: Option<toml::Value>,
}

impl std::str::FromStr for RecipeOverride {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let (key, value) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: expected KEY=VALUE, e.g. schedule.steps=300"))?;
        let keys: Vec<String> = key.trim().split('.').map(str::to_owned).collect();
        if keys.iter().any(|k| k.is_empty()) {
            return Err(format!("{s:?}: empty key segment in {key:?}"));
        }
        let value = value.trim();
        let value = (!value.is_empty()).then(|| {
            toml::from_str::<toml::Table>(&format!("v = {value}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(value.to_owned()))
        });
        Ok(Self { keys, value })
    }
}

impl RecipeOverride {
    fn apply(&self, table: &mut toml::Table) -> std::result::Result<(), String> {
        let (last, parents) = self.keys.split_last().expect("at least one key");
        let mut here = table;
        for (depth, key) in parents.iter().enumerate() {
            let entry = here
                .entry(key.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            here = entry.as_table_mut().ok_or_else(|| {
                format!(
                    "--set {}: {} is not a table",
                    self.keys.join("."),
                    self.keys[..=depth].join(".")
                )
            })?;
        }
        match &self.value {
            Some(v) => {
                here.insert(last.clone(), v.clone());
            }
            None => {
                here.remove(last);
            }
        }
        Ok(())
    }
}

/// Reads a TOML recipe file and applies `overrides` in order; an error names the file
/// and, without overrides, the line it points at.
pub fn read_recipe<T: serde::de::DeserializeOwned>(
    path: &Path,
    overrides: &[RecipeOverride],
) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| LaseError::io(path, e))?;
    if overrides.is_empty() {
        return parse_toml(&text, path);
    }
    let mut table: toml::Table = parse_toml(&text, path)?;
    for o in overrides {
        o.apply(&mut table)
            .map_err(|m| LaseError::bad_file(path, m))?;
    }
    let shown: Vec<String> = overrides.iter().map(|o| o.keys.join(".")).collect();
    T::deserialize(toml::Value::Table(table)).map_err(|e| {
        LaseError::bad_file(
            path,
            format!("with --set {}: {}", shown.join(", "), e.message()),
        )
    })
}

/// Parses a TOML recipe; an error names `path` and the line it points at.
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, path: &Path) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
            .unwrap_or(0);
        LaseError::bad_line(path, line, e.message().to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recipe_must_say_which_test_sets_it_excludes() {
        let base = "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\n";
        let err = TrainConfig::from_toml(base).unwrap_err().to_string();
        assert!(err.contains("exclude_test_sets is required"), "{err}");
        let err = TrainConfig::from_toml(&format!("{base}exclude_test_sets = true\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("exclude_test_sets = true"), "{err}");
        let off = TrainConfig::from_toml(&format!("{base}exclude_test_sets = false\n")).unwrap();
        assert_eq!(off.data.exclusion(), None);
        let on = TrainConfig::from_toml(&format!("{base}exclude_test_sets = \"bench\"\n")).unwrap();
        assert_eq!(on.data.exclusion(), Some(Path::new("bench")));
        // Both forms survive the round trip through the run folder's config.toml.
        for c in [off, on] {
            assert_eq!(TrainConfig::from_toml(&c.to_toml()).unwrap(), c);
        }
    }

    #[test]
    fn paper_defaults_and_unknown_keys() {
        let c = TrainConfig::from_toml(
            "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\nexclude_test_sets = false\n",
        )
        .unwrap();
        assert_eq!(c.model.layers, 6);
        assert_eq!(c.model.hidden, 1024);
        assert_eq!(c.optimizer.lr, 3e-4);
        assert_eq!(c.schedule.warmup_steps, 10_000);
        assert_eq!(c.objective.ems.projection_dim, 128);
        let again = TrainConfig::from_toml(&c.to_toml()).unwrap();
        assert_eq!(again, c);
        let err = TrainConfig::from_toml("[data]\nsources = []\n[optimizer]\nlearning_rate = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(":4:") && err.contains("learning_rate"),
            "{err}"
        );
    }

    #[test]
    fn average_labels_need_a_teacher_on_both_sides() {
        let recipe = |side: &str| {
            TrainConfig::from_toml(&format!(
                "[data]\nsources = [{{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }}]\nexclude_test_sets = false\n\
                 [objective.distillation]\nteacher = \"t\"\nteacher_side = \"{side}\"\nmse = 0.0\n\
                 soft_contrastive = 1.0\nsoft_label = \"average\"\n"
            ))
        };
        let err = recipe("target").unwrap_err().to_string();
        assert!(err.contains("teacher_side = \"both\""), "{err}");
        let c = recipe("both").unwrap();
        assert_eq!(
            c.objective.distillation.unwrap().soft_label,
            SoftLabel::Average
        );
    }

    #[test]
    fn non_pivot_pairs_need_a_two_sided_teacher_and_extension_needs_init_from() {
        let recipe = |side: &str, model: &str| {
            TrainConfig::from_toml(&format!(
                "[model]\n{model}\n[data]\nsources = [{{ format = \"n-way\", path = \"b\", non_pivot_pairs = 1 }}]\nexclude_test_sets = false\n\
                 [objective.distillation]\nteacher = \"t\"\nteacher_side = \"{side}\"\n"
            ))
        };
        let err = recipe("target", "").unwrap_err().to_string();
        assert!(
            err.contains("non_pivot_pairs") && err.contains("target"),
            "{err}"
        );
        assert!(recipe("both", "").is_ok());
        let err = recipe("both", "extend_vocabulary = { pieces = 10 }")
            .unwrap_err()
            .to_string();
        assert!(err.contains("init_from"), "{err}");
        assert!(
            recipe(
                "both",
                "init_from = \"m\"\nextend_vocabulary = { pieces = 10 }"
            )
            .is_ok()
        );
    }

    #[test]
    fn set_overrides_change_add_and_remove_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recipe.toml");
        std::fs::write(
            &path,
            "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\nexclude_test_sets = false\n\
             [model]\nlayers = 4\noutput_dim = 128\n",
        )
        .unwrap();
        let set = |s: &str| s.parse::<RecipeOverride>().unwrap();
        let plain = TrainConfig::from_file(&path).unwrap();
        assert_eq!((plain.model.layers, plain.model.output_dim), (4, Some(128)));
        let changed = TrainConfig::from_file_with(
            &path,
            &[
                set("model.layers=2"),
                set("model.output_dim="),
                set("optimizer.lr = 2e-4"),
                set("schedule.decay=linear"),
            ],
        )
        .unwrap();
        assert_eq!(changed.model.layers, 2);
        assert_eq!(changed.model.output_dim, None);
        assert_eq!(changed.optimizer.lr, 2e-4);
        // Everything not named stays as in the file.
        assert_eq!(changed.data, plain.data);
        assert_eq!(changed.model.hidden, plain.model.hidden);

        let err = TrainConfig::from_file_with(&path, &[set("model.layers=many")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("recipe.toml") && err.contains("model.layers"),
            "{err}"
        );
        let err = TrainConfig::from_file_with(&path, &[set("model.layers.deep=1")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("model.layers is not a table"), "{err}");
        let err = TrainConfig::from_file_with(&path, &[set("model.typo=1")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("typo"), "{err}");
        assert!("no-equals-sign".parse::<RecipeOverride>().is_err());
        assert!("a..b=1".parse::<RecipeOverride>().is_err());
    }

    /// The settings the fuzz campaign found accepted (docs/reliability.md, "Gap the fuzzing
    /// shows"), and a few neighbours: each alone is refused, and the message names its
    /// key. The in-range neighbours of the same keys are accepted.
    #[test]
    fn out_of_range_numbers_are_refused_with_their_key() {
        let base = "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\nexclude_test_sets = false\n";
        let refused = [
            ("model", "dropout", "5.0"),
            ("model", "dropout", "nan"),
            ("model", "dropout", "-0.1"),
            ("model", "layers", "0"),
            ("model", "ffn", "0"),
            ("model", "max_tokens", "0"),
            ("model", "output_dim", "0"),
            ("model", "embedding_size", "0"),
            ("objective", "temperature", "0.0"),
            ("objective", "temperature", "-1.0"),
            ("objective", "temperature", "nan"),
            ("objective", "scale", "nan"),
            ("objective", "margin", "inf"),
            ("optimizer", "beta1", "2.0"),
            ("optimizer", "beta2", "-1.0"),
            ("optimizer", "eps", "-1.0"),
            ("optimizer", "weight_decay", "nan"),
            ("optimizer", "max_grad_norm", "-1.0"),
            ("schedule", "steps", "0"),
            ("schedule", "padding_chunk", "0"),
            ("tokenizer", "vocab_size", "0"),
            ("tokenizer", "alpha", "nan"),
        ];
        for (section, key, value) in refused {
            let text = format!("{base}[{section}]\n{key} = {value}\n");
            let err = TrainConfig::from_toml(&text)
                .err()
                .unwrap_or_else(|| panic!("{section}.{key} = {value} was accepted"))
                .to_string();
            assert!(
                err.contains(&format!("{section}.{key} = ")),
                "{section}.{key} = {value}: {err}"
            );
        }
        let accepted = [
            ("model", "dropout", "0.0"),
            ("model", "layers", "1"),
            ("objective", "temperature", "0.05"),
            ("optimizer", "beta1", "0.0"),
            ("optimizer", "max_grad_norm", "0.0"),
            ("schedule", "steps", "1"),
            ("schedule", "grad_cache_chunk", "0"),
            ("schedule", "warmup_steps", "18446744073709551615"),
        ];
        for (section, key, value) in accepted {
            let text = format!("{base}[{section}]\n{key} = {value}\n");
            if let Err(e) = TrainConfig::from_toml(&text) {
                panic!("{section}.{key} = {value} refused: {e}");
            }
        }
    }
}
