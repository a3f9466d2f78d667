//! The `lase` command line: a thin layer that parses arguments and calls the library.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use lase::embed::{EmbedFileOptions, embed_file};
use lase::model::{Precision, SentenceEncoder};
use lase::runtime::{DeviceChoice, resolve_device, set_threads};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "lase",
    version,
    about = "Language-agnostic sentence embeddings: train, evaluate, mine, embed, serve"
)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct RuntimeArgs {
    /// Device: auto, cpu, cuda, cuda:N.
    #[arg(long, global = true, default_value = "auto")]
    device: DeviceChoice,
    /// CPU threads for libtorch (0 = one per core).
    #[arg(long, global = true, default_value_t = 0)]
    threads: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Embed a text file (one sentence per line, plain or .gz) into a float32 .npy matrix.
    Embed(EmbedArgs),
}

#[derive(Args)]
struct EmbedArgs {
    /// Model folder (Hugging Face / sentence-transformers layout).
    #[arg(long)]
    model: PathBuf,
    /// Input text, one sentence per line; line i becomes row i.
    #[arg(long)]
    input: PathBuf,
    /// Output .npy file (default: the input path with .npy appended).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Sentences per forward pass.
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// Truncate sentences to this many tokens (default: the model's max_seq_length).
    #[arg(long)]
    max_length: Option<usize>,
    /// L2-normalise the vectors (models with a Normalize module always do).
    #[arg(long)]
    normalize: bool,
    /// Numeric precision: f32 (default, exact) or bf16 (faster on AMX CPUs and GPUs).
    #[arg(long, default_value = "f32")]
    precision: Precision,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
}

fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_env("LASE_LOG").unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    set_threads(cli.runtime.threads);
    let device = resolve_device(cli.runtime.device)?;
    match cli.command {
        Command::Embed(args) => embed(args, device),
    }
}

fn embed(args: EmbedArgs, device: tch::Device) -> Result<()> {
    let mut encoder = SentenceEncoder::load(&args.model, device)
        .with_context(|| format!("loading model {}", args.model.display()))?;
    if let Some(max_length) = args.max_length {
        encoder.set_max_seq_length(max_length)?;
    }
    if args.normalize {
        encoder.set_normalize(true);
    }
    encoder.set_precision(args.precision);
    let output = args.output.unwrap_or_else(|| {
        let mut name = args.input.clone().into_os_string();
        name.push(".npy");
        PathBuf::from(name)
    });
    let options = EmbedFileOptions {
        batch_size: args.batch_size,
        progress: !args.quiet,
        ..Default::default()
    };
    let summary = embed_file(&encoder, &args.input, &output, &options)?;
    println!(
        "wrote {} x {} float32 to {} ({} sentences, {} tokens, {:.1} s, {:.0} sentences/s, {:?} on {:?})",
        summary.rows,
        summary.dim,
        summary.output.display(),
        summary.rows,
        summary.tokens,
        summary.seconds,
        summary.sentences_per_second(),
        encoder.precision(),
        device,
    );
    Ok(())
}
