//! Embedding a text file into a `.npy` matrix, streaming: the file is read in chunks,
//! each chunk is length-sorted into batches, and rows are written in input order, so
//! memory is bounded by the chunk, not the corpus. Line i of the input is row i of the
//! output (empty lines included).

use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::Result;
use crate::inference::{EncodeOptions, embed_sentences};
use crate::io::npy::NpyWriter;
use crate::io::text::LineReader;
use crate::model::SentenceEncoder;

/// How to embed a file.
#[derive(Clone, Debug)]
pub struct EmbedFileOptions {
    /// Batching and parallelism of the forward passes.
    pub encode: EncodeOptions,
    /// Sentences read and length-sorted together (bounds memory).
    pub chunk_size: usize,
    /// Draw a progress bar on stderr.
    pub progress: bool,
}

impl EmbedFileOptions {
    pub fn for_device(device: tch::Device) -> Self {
        Self {
            encode: EncodeOptions::for_device(device),
            chunk_size: crate::inference::EMBED_CHUNK,
            progress: true,
        }
    }
}

/// What [`embed_file`] wrote.
#[derive(Clone, Debug)]
pub struct EmbedSummary {
    pub output: PathBuf,
    pub rows: usize,
    pub dim: usize,
    pub tokens: usize,
    pub seconds: f64,
}

impl EmbedSummary {
    pub fn sentences_per_second(&self) -> f64 {
        self.rows as f64 / self.seconds.max(1e-9)
    }
}

/// Embeds every line of `input` (plain or gzip text) into `output` (float32 `.npy`).
pub fn embed_file(
    encoder: &SentenceEncoder,
    input: &Path,
    output: &Path,
    options: &EmbedFileOptions,
) -> Result<EmbedSummary> {
    let start = Instant::now();
    let mut reader = LineReader::open(input)?;
    let dim = encoder.dim();
    let mut writer = NpyWriter::create(output, dim)?;
    let total = reader.progress().1;
    let bar = if options.progress {
        ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    // A pipe has no size: bytes read so far, no bar or ETA.
    let template = if total.is_some() {
        "{spinner} embedding [{elapsed_precise}] [{wide_bar}] {bytes}/{total_bytes} {msg} (ETA {eta})"
    } else {
        "{spinner} embedding [{elapsed_precise}] {bytes} read {msg}"
    };
    bar.set_style(
        ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    let mut tokens_seen = 0usize;
    loop {
        let lines = reader.next_chunk(options.chunk_size.max(1))?;
        if lines.is_empty() {
            break;
        }
        let embedded = embed_sentences(encoder, &lines, &options.encode)?;
        tokens_seen += embedded.tokens;
        writer.write_rows(&embedded.vectors)?;
        bar.set_position(reader.progress().0);
        let secs = start.elapsed().as_secs_f64();
        bar.set_message(format!(
            "{} sentences, {:.0}/s",
            writer.rows(),
            writer.rows() as f64 / secs.max(1e-9)
        ));
    }
    bar.finish_and_clear();
    let rows = writer.rows();
    let output = writer.finish()?;
    Ok(EmbedSummary {
        output,
        rows,
        dim,
        tokens: tokens_seen,
        seconds: start.elapsed().as_secs_f64(),
    })
}
