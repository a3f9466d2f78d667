//! `lase export` and `lase reduce-dim`: model folders in, model folders out.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use lase::io::atomic::check_output_apart;
use lase::io::safetensors::StorageDtype;
use lase::model::SentenceEncoder;

#[derive(Args)]
pub struct ReduceDimArgs {
    /// Model folder to read.
    #[arg(long)]
    model: PathBuf,
    /// Output dimension.
    #[arg(long)]
    to: usize,
    /// Sentences to fit the projection on, one per line (plain or .gz).
    #[arg(long)]
    sample: PathBuf,
    /// Use at most this many sentences of --sample (its first lines).
    #[arg(long, default_value_t = 20000)]
    max_sentences: usize,
    /// Folder to write.
    #[arg(long)]
    output: PathBuf,
    /// Stored weight dtype: f16 or f32.
    #[arg(long, default_value = "f32")]
    dtype: StorageDtype,
}

#[derive(Args)]
pub struct ShrinkArgs {
    /// Model folder to read (BERT family, transformer at the folder's root).
    #[arg(long)]
    model: PathBuf,
    /// Folder to write.
    #[arg(long)]
    output: PathBuf,
    /// Layers to keep, comma-separated increasing indices (e.g. 0,2,4); default all.
    #[arg(long, value_delimiter = ',')]
    layers: Option<Vec<usize>>,
    /// Feed-forward neurons to keep per layer (the strongest by weight norms); default all.
    #[arg(long)]
    intermediate_size: Option<usize>,
    /// Prune the WordPiece vocabulary to at most this many pieces: special and
    /// single-character pieces always, then the pieces --vocab-sample uses, most frequent
    /// first (pieces it never uses are dropped even when there is room).
    #[arg(long, requires = "vocab_sample")]
    vocab_size: Option<usize>,
    /// Sentences whose tokenisation chooses the pieces, one per line (plain or .gz).
    #[arg(long, requires = "vocab_size")]
    vocab_sample: Option<PathBuf>,
}

#[derive(Args)]
pub struct ExportArgs {
    /// Model folder to read.
    #[arg(long)]
    model: PathBuf,
    /// Folder to write (sentence-transformers layout).
    #[arg(long)]
    output: PathBuf,
    /// Stored weight dtype: f16 or f32.
    #[arg(long, default_value = "f16")]
    dtype: StorageDtype,
}

#[derive(Args)]
pub struct InterpolateArgs {
    /// The model at alpha 0 (its tokenizer and head files are copied).
    #[arg(long)]
    model: PathBuf,
    /// The model at alpha 1: the same parameters, shapes and tokenizer, or --model's
    /// tokenizer without the pieces an extension appended (their rows stay --model's).
    #[arg(long)]
    to: PathBuf,
    /// Where on the line: 0 keeps --model, 1 gives --to.
    #[arg(long)]
    alpha: f64,
    /// Folder to write (sentence-transformers layout).
    #[arg(long)]
    output: PathBuf,
    /// Stored weight dtype: f16 or f32.
    #[arg(long, default_value = "f16")]
    dtype: StorageDtype,
}

pub fn interpolate(args: InterpolateArgs) -> Result<()> {
    check_output_apart(&args.output, &[&args.model, &args.to])?;
    let encoder = lase::interpolate::interpolate(&args.model, &args.to, args.alpha)?;
    encoder.save_as(&args.output, args.dtype)?;
    println!(
        "wrote {}: {:.3} x {} + {:.3} x {} ({} weights, {:.1} MB on disk)",
        args.output.display(),
        1.0 - args.alpha,
        args.model.display(),
        args.alpha,
        args.to.display(),
        args.dtype,
        walk_size(&args.output) as f64 / 1e6
    );
    Ok(())
}

pub fn reduce_dim(args: ReduceDimArgs, device: tch::Device) -> Result<()> {
    check_output_apart(&args.output, &[&args.model])?;
    lase::io::atomic::check_dir_writable(&args.output)?;
    let dtype = args.dtype;
    let mut encoder = SentenceEncoder::load(&args.model, device)
        .with_context(|| format!("loading model {}", args.model.display()))?;
    let from = encoder.dim();
    anyhow::ensure!(
        (1..=from).contains(&args.to),
        "--to {}: {} has {from} dimensions (--to must be in [1, {from}])",
        args.to,
        args.model.display()
    );
    let mut sentences = lase::io::text::read_lines(&args.sample)?;
    sentences.retain(|s| !s.trim().is_empty());
    anyhow::ensure!(
        sentences.len() >= 2,
        "{}: {} non-empty lines; the PCA needs at least 2 sample sentences",
        args.sample.display(),
        sentences.len()
    );
    anyhow::ensure!(
        args.max_sentences >= 2,
        "--max-sentences {}: the PCA needs at least 2 sample sentences",
        args.max_sentences
    );
    sentences.truncate(args.max_sentences);
    let options = lase::inference::EncodeOptions::for_device(device);
    let (reduced, kept) =
        lase::reduce_dim::reduce_dimension(&mut encoder, &sentences, args.to, &options)
            .with_context(|| format!("fitting the PCA on {}", args.sample.display()))?;
    reduced.save_as(&args.output, dtype)?;
    println!(
        "wrote {}: {from} -> {} dimensions, PCA fitted on {} sentences keeps {:.1}% of the variance",
        args.output.display(),
        reduced.dim(),
        sentences.len(),
        100.0 * kept
    );
    Ok(())
}

pub fn shrink(args: ShrinkArgs) -> Result<()> {
    check_output_apart(&args.output, &[&args.model])?;
    let vocabulary = match (args.vocab_size, &args.vocab_sample) {
        (Some(size), Some(sample)) => Some((size, lase::io::text::read_lines(sample)?)),
        _ => None,
    };
    let options = lase::shrink::ShrinkOptions {
        layers: args.layers,
        intermediate_size: args.intermediate_size,
        vocabulary,
    };
    let report = lase::shrink::shrink_model(&args.model, &options, &args.output)
        .with_context(|| format!("shrinking {}", args.model.display()))?;
    println!(
        "wrote {}: layers {:?} of the model's, feed-forward width {}, {:.1}M -> {:.1}M parameters",
        args.output.display(),
        report.layers,
        report.intermediate_size,
        report.parameters_before as f64 / 1e6,
        report.parameters_after as f64 / 1e6
    );
    if let Some(v) = &report.vocabulary {
        println!(
            "vocabulary {} -> {} pieces ({} always kept); the {} sample sentences used {} pieces, {:.2}% of their tokens kept their piece",
            v.old_vocab_size,
            v.new_vocab_size,
            v.always_kept,
            v.sample_sentences,
            v.pieces_used_by_sample,
            100.0 * v.sample_token_coverage
        );
    }
    Ok(())
}

pub fn export(args: ExportArgs) -> Result<()> {
    check_output_apart(&args.output, &[&args.model])?;
    let dtype = args.dtype;
    let encoder = SentenceEncoder::load(&args.model, tch::Device::Cpu)
        .with_context(|| format!("loading model {}", args.model.display()))?;
    encoder.save_as(&args.output, dtype)?;
    let bytes: u64 = walk_size(&args.output);
    println!(
        "wrote {} ({} weights, {}-d output, {:.1} MB on disk)",
        args.output.display(),
        args.dtype,
        encoder.dim(),
        bytes as f64 / 1e6
    );
    Ok(())
}

pub fn walk_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk_size(&path)
            } else {
                e.metadata().map_or(0, |m| m.len())
            }
        })
        .sum()
}
