//! `lase embed`: a text file into a float32 .npy matrix.

use std::path::PathBuf;

use super::model_load::{PrecisionArgs, load_encoder};
use anyhow::Result;
use clap::Args;
use lase::embed::{EmbedFileOptions, embed_file};

#[derive(Args)]
pub struct EmbedArgs {
    /// Model folder (Hugging Face / sentence-transformers layout).
    #[arg(long)]
    model: PathBuf,
    /// Input text, one sentence per line; line i becomes row i.
    #[arg(long)]
    input: PathBuf,
    /// Output .npy file (default: the input path with .npy appended).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Most sentences per forward pass.
    #[arg(long, default_value_t = 32, value_parser = super::at_least_one)]
    batch_size: usize,
    /// Most padded tokens per forward pass (default: 512 on CPU, 32768 on GPU).
    #[arg(long)]
    max_batch_tokens: Option<usize>,
    /// Forward passes run concurrently, libtorch threads divided among them (default: one
    /// per thread on CPU, 1 on GPU).
    #[arg(long)]
    workers: Option<usize>,
    /// Truncate sentences to this many tokens (default: the model's max_seq_length).
    #[arg(long)]
    max_length: Option<usize>,
    /// L2-normalise the vectors (models with a Normalize module always do).
    #[arg(long)]
    normalize: bool,
    #[command(flatten)]
    precision: PrecisionArgs,
    /// Do not draw a progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn embed(args: EmbedArgs, device: tch::Device) -> Result<()> {
    let mut encoder = load_encoder(&args.model, device, args.precision.precision)?;
    if let Some(max_length) = args.max_length {
        encoder.set_max_seq_length(max_length)?;
    }
    if args.normalize {
        encoder.set_normalize(true);
    }
    let output = args.output.unwrap_or_else(|| {
        let mut name = args.input.clone().into_os_string();
        name.push(".npy");
        PathBuf::from(name)
    });
    let mut options = EmbedFileOptions::for_device(device);
    options.encode.batch_size = args.batch_size.max(1);
    if let Some(tokens) = args.max_batch_tokens {
        options.encode.max_batch_tokens = tokens.max(1);
    }
    if let Some(workers) = args.workers {
        options.encode.workers = workers.max(1);
    }
    options.progress = !args.quiet;
    let summary = embed_file(&encoder, &args.input, &output, &options)?;
    println!(
        "wrote {} x {} float32 to {} ({} sentences, {} tokens, {:.3} s, {:.0} sentences/s, {:?} on {:?})",
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
