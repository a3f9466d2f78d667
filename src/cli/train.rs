//! `lase train` and `lase distill` (one recipe, or `multistage`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use lase::model::Precision;

/// `--set` changes to a recipe, shared by the commands that read one.
#[derive(Args, Clone)]
pub struct RecipeOverrideArgs {
    /// Change one recipe key for this run (repeatable): KEY=VALUE, the value read as TOML
    /// (schedule.steps=300, optimizer.lr=2e-4); KEY= removes the key (back to its default).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<lase::train::RecipeOverride>,
}

/// `lase recipe --config RECIPE [--set KEY=VALUE]...`.
#[derive(Args)]
pub struct RecipeArgs {
    /// The recipe (TOML) of `lase train` or `lase distill`.
    #[arg(long)]
    config: PathBuf,
    #[command(flatten)]
    overrides: RecipeOverrideArgs,
}

/// Prints the recipe as a run would train it: what `config.toml` in its run folder holds.
pub fn recipe(args: RecipeArgs) -> Result<()> {
    let config = lase::train::TrainConfig::from_file_with(&args.config, &args.overrides.set)?;
    print!("{}", config.to_toml());
    Ok(())
}

/// How one process of a training run runs, shared by `lase train` and `lase distill`.
#[derive(Args)]
pub struct RunArgs {
    /// Stop after this many steps in this process (checkpointed; run again to resume).
    #[arg(long)]
    stop_after: Option<u64>,
    /// Stop at the first step past this many seconds after the process started, reading
    /// the data included (checkpointed; run again to resume): fits a run into a
    /// scheduler's or a lent GPU's time slot.
    #[arg(long)]
    time_limit: Option<u64>,
    /// Mixed precision: f32, or bf16 (bfloat16 matrix products over float32 weights,
    /// as torch.autocast; faster on GPUs and AMX / AVX512-BF16 CPUs). A resumed run may
    /// change it.
    #[arg(long, default_value = "f32")]
    precision: Precision,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    overrides: RecipeOverrideArgs,
}

#[derive(Args)]
pub struct TrainArgs {
    /// The recipe (TOML).
    #[arg(long)]
    config: PathBuf,
    /// Output folder: checkpoint/, metrics.jsonl, metrics.svg, model/. Resumed when it
    /// holds a checkpoint of the same recipe (only run.log_every, run.eval_every and
    /// run.checkpoint_every may change; another change is refused, naming it).
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    run: RunArgs,
}

/// `lase distill --config RECIPE --out DIR`, or `lase distill multistage ...`.
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct DistillArgs {
    #[command(subcommand)]
    method: Option<DistillMethod>,
    /// The recipe (TOML) with an [objective.distillation] section.
    #[arg(long, required = true)]
    config: Option<PathBuf>,
    /// Output folder (as lase train); resumed when it holds a checkpoint of the recipe.
    #[arg(long, required = true)]
    out: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
pub enum DistillMethod {
    /// Multi-stage distillation (multistage-distillation.txt): 1 teacher -> assistant
    /// (MSE), 2 student built from the assistant (recurring unit, embedding bottleneck
    /// aligned by MSE), 3 assistant -> student (MSE), 4 MCL + MSE. Each stage has its own
    /// folder under --out and resumes; --stage runs chosen stages only.
    Multistage(MultistageArgs),
}

#[derive(Args)]
pub struct MultistageArgs {
    /// The multi-stage recipe (TOML; configs/multistage/*.toml).
    #[arg(long)]
    config: PathBuf,
    /// Run folder: 1-assistant/, 2-bottleneck/, 3-student/, 4-contrastive/.
    #[arg(long)]
    out: PathBuf,
    /// Run only these stages (1-4, repeatable); default: every stage not yet finished.
    #[arg(long)]
    stage: Vec<usize>,
    /// Mixed precision of every training stage: f32, or bf16 (bfloat16 matrix products
    /// over float32 weights, as torch.autocast).
    #[arg(long, default_value = "f32")]
    precision: Precision,
    /// Do not draw progress bars.
    #[arg(long)]
    quiet: bool,
    #[command(flatten)]
    overrides: RecipeOverrideArgs,
}

pub fn train(args: TrainArgs, device: tch::Device) -> Result<()> {
    let config = lase::train::TrainConfig::from_file_with(&args.config, &args.run.overrides.set)?;
    run_recipe(&config, &args.config, &args.out, &args.run, device)
}

/// When this process started: `--time-limit` is a time slot, and reading the data and
/// the teacher's vectors take part of it (on 2026-11-26 three runs sharing a GPU machine
/// spent 153 s of a 590 s slot before their first step).
static PROCESS_START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Records the process's start (main calls it first).
pub fn mark_process_start() {
    PROCESS_START.get_or_init(std::time::Instant::now);
}

fn process_start() -> std::time::Instant {
    *PROCESS_START.get_or_init(std::time::Instant::now)
}

/// Trains (or resumes) a parsed recipe into `out` and prints the run's summary.
fn run_recipe(
    config: &lase::train::TrainConfig,
    config_path: &std::path::Path,
    out: &std::path::Path,
    run: &RunArgs,
    device: tch::Device,
) -> Result<()> {
    let options = lase::train::TrainOptions {
        device,
        stop_after_steps: run.stop_after,
        deadline: run
            .time_limit
            .map(|s| {
                lase::deadline::Deadline::since(process_start(), std::time::Duration::from_secs(s))
                    .with_context(|| format!("--time-limit {s}: too far in the future"))
            })
            .transpose()?,
        progress: !run.quiet,
        precision: run.precision,
    };
    let summary = lase::train::train(config, out, &options)
        .with_context(|| format!("training {}", config_path.display()))?;
    println!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}

pub fn multistage(args: MultistageArgs, device: tch::Device) -> Result<()> {
    use lase::train::multistage::{MultistageConfig, Stage, run_multistage};
    let config = MultistageConfig::from_file_with(&args.config, &args.overrides.set)?;
    let stages = args
        .stage
        .iter()
        .map(|&n| Stage::from_number(n))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let options = lase::train::TrainOptions {
        device,
        stop_after_steps: None,
        deadline: None,
        progress: !args.quiet,
        precision: args.precision,
    };
    let model = run_multistage(&config, &args.out, &stages, &options)
        .with_context(|| format!("multi-stage distillation {}", args.config.display()))?;
    println!("model: {}", model.display());
    Ok(())
}

/// `lase distill`: a recipe with an [objective.distillation] section (trained as `lase
/// train`), or `lase distill multistage`.
pub fn distill(args: DistillArgs, device: tch::Device) -> Result<()> {
    if let Some(DistillMethod::Multistage(args)) = args.method {
        return multistage(args, device);
    }
    let (Some(config_path), Some(out)) = (args.config, args.out) else {
        anyhow::bail!("lase distill needs --config and --out (or a method: multistage)");
    };
    let config = lase::train::TrainConfig::from_file_with(&config_path, &args.run.overrides.set)?;
    anyhow::ensure!(
        config.objective.distillation.is_some(),
        "{}: no [objective.distillation] section: nothing to distill from (use lase train)",
        config_path.display()
    );
    run_recipe(&config, &config_path, &out, &args.run, device)
}
