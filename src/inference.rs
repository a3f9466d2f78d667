//! Inference scheduling: how tokenized sentences become forward passes.
//!
//! Sentences are sorted by token count (longest first) and cut into batches by two
//! limits: at most `batch_size` sentences and at most `max_batch_tokens` padded tokens
//! (sentences x longest). On CPU, `workers` threads each run whole batches with one
//! libtorch thread apiece: on 2 cores that measured ~15% faster than one batch at a time
//! with 2 intra-op threads (docs/benchmarks.md), and small batches (~512 tokens) keep
//! activations in cache. On a GPU one worker with large batches is right.
//!
//! Names: `encode*` return a tensor ([`SentenceEncoder::encode`], [`encode_tokens`]), as
//! sentence-transformers' `encode`; `embed*` return row-major `f32` rows ([`embed_tokens`],
//! [`embed_sentences`], [`embed_with_progress`]), which files, search and the server use.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tch::{Device, Kind, Tensor};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::error::Result;
use crate::model::SentenceEncoder;
use crate::tokenizer::TokenIds;

/// Batching and parallelism for [`SentenceEncoder::encode_with`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EncodeOptions {
    /// Most sentences in one forward pass.
    pub batch_size: usize,
    /// Most padded tokens (sentences x longest sentence) in one forward pass; a single
    /// sentence longer than this still gets a batch of its own.
    pub max_batch_tokens: usize,
    /// Threads running forward passes concurrently; the libtorch threads are divided
    /// among them.
    pub workers: usize,
}

impl EncodeOptions {
    /// Defaults measured for the device: on CPU small batches and one worker per
    /// libtorch thread; on CUDA one worker and large batches.
    pub fn for_device(device: Device) -> Self {
        match device {
            Device::Cpu => Self {
                batch_size: 32,
                max_batch_tokens: 512,
                workers: tch::get_num_threads().max(1) as usize,
            },
            _ => Self {
                batch_size: 256,
                max_batch_tokens: 32_768,
                workers: 1,
            },
        }
    }

    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }
}

/// A forward pass's tokens: the sentences' own, and with padding to its longest sentence.
pub fn pass_tokens(lengths: impl IntoIterator<Item = usize>) -> (usize, usize) {
    let (mut real, mut longest, mut n) = (0, 0, 0);
    for len in lengths {
        real += len;
        longest = longest.max(len);
        n += 1;
    }
    (real, longest * n)
}

/// Sentence indices of each forward pass, longest sentences first. Every index appears
/// in exactly one batch.
pub fn plan_batches(lengths: &[usize], options: &EncodeOptions) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(lengths[i]));
    let mut batches = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    for i in order {
        // Sorted descending: the first sentence of a batch is its longest.
        let longest = current.first().map_or(lengths[i], |&f| lengths[f]).max(1);
        let full = current.len() >= options.batch_size.max(1)
            || (current.len() + 1) * longest > options.max_batch_tokens;
        if !current.is_empty() && full {
            batches.push(std::mem::take(&mut current));
        }
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

/// Read-only access to an encoder from several inference threads. libtorch tensors may be
/// read concurrently; these threads only run forward passes (no parameter writes), each
/// under its own thread-local no-grad guard.
struct SharedForInference<'a>(&'a SentenceEncoder);
// SAFETY: see above; nothing is mutated through this wrapper.
unsafe impl Sync for SharedForInference<'_> {}

/// An encoder owned by a pool of inference threads (the server's): only
/// [`InferenceEncoder::embed_pass`] is reachable, which reads the weights and writes
/// nothing, so sharing it across threads is sound for the reason given above.
pub struct InferenceEncoder(SentenceEncoder);
// SAFETY: forward passes only (see SharedForInference); the encoder moves in whole.
unsafe impl Sync for InferenceEncoder {}
unsafe impl Send for InferenceEncoder {}

impl InferenceEncoder {
    pub fn new(encoder: SentenceEncoder) -> Self {
        Self(encoder)
    }

    pub fn dim(&self) -> usize {
        self.0.dim()
    }

    pub fn device(&self) -> Device {
        self.0.device()
    }

    /// One forward pass over `items` (no gradients): row-major [items, dim] float32.
    pub fn embed_pass(&self, items: &[&TokenIds]) -> Vec<f32> {
        let _no_grad = tch::no_grad_guard();
        embed_pass(&self.0, items)
    }
}

/// The model as a serving pool sees it (the backend seam, as text-embeddings-inference's
/// `Backend`): one forward pass over tokenised sentences returning row-major [items,
/// dim] float32. [`InferenceEncoder`] in production; tests wrap it to inject faults (a
/// pass that panics or blocks on a marked input).
pub trait Embedder: Send + Sync {
    fn dim(&self) -> usize;
    fn device(&self) -> Device;
    fn embed_pass(&self, items: &[&TokenIds]) -> Vec<f32>;
}

impl Embedder for InferenceEncoder {
    fn dim(&self) -> usize {
        InferenceEncoder::dim(self)
    }

    fn device(&self) -> Device {
        InferenceEncoder::device(self)
    }

    fn embed_pass(&self, items: &[&TokenIds]) -> Vec<f32> {
        InferenceEncoder::embed_pass(self, items)
    }
}

/// One forward pass: row-major [items, dim] float32 on the CPU.
fn embed_pass(encoder: &SentenceEncoder, items: &[&TokenIds]) -> Vec<f32> {
    let dim = encoder.dim();
    let batch = encoder.batch(items);
    let vectors = encoder
        .forward_t(&batch, false)
        .to_device(Device::Cpu)
        .to_kind(Kind::Float)
        .contiguous();
    let mut values = vec![0f32; items.len() * dim];
    vectors.copy_data(&mut values, items.len() * dim);
    values
}

/// Embeds tokenized sentences: [N, dim] float32 on the CPU, rows in input order.
pub fn encode_tokens(
    encoder: &SentenceEncoder,
    tokens: &[TokenIds],
    options: &EncodeOptions,
) -> Result<Tensor> {
    let values = embed_tokens(encoder, tokens, options)?;
    Ok(Tensor::from_slice(&values).view([tokens.len() as i64, encoder.dim() as i64]))
}

/// Embeds tokenized sentences into row-major [N, dim] float32, rows in input order. A
/// row with NaN or infinite values is an error (weights that overflow: a damaged or
/// mis-converted model), not a vector.
pub fn embed_tokens(
    encoder: &SentenceEncoder,
    tokens: &[TokenIds],
    options: &EncodeOptions,
) -> Result<Vec<f32>> {
    let n = tokens.len();
    let dim = encoder.dim();
    let lengths: Vec<usize> = tokens.iter().map(TokenIds::len).collect();
    let batches = plan_batches(&lengths, options);
    if tracing::enabled!(tracing::Level::DEBUG) {
        // The passes' shapes, for comparing with `lase serve`'s (its /metrics);
        // bench/serve_load.sh parses this line: keep its wording.
        let (real, padded) = batches
            .iter()
            .map(|b| pass_tokens(b.iter().map(|&i| lengths[i])))
            .fold((0, 0), |(r, p), (br, bp)| (r + br, p + bp));
        tracing::debug!(
            "{} passes for {n} sentences: {real} tokens, {padded} with padding",
            batches.len()
        );
    }
    let next = AtomicUsize::new(0);
    let out = Mutex::new(vec![0f32; n * dim]);
    let shared = SharedForInference(encoder);
    let run = |shared: &SharedForInference| {
        let _no_grad = tch::no_grad_guard();
        while let Some(batch_indices) = batches.get(next.fetch_add(1, Ordering::Relaxed)) {
            let items: Vec<&TokenIds> = batch_indices.iter().map(|&i| &tokens[i]).collect();
            let values = embed_pass(shared.0, &items);
            let mut out = out.lock().expect("no worker panicked");
            for (row, &i) in batch_indices.iter().enumerate() {
                out[i * dim..(i + 1) * dim].copy_from_slice(&values[row * dim..(row + 1) * dim]);
            }
        }
    };
    let workers = options.workers.clamp(1, batches.len().max(1));
    if workers == 1 || encoder.device() != Device::Cpu {
        run(&shared);
    } else {
        let total_threads = tch::get_num_threads().max(1);
        let per_worker = (total_threads / workers as i32).max(1);
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    tch::set_num_threads(per_worker);
                    run(&shared)
                });
            }
        });
        // set_num_threads also sets MKL's process-wide count: restore it.
        tch::set_num_threads(total_threads);
    }
    let out = out.into_inner().expect("no worker panicked");
    if let Some((row, _)) = first_non_finite(&out, dim) {
        return Err(crate::error::LaseError::Model(format!(
            "sentence {} of {n}: the model produced NaN or infinite values (weights that \
             overflow: a damaged or mis-converted model?)",
            row + 1
        )));
    }
    Ok(out)
}

/// The first NaN or infinite value of row-major `[rows, dim]` vectors: its row (0-based)
/// and the value.
pub(crate) fn first_non_finite(values: &[f32], dim: usize) -> Option<(usize, f32)> {
    let at = values.iter().position(|v| !v.is_finite())?;
    Some((at / dim.max(1), values[at]))
}

/// Sentences embedded by [`embed_sentences`]: row-major vectors and the tokens read.
#[derive(Clone, Debug)]
pub struct EmbeddedSentences {
    pub vectors: Vec<f32>,
    pub tokens: usize,
}

/// Tokenizes and embeds one chunk of sentences (row-major [N, dim] float32): the step
/// every chunked embedding loop (files, mining, evaluation, teacher caches) repeats.
pub fn embed_sentences<S: AsRef<str>>(
    encoder: &SentenceEncoder,
    sentences: &[S],
    options: &EncodeOptions,
) -> Result<EmbeddedSentences> {
    let tokens = encoder.tokenize(sentences)?;
    Ok(EmbeddedSentences {
        vectors: embed_tokens(encoder, &tokens, options)?,
        tokens: tokens.iter().map(TokenIds::len).sum(),
    })
}

/// A progress bar on stderr under `label` (`{label} [elapsed] [bar] pos/len (ETA)`), or a
/// hidden one unless `show`.
pub fn progress_bar(show: bool, len: u64, label: &str) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{label} [{{elapsed_precise}}] [{{wide_bar}}] {{pos}}/{{len}} (ETA {{eta}})"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}

/// Sentences per chunk of [`embed_with_progress`]: the tokens of one chunk are held at
/// once, the vectors of all.
pub const EMBED_CHUNK: usize = 8192;

/// Embeds sentences chunk by chunk with a progress bar under `label` (hidden unless
/// `show`); returns row-major vectors.
pub fn embed_with_progress(
    encoder: &SentenceEncoder,
    sentences: &[String],
    options: &EncodeOptions,
    label: &str,
    show: bool,
) -> Result<Vec<f32>> {
    let bar = progress_bar(show, sentences.len() as u64, label);
    let mut out = Vec::with_capacity(sentences.len() * encoder.dim());
    for chunk in sentences.chunks(EMBED_CHUNK) {
        out.extend_from_slice(&embed_sentences(encoder, chunk, options)?.vectors);
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    Ok(out)
}

/// Sentence-level encoding, defined here so that the model never depends on its
/// batching: text -> tokens -> [`encode_tokens`].
impl SentenceEncoder {
    /// Embeds sentences for inference with this device's default scheduling and at most
    /// `batch_size` sentences per forward pass. Returns [N, dim] float32 on the CPU, rows
    /// in input order.
    pub fn encode<S: AsRef<str>>(&self, sentences: &[S], batch_size: usize) -> Result<Tensor> {
        let options = EncodeOptions::for_device(self.device()).with_batch_size(batch_size);
        self.encode_with(sentences, &options)
    }

    /// Embeds sentences: tokenized once, length-sorted into batches, run without autograd
    /// (see [`crate::inference`]).
    pub fn encode_with<S: AsRef<str>>(
        &self,
        sentences: &[S],
        options: &EncodeOptions,
    ) -> Result<Tensor> {
        let tokens = self.tokenize(sentences)?;
        encode_tokens(self, &tokens, options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(batch_size: usize, max_batch_tokens: usize) -> EncodeOptions {
        EncodeOptions {
            batch_size,
            max_batch_tokens,
            workers: 1,
        }
    }

    #[test]
    fn batches_cover_every_sentence_once_longest_first() {
        let lengths = [5, 30, 7, 7, 100, 1, 12, 30, 2];
        let batches = plan_batches(&lengths, &opts(3, 64));
        let mut seen: Vec<usize> = batches.iter().flatten().copied().collect();
        let flat = seen.clone();
        seen.sort();
        assert_eq!(seen, (0..lengths.len()).collect::<Vec<_>>());
        let flat_lengths: Vec<usize> = flat.iter().map(|&i| lengths[i]).collect();
        assert!(
            flat_lengths.windows(2).all(|w| w[0] >= w[1]),
            "{flat_lengths:?}"
        );
    }

    #[test]
    fn batches_respect_both_limits() {
        let lengths = [100, 30, 30, 30, 10, 10, 10, 10, 10, 10, 10, 1];
        let batches = plan_batches(&lengths, &opts(4, 64));
        // The 100-token sentence exceeds the budget alone: it gets its own batch.
        assert_eq!(batches[0], vec![0]);
        for b in &batches[1..] {
            let longest = b.iter().map(|&i| lengths[i]).max().unwrap();
            assert!(b.len() <= 4 && b.len() * longest <= 64, "{b:?}");
        }
        assert_eq!(
            batches[1].len(),
            2,
            "two 30-token sentences fit in 64 tokens, three do not"
        );
    }

    #[test]
    fn empty_input_has_no_batches() {
        assert!(plan_batches(&[], &opts(8, 512)).is_empty());
    }
}
