//! The `lase` command line: [`Cli`] parses, [`run`] calls the library; one file per
//! command (group).

pub mod check_leakage;
pub mod dev_score;
pub mod embed;
pub mod eval;
pub mod info;
pub mod mine;
pub mod model_load;
pub mod model_tools;
pub mod serve;
pub mod shard;
pub mod tokenizer;
pub mod train;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use lase::runtime::{DeviceChoice, resolve_device, set_threads};

/// clap parser for counts that must be at least 1 (batch sizes, alignments).
pub fn at_least_one(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// clap parser for a whole number in [min, max]: past the top a count is a typo, not a
/// setting (a list of 10^12 neighbours, an HNSW graph of 10^8 edges per node), refused
/// here naming its flag rather than aborting in the allocator.
pub fn whole_number_in(
    min: usize,
    max: usize,
) -> impl Fn(&str) -> std::result::Result<usize, String> + Clone {
    move |s: &str| {
        let v: usize = s
            .parse()
            .map_err(|_| format!("{s:?} is not a whole number"))?;
        if (min..=max).contains(&v) {
            Ok(v)
        } else {
            Err(format!("{v} is not in [{min}, {max}]"))
        }
    }
}

/// The most neighbours a k-NN list keeps (`lase mine -k`, `lase shard knn -k`): far past
/// the margin's k (4 in LASER) and any recall curve's.
pub const MAX_NEIGHBOURS: usize = 65_536;

/// clap parser for a finite number (a threshold: NaN would keep no pair, silently).
pub fn finite_f32(s: &str) -> std::result::Result<f32, String> {
    match s.parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(v) => Err(format!("{v} is not a finite number")),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Parser)]
#[command(
    name = "lase",
    version,
    about = "Language-agnostic sentence embeddings: train, evaluate, mine, embed, serve"
)]
pub struct Cli {
    #[command(flatten)]
    pub runtime: RuntimeArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Args)]
pub struct RuntimeArgs {
    /// Device: auto, cpu, cuda, cuda:N.
    #[arg(long, global = true, default_value = "auto")]
    device: DeviceChoice,
    /// CPU threads for libtorch (0 = one per core; at most 65,536).
    #[arg(long, global = true, default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=65_536))]
    threads: u32,
}

#[derive(Subcommand)]
pub enum Command {
    /// Embed a text file (one sentence per line, plain or .gz) into a float32 .npy matrix.
    Embed(embed::EmbedArgs),
    /// Mine parallel sentences from two monolingual files (margin-scored k-NN, as LASER).
    Mine(mine::MineArgs),
    /// Sharded mining, step by step (for cluster jobs): init, embed, knn, mine. The
    /// pairs equal lase mine's on the same corpora.
    #[command(subcommand)]
    Shard(shard::ShardCommand),
    /// Evaluate a model on benchmarks: tatoeba, flores, bucc, pool, sts, sib; bitext for your own test sets.
    Eval(eval::EvalArgs),
    /// Score a model on a recipe's dev split (never a test set): P@1 among each
    /// language's own dev pairs, as training logs it, and among all the split's targets.
    DevScore(dev_score::DevScoreArgs),
    /// Train an encoder from a TOML recipe (configs/ems.toml, ...); resumes a killed run.
    Train(train::TrainArgs),
    /// Distill a student from a teacher: a recipe whose [objective.distillation] names the
    /// teacher and weights MSE (multilingual distillation), LEALLA feature/logit terms,
    /// soft contrastive (+TCM) and MCL. Teacher embeddings are cached in --out.
    Distill(train::DistillArgs),
    /// Print a train/distill recipe as it trains: its `extends` chain merged, --set
    /// applied, every omitted key at its default (what the run folder's config.toml holds).
    Recipe(train::RecipeArgs),
    /// Tokenizer tools.
    #[command(subcommand)]
    Tokenizer(tokenizer::TokenizerCommand),
    /// Copy a model folder, storing the weights as f16 (half the size) or f32.
    Export(model_tools::ExportArgs),
    /// Reduce a model's output dimension with a PCA projection fitted on sample
    /// sentences, appended as a dense layer (the encoder is unchanged).
    ReduceDim(model_tools::ReduceDimArgs),
    /// Interpolate two models of one architecture and vocabulary: (1 - alpha) * MODEL +
    /// alpha * TO, every weight (WiSE-FT), e.g. a run's weights back towards its start.
    /// MODEL may extend TO's vocabulary: its appended pieces' rows are kept.
    Interpolate(model_tools::InterpolateArgs),
    /// Copy a BERT-family model folder keeping some of its layers, feed-forward neurons
    /// and vocabulary pieces: the starting point of a thin student.
    Shrink(model_tools::ShrinkArgs),
    /// Check that a recipe's training data shares no sentence with the test sets
    /// `lase eval` uses; exits with an error listing the first leaks.
    CheckLeakage(check_leakage::CheckLeakageArgs),
    /// Serve a model over HTTP: /embed (TEI), /v1/embeddings (OpenAI), /similarity,
    /// /mine, /health, /info, /metrics.
    Serve(serve::ServeArgs),
    /// What this machine offers lase (CPU and flags, threads, GPUs) and which kernels and
    /// precision it picks; with --model, the model's shape and its `auto` precision.
    Info(info::InfoArgs),
}

impl Command {
    /// Whether the command is the long-running server (which must survive closed pipes).
    pub fn is_server(&self) -> bool {
        matches!(self, Command::Serve(_))
    }
}

/// Runs the parsed command on the chosen device.
pub fn run(cli: Cli) -> Result<()> {
    set_threads(cli.runtime.threads as usize);
    let device = resolve_device(cli.runtime.device)?;
    match cli.command {
        Command::Embed(args) => embed::embed(args, device),
        Command::Mine(args) => mine::mine(args, device),
        Command::Shard(command) => shard::run(command, device),
        Command::Eval(args) => eval::eval(args, device),
        Command::DevScore(args) => dev_score::dev_score(args, device),
        Command::Train(args) => train::train(args, device),
        Command::Distill(args) => train::distill(args, device),
        Command::Recipe(args) => train::recipe(args),
        Command::Tokenizer(tokenizer::TokenizerCommand::Train(args)) => {
            tokenizer::tokenizer_train(args)
        }
        Command::Tokenizer(tokenizer::TokenizerCommand::Coverage(args)) => {
            tokenizer::tokenizer_coverage(args)
        }
        Command::Tokenizer(tokenizer::TokenizerCommand::Extend(args)) => {
            tokenizer::tokenizer_extend(args)
        }
        Command::Serve(args) => serve::serve(args, device),
        Command::CheckLeakage(args) => check_leakage::check_leakage(args),
        Command::Export(args) => model_tools::export(args),
        Command::ReduceDim(args) => model_tools::reduce_dim(args, device),
        Command::Shrink(args) => model_tools::shrink(args),
        Command::Interpolate(args) => model_tools::interpolate(args),
        Command::Info(args) => info::info(args, device),
    }
}
