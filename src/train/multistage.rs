//! Multi-stage distillation (multistage-distillation.txt §3.2): a small multilingual
//! student through a teaching assistant, in four stages, each in its own folder of the
//! run and each resumable (stages 1, 3 and 4 are ordinary `lase distill` runs that resume
//! mid-stage; stage 2 is short and restarts if killed, its output written atomically):
//!
//! 1. `1-assistant`: teacher T -> assistant A by MSE (Eq. 2): a multilingual model learns
//!    the (English) teacher's space on both sides of parallel pairs.
//! 2. `2-bottleneck`: the student S is built from A: the first |RU| layers of A form a
//!    recurring unit applied L / |RU| times (§3.1.3, parameter recurrence), and the token
//!    table becomes V x B then B x H (embedding bottleneck); the bottleneck is trained to
//!    reproduce A's token embeddings (Eq. 3) while everything else is copied from A.
//! 3. `3-student`: A -> S by MSE on both sides (Eq. 4).
//! 4. `4-contrastive`: MCL + MSE from T (Eq. 5-7).
//!
//! The final model is `4-contrastive/model`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};

use super::config::{
    DataConfig, DistillationConfig, ModelConfig, ObjectiveConfig, OptimizerConfig, RecipeOverride,
    RunConfig, ScheduleConfig, TeacherSide, TokenizerConfig, TrainConfig,
};
use super::optimizer::AdamW;
use super::schedule::learning_rate;
use super::trainer::{TrainOptions, train};
use super::training_data::training_and_dev_sets;
use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;
use crate::model::SentenceEncoder;
use crate::rng::{SplitMix64, mix_seed};
use crate::tokenizer::TokenIds;

/// The student's shape relative to the assistant (Tables 7/8: |RU| and bs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudentShape {
    /// Transformer layers L (applied; the distinct ones are |RU|).
    pub layers: usize,
    /// |RU|: the first |RU| layers of the assistant, repeated L / |RU| times.
    pub recurrent_unit_layers: usize,
    /// Bottleneck width B of the token table (bs); none keeps the assistant's V x H table.
    pub embedding_size: Option<usize>,
}

/// Budget of one stage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StageBudget {
    pub steps: u64,
    pub lr: f64,
    /// Pairs per batch (the paper: 64).
    pub batch_pairs: usize,
    /// Warm-up as a fraction of the steps (the paper: 0.1).
    pub warmup_ratio: f64,
}

impl Default for StageBudget {
    /// multistage-distillation.txt §4.1: AdamW at 2e-5, batch 64, 10% warm-up.
    fn default() -> Self {
        Self {
            steps: 1000,
            lr: 2e-5,
            batch_pairs: 64,
            warmup_ratio: 0.1,
        }
    }
}

/// The four stages' budgets; a stage with 0 steps is skipped (stage ablation, Table 6).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StageBudgets {
    pub assistant: StageBudget,
    pub bottleneck: StageBudget,
    pub student: StageBudget,
    pub contrastive: StageBudget,
}

/// A multi-stage recipe (TOML).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MultistageConfig {
    /// Teacher T (e.g. the English all-MiniLM-L6-v2).
    pub teacher: PathBuf,
    /// The model that becomes the assistant A in stage 1 (a multilingual encoder).
    pub assistant_init: PathBuf,
    pub student: StudentShape,
    pub data: DataConfig,
    #[serde(default)]
    pub stages: StageBudgets,
    /// Weight of MCL in stage 4 (Eq. 7 adds it to MSE with weight 1).
    #[serde(default = "MultistageConfig::one")]
    pub mcl_weight: f64,
    #[serde(default)]
    pub run: RunConfig,
}

impl MultistageConfig {
    fn one() -> f64 {
        1.0
    }

    pub fn from_file(path: &Path) -> Result<Self> {
        Self::from_file_with(path, &[])
    }

    /// [`MultistageConfig::from_file`] with command-line `--set` changes applied. Every
    /// stage's settings are checked here, before stage 1 starts, and a bad one is named as
    /// the user wrote it (`stages.contrastive.lr`, with its file and line or its `--set`),
    /// not as the generated recipe of its stage would name it hours later.
    pub fn from_file_with(path: &Path, overrides: &[RecipeOverride]) -> Result<Self> {
        let config: Self = super::config::read_recipe(path, overrides)?;
        config.validate().map_err(|message| {
            LaseError::InvalidArgument(super::config::locate_setting_error(
                path, overrides, &message,
            ))
        })?;
        Ok(config)
    }

    /// The student's shape, each stage's budget (those with steps) and the MCL weight.
    fn validate(&self) -> std::result::Result<(), String> {
        let s = &self.student;
        if s.recurrent_unit_layers == 0 || !s.layers.is_multiple_of(s.recurrent_unit_layers) {
            return Err(format!(
                "student.layers ({}) must be a positive multiple of student.recurrent_unit_layers ({})",
                s.layers, s.recurrent_unit_layers
            ));
        }
        if s.embedding_size == Some(0) {
            return Err("student.embedding_size = 0: must be at least 1".into());
        }
        for stage in Stage::ALL {
            let b = budget(self, stage);
            // A stage of 0 steps is skipped, and stage 2 trains only a bottleneck.
            if b.steps == 0 || (stage == Stage::Bottleneck && s.embedding_size.is_none()) {
                continue;
            }
            let key = format!("stages.{}", stage.key());
            if !(b.lr.is_finite() && b.lr > 0.0) {
                return Err(format!("{key}.lr = {}: must be positive and finite", b.lr));
            }
            // Stage 2 fits token embeddings, one sentence at a time if need be; the others
            // are training runs with in-batch negatives.
            let least = if stage == Stage::Bottleneck { 1 } else { 2 };
            if b.batch_pairs < least {
                return Err(format!(
                    "{key}.batch_pairs = {}: must be at least {least}",
                    b.batch_pairs
                ));
            }
            if !(0.0..=1.0).contains(&b.warmup_ratio) {
                return Err(format!(
                    "{key}.warmup_ratio = {}: must be in [0, 1]",
                    b.warmup_ratio
                ));
            }
        }
        if self.stages.contrastive.steps > 0
            && !(self.mcl_weight.is_finite() && self.mcl_weight >= 0.0)
        {
            return Err(format!(
                "mcl_weight = {}: must be finite and at least 0",
                self.mcl_weight
            ));
        }
        Ok(())
    }
}

/// The stages, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Assistant = 1,
    Bottleneck = 2,
    Student = 3,
    Contrastive = 4,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::Assistant,
        Stage::Bottleneck,
        Stage::Student,
        Stage::Contrastive,
    ];

    pub fn from_number(n: usize) -> Result<Self> {
        Self::ALL
            .get(n.wrapping_sub(1))
            .copied()
            .ok_or_else(|| LaseError::InvalidArgument(format!("stage {n}: stages are 1-4")))
    }

    /// The stage's table in a recipe (`[stages.<key>]`).
    pub fn key(self) -> &'static str {
        match self {
            Stage::Assistant => "assistant",
            Stage::Bottleneck => "bottleneck",
            Stage::Student => "student",
            Stage::Contrastive => "contrastive",
        }
    }

    /// The stage's folder inside the run.
    pub fn dir_name(self) -> &'static str {
        match self {
            Stage::Assistant => "1-assistant",
            Stage::Bottleneck => "2-bottleneck",
            Stage::Student => "3-student",
            Stage::Contrastive => "4-contrastive",
        }
    }
}

/// Model folder a stage produces.
pub fn stage_model(out: &Path, stage: Stage) -> PathBuf {
    out.join(stage.dir_name()).join("model")
}

/// The model a stage starts from: the previous stage's output, or, when that stage is
/// skipped (0 steps), the one before it.
fn input_model(config: &MultistageConfig, out: &Path, stage: Stage) -> PathBuf {
    let skipped = |s: Stage| budget(config, s).steps == 0 && s != Stage::Bottleneck;
    let mut previous = stage as usize - 1;
    while previous >= 1 {
        let s = Stage::ALL[previous - 1];
        if !skipped(s) {
            return stage_model(out, s);
        }
        previous -= 1;
    }
    config.assistant_init.clone()
}

fn budget(config: &MultistageConfig, stage: Stage) -> &StageBudget {
    match stage {
        Stage::Assistant => &config.stages.assistant,
        Stage::Bottleneck => &config.stages.bottleneck,
        Stage::Student => &config.stages.student,
        Stage::Contrastive => &config.stages.contrastive,
    }
}

/// The assistant: stage 1's output, or `assistant_init` when stage 1 is skipped.
fn assistant_model(config: &MultistageConfig, out: &Path) -> PathBuf {
    if config.stages.assistant.steps == 0 {
        config.assistant_init.clone()
    } else {
        stage_model(out, Stage::Assistant)
    }
}

/// The ordinary training recipe of stage 1, 3 or 4.
pub fn stage_recipe(
    config: &MultistageConfig,
    out: &Path,
    stage: Stage,
    output_dim: Option<usize>,
) -> TrainConfig {
    let b = budget(config, stage);
    let distillation = match stage {
        Stage::Assistant => {
            DistillationConfig::mse_only(config.teacher.clone(), TeacherSide::Target)
        }
        Stage::Student => {
            DistillationConfig::mse_only(assistant_model(config, out), TeacherSide::Both)
        }
        // Eq. 6-7: l_stage4 = l_1 (MCL) + l_2, l_2 a squared norm per sentence.
        Stage::Contrastive => {
            DistillationConfig::mse_only(config.teacher.clone(), TeacherSide::Target)
                .with("mcl", config.mcl_weight)
                .and_then(|d| d.with("mse_sum_over_dimensions", true))
                .expect("MCL and MSE own these keys")
        }
        Stage::Bottleneck => unreachable!("stage 2 is not a distillation run"),
    };
    TrainConfig {
        model: ModelConfig {
            init_from: Some(input_model(config, out, stage)),
            output_dim,
            ..ModelConfig::default()
        },
        tokenizer: TokenizerConfig::default(),
        data: config.data.clone(),
        objective: ObjectiveConfig {
            distillation: Some(distillation),
            ..ObjectiveConfig::default()
                .with("contrastive", "none")
                .and_then(|o| o.with("xtr", false))
                .expect("the objective owns these keys")
        },
        optimizer: OptimizerConfig {
            lr: b.lr,
            ..OptimizerConfig::default()
        },
        schedule: ScheduleConfig {
            steps: b.steps,
            warmup_steps: (b.steps as f64 * b.warmup_ratio).round() as u64,
            batch_pairs: b.batch_pairs,
            ..ScheduleConfig::default()
        },
        run: config.run.clone(),
    }
}

/// Runs `stages` (all when empty) in order; a finished stage is not run again.
pub fn run_multistage(
    config: &MultistageConfig,
    out: &Path,
    stages: &[Stage],
    options: &TrainOptions,
) -> Result<PathBuf> {
    std::fs::create_dir_all(out).map_err(|e| LaseError::io(out, e))?;
    write_atomic(
        out.join("multistage.toml"),
        toml::to_string_pretty(config)
            .expect("configs serialise")
            .as_bytes(),
    )?;
    let wanted: Vec<Stage> = if stages.is_empty() {
        Stage::ALL.to_vec()
    } else {
        stages.to_vec()
    };
    let mut last = config.assistant_init.clone();
    for stage in wanted {
        let dir = out.join(stage.dir_name());
        let model = dir.join("model");
        if stage != Stage::Bottleneck && budget(config, stage).steps == 0 {
            tracing::info!("stage {}: 0 steps, skipped", stage as usize);
            continue;
        }
        tracing::info!("stage {} -> {}", stage as usize, dir.display());
        match stage {
            Stage::Bottleneck => build_student(config, out, options)?,
            _ => {
                let input = input_model(config, out, stage);
                if !input.join("config.json").exists() {
                    return Err(LaseError::InvalidArgument(format!(
                        "stage {} starts from {}, which does not exist yet: run the stage before it",
                        stage as usize,
                        input.display()
                    )));
                }
                // Stage 1 widens the assistant to the teacher's width if they differ.
                let output_dim = match stage {
                    Stage::Assistant => Some(teacher_width(&config.teacher)?),
                    _ => None,
                };
                let recipe = stage_recipe(config, out, stage, output_dim);
                share_teacher_cache(config, out, stage, &dir)?;
                let summary = train(&recipe, &dir, options)?;
                tracing::info!(
                    "stage {}: {} steps, loss {:?} -> {:?}",
                    stage as usize,
                    summary.steps,
                    summary.first_loss,
                    summary.last_loss
                );
            }
        }
        last = model;
    }
    Ok(last)
}

/// Stages 1 and 4 distil from the same teacher on the same pairs: stage 4 reuses stage
/// 1's cached teacher embeddings (a hard link, or a copy across file systems).
fn share_teacher_cache(
    config: &MultistageConfig,
    out: &Path,
    stage: Stage,
    dir: &Path,
) -> Result<()> {
    if stage != Stage::Contrastive || config.stages.assistant.steps == 0 {
        return Ok(());
    }
    let from = out
        .join(Stage::Assistant.dir_name())
        .join("teacher-target.npy");
    let to = dir.join("teacher-target.npy");
    if from.exists() && !to.exists() {
        std::fs::create_dir_all(dir).map_err(|e| LaseError::io(dir, e))?;
        // The cache's fingerprint (teacher_cache.rs), then the cache, each linked or copied
        // atomically (io::atomic::AtomicFile): a kill leaves either no file or a complete
        // one, and the cache last, whose presence skips this step.
        for name in ["teacher-target.texts", "teacher-target.npy"] {
            let (from, to) = (from.with_file_name(name), to.with_file_name(name));
            if !from.exists() || to.exists() {
                continue;
            }
            if std::fs::hard_link(&from, &to).is_err() {
                let mut source = std::fs::File::open(&from).map_err(|e| LaseError::io(&from, e))?;
                let mut copy = crate::io::atomic::AtomicFile::create(&to)?;
                std::io::copy(&mut source, copy.writer()).map_err(|e| LaseError::io(&to, e))?;
                copy.commit()?;
            }
        }
    }
    Ok(())
}

fn teacher_width(teacher: &Path) -> Result<usize> {
    Ok(SentenceEncoder::load(teacher, Device::Cpu)?.dim())
}

/// Stage 2: the student built from the assistant, its bottleneck aligned with the
/// assistant's token embeddings by MSE (Eq. 3) over the tokens of training sentences.
fn build_student(config: &MultistageConfig, out: &Path, options: &TrainOptions) -> Result<()> {
    let dir = out.join(Stage::Bottleneck.dir_name());
    let model_dir = dir.join("model");
    if model_dir.join("config.json").exists() {
        tracing::info!("stage 2: {} exists, kept", model_dir.display());
        return Ok(());
    }
    let device = options.device;
    let assistant_dir = assistant_model(config, out);
    let assistant = SentenceEncoder::load(&assistant_dir, device).map_err(|e| {
        LaseError::InvalidArgument(format!(
            "stage 2 needs the assistant {}: {e}",
            assistant_dir.display()
        ))
    })?;
    tch::manual_seed(config.run.seed as i64);
    let mut student = student_from_assistant(&assistant, &config.student)?;
    let b = &config.stages.bottleneck;
    if config.student.embedding_size.is_some() && b.steps > 0 {
        let (train_set, _) = training_and_dev_sets(&config.data, config.run.seed)?;
        align_bottleneck(
            &assistant,
            &student,
            &train_set,
            b,
            config.run.seed,
            options,
        )?;
    }
    student.set_normalize(assistant.normalizes());
    std::fs::create_dir_all(&dir).map_err(|e| LaseError::io(&dir, e))?;
    let partial = dir.join("model.partial");
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| LaseError::io(&partial, e))?;
    }
    student.save(&partial)?;
    std::fs::rename(&partial, &model_dir).map_err(|e| LaseError::io(&model_dir, e))
}

/// A student of `shape` whose every parameter that the assistant has under the same
/// name and shape (position/type embeddings, LayerNorms, the first |RU| layers, the
/// head) is copied from it; the V x B table and B x H projection start random.
pub fn student_from_assistant(
    assistant: &SentenceEncoder,
    shape: &StudentShape,
) -> Result<SentenceEncoder> {
    if shape.recurrent_unit_layers > assistant.config().num_hidden_layers {
        return Err(LaseError::InvalidArgument(format!(
            "the recurring unit takes the assistant's first {} layers, but it has {}",
            shape.recurrent_unit_layers,
            assistant.config().num_hidden_layers
        )));
    }
    let mut c = assistant.config().clone();
    c.num_hidden_layers = shape.layers;
    c.recurrent_unit_layers =
        (shape.recurrent_unit_layers != shape.layers).then_some(shape.recurrent_unit_layers);
    c.embedding_size = shape.embedding_size;
    let mut head = assistant.head().clone();
    head.normalize = false;
    let student = SentenceEncoder::new(
        c,
        assistant.tokenizer_json().to_string(),
        assistant.tokenizer().max_length(),
        head,
        assistant.device(),
    )?;
    let source = assistant.var_store().variables();
    let mut targets = student.var_store().variables();
    tch::no_grad(|| {
        for (name, t) in targets.iter_mut() {
            if let Some(s) = source.get(name)
                && s.size() == t.size()
            {
                t.copy_(s);
            }
        }
    });
    Ok(student)
}

/// Trains the student's token table and bottleneck projection so that its token
/// embeddings equal the assistant's (mean squared error over real tokens).
fn align_bottleneck(
    assistant: &SentenceEncoder,
    student: &SentenceEncoder,
    train_set: &crate::data::ParallelCorpus,
    budget: &StageBudget,
    seed: u64,
    options: &TrainOptions,
) -> Result<()> {
    let params: Vec<(String, Tensor)> = student
        .var_store()
        .variables()
        .into_iter()
        .filter(|(n, _)| n.contains("word_embeddings"))
        .collect();
    let mut optimizer = AdamW::new(
        params,
        &OptimizerConfig {
            lr: budget.lr,
            ..OptimizerConfig::default()
        },
    );
    let mut rng = SplitMix64::new(mix_seed(&[seed, 2]));
    let warmup = (budget.steps as f64 * budget.warmup_ratio).round() as u64;
    let bar = if options.progress {
        indicatif::ProgressBar::new(budget.steps)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let pairs = &train_set.pairs;
    if pairs.is_empty() {
        return Err(LaseError::InvalidArgument("no training pairs".into()));
    }
    for step in 0..budget.steps {
        let texts: Vec<&str> = (0..budget.batch_pairs)
            .flat_map(|_| {
                let p = &pairs[rng.below(pairs.len())];
                [p.src.as_str(), p.tgt.as_str()]
            })
            .collect();
        let tokens: Vec<TokenIds> = student.tokenize(&texts)?;
        let items: Vec<&TokenIds> = tokens.iter().collect();
        let batch = student.batch(&items);
        let target = tch::no_grad(|| {
            assistant
                .transformer()
                .embeddings
                .token_embeddings(&batch.input_ids)
        });
        let got = student
            .transformer()
            .embeddings
            .token_embeddings(&batch.input_ids);
        let loss = crate::losses::bottleneck_alignment(&got, &target, &batch.attention_mask);
        loss.backward();
        let lr = learning_rate(
            budget.lr,
            step,
            warmup,
            budget.steps,
            super::config::Decay::Linear,
        );
        optimizer.step(lr);
        optimizer.zero_grad();
        if step == 0 || (step + 1) % 50 == 0 || step + 1 == budget.steps {
            tracing::info!(
                "stage 2 step {}: token-embedding MSE {:.5}",
                step + 1,
                loss.double_value(&[])
            );
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    /// Stage 4 weights MSE as Eq. 6 writes it (a squared norm per sentence); stages 1 and
    /// 3 keep the element mean of sentence-transformers' MSELoss.
    #[test]
    fn only_stage_4_sums_mse_over_dimensions() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let config = MultistageConfig::from_file(&root.join("configs/multistage/small.toml"))
            .expect("the shipped multistage recipe parses");
        let out = Path::new("runs/unused");
        let sums = |stage| {
            stage_recipe(&config, out, stage, None)
                .objective
                .distillation
                .expect("a distillation stage")
                .settings
                .get("mse_sum_over_dimensions")
                .and_then(toml::Value::as_bool)
                .unwrap_or(false)
        };
        assert!(sums(Stage::Contrastive));
        assert!(!sums(Stage::Assistant) && !sums(Stage::Student));
    }

    /// A bad stage setting is refused when the recipe is read, before stage 1 runs, named
    /// as the recipe writes it with its line (or its --set); a stage of 0 steps is not
    /// checked, and the shipped recipe passes.
    #[test]
    fn stage_settings_are_checked_when_read_and_named_with_their_line() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let shipped = std::fs::read_to_string(root.join("configs/multistage/small.toml")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recipe.toml");
        let read = |text: &str, sets: &[&str]| {
            std::fs::write(&path, text).unwrap();
            let overrides: Vec<RecipeOverride> = sets.iter().map(|s| s.parse().unwrap()).collect();
            MultistageConfig::from_file_with(&path, &overrides).map(|_| ())
        };
        read(&shipped, &[]).expect("the shipped recipe passes");
        let contrastive = shipped.find("[stages.contrastive]").unwrap();
        let lr_line = contrastive + shipped[contrastive..].find("lr = 2e-4").unwrap();
        let lr_zero = format!("{}lr = 0.0{}", &shipped[..lr_line], &shipped[lr_line + 9..]);
        let err = read(&lr_zero, &[]).unwrap_err().to_string();
        let at = 1 + shipped[..lr_line].lines().count();
        assert!(
            err.contains(&format!(
                "recipe.toml:{at}: stages.contrastive.lr = 0: must be positive"
            )),
            "{err}"
        );
        let err = read(&shipped, &["stages.student.batch_pairs=1"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("stages.student.batch_pairs = 1: must be at least 2")
                && err.contains("--set stages.student.batch_pairs"),
            "{err}"
        );
        let err = read(&shipped, &["stages.assistant.warmup_ratio=1.5"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("stages.assistant.warmup_ratio = 1.5: must be in [0, 1]"),
            "{err}"
        );
        let err = read(&shipped, &["mcl_weight=-1.0"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("with --set mcl_weight: mcl_weight = -1: must be finite and at least 0"),
            "{err}"
        );
        let negative = shipped.replace("mcl_weight = 1.0", "mcl_weight = -1.0");
        let err = read(&negative, &[]).unwrap_err().to_string();
        assert!(err.contains("recipe.toml:13: mcl_weight = -1"), "{err}");
        read(&negative, &["stages.contrastive.steps=0"]).expect("no stage 4, no MCL");
        let err = read(&shipped, &["student.layers=3"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "with --set student.layers: student.layers (3) must be a positive multiple"
            ),
            "{err}"
        );
        let odd = shipped.replace("layers = 4\n", "layers = 5\n");
        let err = read(&odd, &[]).unwrap_err().to_string();
        // A check of two keys at once names the recipe, not one line.
        assert!(
            err.contains("recipe.toml: student.layers (5) must be a positive multiple"),
            "{err}"
        );
        // Stage 2 fits one sentence at a time if asked; a skipped stage is not checked.
        read(&shipped, &["stages.bottleneck.batch_pairs=1"]).expect("stage 2 takes batches of 1");
        read(
            &shipped,
            &["stages.contrastive.steps=0", "stages.contrastive.lr=0.0"],
        )
        .expect("a skipped stage's budget is not read");
    }

    /// Stage 3 is Eq. 4, (1/|N|) Σ_i [(h_A^si - h_S^si)² + (h_S^ti - h_A^ti)²]: the student's
    /// source vector regresses onto the assistant's source vector and its target vector
    /// onto the assistant's target vector (element means, as stages 1 and 3 use).
    #[test]
    fn stage_3_regresses_each_student_side_onto_the_assistants_same_side() {
        use crate::train::objective::{BatchContext, Objective};
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let config = MultistageConfig::from_file(&root.join("configs/multistage/small.toml"))
            .expect("the shipped multistage recipe parses");
        let recipe = stage_recipe(&config, Path::new("runs/unused"), Stage::Student, None);
        let distillation = recipe.objective.distillation.as_ref().unwrap();
        // The trainer caches the assistant's vectors of both sides for this recipe.
        assert_eq!(distillation.teacher_side, TeacherSide::Both);
        let (n, d) = (5i64, 4i64);
        let opts = (Kind::Double, Device::Cpu);
        tch::manual_seed(3);
        let randn = || Tensor::randn([n, d], opts);
        let (a_s, a_t, s_s, s_t) = (randn(), randn(), randn(), randn());
        let objective = Objective::new(
            &recipe.objective,
            d as usize,
            1,
            10,
            Some(d as usize),
            Device::Cpu,
        )
        .unwrap();
        let langs = vec![0i64; n as usize];
        let ctx = BatchContext::new(&langs, &langs, Device::Cpu)
            .with_teacher(Some(a_s.shallow_clone()), Some(a_t.shallow_clone()));
        let out = objective.loss(&s_s, &s_t, &ctx);
        let mut eq4 = 0.0;
        for i in 0..n {
            for j in 0..d {
                eq4 += (a_s.double_value(&[i, j]) - s_s.double_value(&[i, j])).powi(2)
                    + (s_t.double_value(&[i, j]) - a_t.double_value(&[i, j])).powi(2);
            }
        }
        eq4 /= (n * d) as f64;
        assert_eq!(out.parts.len(), 1, "{:?}", out.parts);
        let (name, got) = out.parts[0];
        assert_eq!(name, "mse");
        assert!((got - eq4).abs() < 1e-9, "stage 3 loss {got}, Eq. 4 {eq4}");
    }
}
