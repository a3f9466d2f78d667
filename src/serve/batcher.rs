//! Dynamic batching across concurrent requests (text-embeddings-inference's queue
//! design): handlers tokenize and enqueue jobs; ONE inference thread takes the oldest
//! job, coalesces every queued job that fits the token budget, runs them as one
//! length-sorted set of forward passes, and routes each job's rows back through its
//! own channel. The queue is bounded: when it is full a request is refused (429) at
//! once rather than waiting without limit.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tch::Tensor;
use tokio::sync::{mpsc, oneshot};

use super::metrics::Metrics;
use crate::inference::{EncodeOptions, encode_tokens};
use crate::model::SentenceEncoder;
use crate::tokenizer::TokenIds;

/// One request's sentences and where to send their vectors ([n, dim] float32).
pub struct Job {
    pub tokens: Vec<TokenIds>,
    pub respond: oneshot::Sender<Tensor>,
}

/// Handle for enqueueing jobs.
#[derive(Clone)]
pub struct Batcher {
    queue: mpsc::Sender<Job>,
    metrics: Arc<Metrics>,
}

/// Why a job could not be queued.
#[derive(Debug, PartialEq, Eq)]
pub enum EnqueueError {
    Full,
    Closed,
}

impl Batcher {
    /// Starts the inference thread. `max_batch_tokens` bounds the tokens of jobs
    /// coalesced into one run (a single larger job still runs alone); `queue_capacity`
    /// bounds waiting jobs.
    pub fn start(
        encoder: SentenceEncoder,
        options: EncodeOptions,
        max_batch_tokens: usize,
        queue_capacity: usize,
        metrics: Arc<Metrics>,
    ) -> (Self, std::thread::JoinHandle<()>) {
        let (tx, mut rx) = mpsc::channel::<Job>(queue_capacity.max(1));
        let worker_metrics = metrics.clone();
        let handle = std::thread::Builder::new()
            .name("lase-inference".into())
            .spawn(move || {
                let metrics = worker_metrics;
                let mut pending: Option<Job> = None;
                loop {
                    let first = match pending.take() {
                        Some(job) => job,
                        None => match rx.blocking_recv() {
                            Some(job) => job,
                            None => return, // every sender dropped: shut down
                        },
                    };
                    metrics.queue_depth.fetch_sub(1, Ordering::Relaxed);
                    let mut jobs = vec![first];
                    let mut tokens: usize = jobs[0].tokens.iter().map(TokenIds::len).sum();
                    while let Ok(job) = rx.try_recv() {
                        let more: usize = job.tokens.iter().map(TokenIds::len).sum();
                        if tokens + more > max_batch_tokens {
                            pending = Some(job);
                            break;
                        }
                        metrics.queue_depth.fetch_sub(1, Ordering::Relaxed);
                        tokens += more;
                        jobs.push(job);
                    }
                    let all: Vec<TokenIds> =
                        jobs.iter().flat_map(|j| j.tokens.iter().cloned()).collect();
                    metrics.batch_sentences.observe(all.len() as f64);
                    metrics
                        .sentences_embedded
                        .fetch_add(all.len() as u64, Ordering::Relaxed);
                    let vectors = encode_tokens(&encoder, &all, &options);
                    let mut start = 0i64;
                    for job in jobs {
                        let n = job.tokens.len() as i64;
                        // A dropped receiver means the client went away: nothing to do.
                        let _ = job.respond.send(vectors.narrow(0, start, n));
                        start += n;
                    }
                }
            })
            .expect("spawn the inference thread");
        (Self { queue: tx, metrics }, handle)
    }

    /// Queues a job without waiting; the receiver yields its vectors.
    pub fn submit(&self, tokens: Vec<TokenIds>) -> Result<oneshot::Receiver<Tensor>, EnqueueError> {
        let (respond, receive) = oneshot::channel();
        self.metrics.queue_depth.fetch_add(1, Ordering::Relaxed);
        match self.queue.try_send(Job { tokens, respond }) {
            Ok(()) => Ok(receive),
            Err(e) => {
                self.metrics.queue_depth.fetch_sub(1, Ordering::Relaxed);
                Err(match e {
                    mpsc::error::TrySendError::Full(_) => EnqueueError::Full,
                    mpsc::error::TrySendError::Closed(_) => EnqueueError::Closed,
                })
            }
        }
    }
}
