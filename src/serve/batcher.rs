//! Dynamic batching across concurrent requests (text-embeddings-inference's queue
//! design): handlers tokenize and enqueue jobs; the inference pool takes the oldest job,
//! coalesces every queued job that fits the token budget into one run, cuts the run into
//! length-sorted forward passes, and routes each job's rows back through its own channel
//! once all of them are done. The queue is bounded: when it is full a request is refused
//! (429) at once rather than waiting without limit.
//!
//! On CPU the pool has one thread per libtorch thread, each running whole forward passes
//! single-threaded (as `lase embed`). The passes of all runs go through one queue, and a
//! thread that finds it empty takes the next run from the request queue itself: a run's
//! last pass no longer leaves the other threads idle until it finishes, which is what
//! kept the server below offline throughput (docs/benchmarks.md, "Serving").

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tch::{Device, Tensor};
use tokio::sync::{mpsc, oneshot};

use super::metrics::Metrics;
use crate::inference::{EncodeOptions, InferenceEncoder, plan_batches};
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

/// A job whose rows are being computed by one or more forward passes.
struct RunningJob {
    rows: usize,
    dim: usize,
    values: Mutex<Vec<f32>>,
    missing: AtomicUsize,
    respond: Mutex<Option<oneshot::Sender<Tensor>>>,
}

impl RunningJob {
    fn new(job: Job, dim: usize) -> (Arc<Self>, Vec<TokenIds>) {
        let rows = job.tokens.len();
        let running = Arc::new(Self {
            rows,
            dim,
            values: Mutex::new(vec![0f32; rows * dim]),
            missing: AtomicUsize::new(rows),
            respond: Mutex::new(Some(job.respond)),
        });
        if rows == 0 {
            running.send();
        }
        (running, job.tokens)
    }

    /// Stores one row; the last row sends the job's vectors.
    fn fill(&self, row: usize, vector: &[f32]) {
        self.values.lock().expect("no worker panicked")[row * self.dim..(row + 1) * self.dim]
            .copy_from_slice(vector);
        if self.missing.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.send();
        }
    }

    fn send(&self) {
        let values = std::mem::take(&mut *self.values.lock().expect("no worker panicked"));
        let vectors = Tensor::from_slice(&values).view([self.rows as i64, self.dim as i64]);
        if let Some(respond) = self.respond.lock().expect("no worker panicked").take() {
            // A dropped receiver means the client went away: nothing to do.
            let _ = respond.send(vectors);
        }
    }
}

/// One forward pass: sentences and the (job, row) each belongs to.
struct Pass {
    tokens: Vec<TokenIds>,
    rows: Vec<(Arc<RunningJob>, usize)>,
}

/// Where runs come from: the request queue and a job that did not fit the last run.
struct Intake {
    queue: mpsc::Receiver<Job>,
    pending: Option<Job>,
}

struct Pool {
    encoder: InferenceEncoder,
    options: EncodeOptions,
    max_batch_tokens: usize,
    passes: Mutex<VecDeque<Pass>>,
    intake: Mutex<Intake>,
    metrics: Arc<Metrics>,
}

impl Pool {
    /// The next forward pass: a queued one, or the first of a new run taken from the
    /// request queue (waiting for a request if there is none). None once the request
    /// queue is closed and drained.
    fn next_pass(&self) -> Option<Pass> {
        loop {
            if let Some(pass) = self.passes.lock().expect("no worker panicked").pop_front() {
                return Some(pass);
            }
            let mut intake = self.intake.lock().expect("no worker panicked");
            // Another thread may have queued a run while this one waited for the intake.
            if let Some(pass) = self.passes.lock().expect("no worker panicked").pop_front() {
                return Some(pass);
            }
            let first = match intake.pending.take() {
                Some(job) => job,
                None => intake.queue.blocking_recv()?,
            };
            self.metrics.queue_depth.fetch_sub(1, Ordering::Relaxed);
            let mut jobs = vec![first];
            let mut tokens: usize = jobs[0].tokens.iter().map(TokenIds::len).sum();
            while let Ok(job) = intake.queue.try_recv() {
                let more: usize = job.tokens.iter().map(TokenIds::len).sum();
                if tokens + more > self.max_batch_tokens {
                    intake.pending = Some(job);
                    break;
                }
                self.metrics.queue_depth.fetch_sub(1, Ordering::Relaxed);
                tokens += more;
                jobs.push(job);
            }
            drop(intake);
            self.queue_run(jobs);
        }
    }

    /// Cuts a run of jobs into length-sorted forward passes and queues them.
    fn queue_run(&self, jobs: Vec<Job>) {
        let mut sentences: Vec<TokenIds> = Vec::new();
        let mut owners: Vec<(Arc<RunningJob>, usize)> = Vec::new();
        for job in jobs {
            let (running, tokens) = RunningJob::new(job, self.encoder.dim());
            for (row, t) in tokens.into_iter().enumerate() {
                owners.push((running.clone(), row));
                sentences.push(t);
            }
        }
        self.metrics.batch_sentences.observe(sentences.len() as f64);
        self.metrics
            .sentences_embedded
            .fetch_add(sentences.len() as u64, Ordering::Relaxed);
        let lengths: Vec<usize> = sentences.iter().map(TokenIds::len).collect();
        let mut sentences: Vec<Option<TokenIds>> = sentences.into_iter().map(Some).collect();
        let mut passes = self.passes.lock().expect("no worker panicked");
        for batch in plan_batches(&lengths, &self.options) {
            passes.push_back(Pass {
                tokens: batch
                    .iter()
                    .map(|&i| sentences[i].take().expect("each sentence in one pass"))
                    .collect(),
                rows: batch.iter().map(|&i| owners[i].clone()).collect(),
            });
        }
    }

    /// A pool thread: runs passes until the request queue closes and every pass is done.
    fn work(&self) {
        let dim = self.encoder.dim();
        while let Some(pass) = self.next_pass() {
            let items: Vec<&TokenIds> = pass.tokens.iter().collect();
            let values = self.encoder.embed_pass(&items);
            for (r, (job, row)) in pass.rows.iter().enumerate() {
                job.fill(*row, &values[r * dim..(r + 1) * dim]);
            }
        }
    }
}

impl Batcher {
    /// Starts the inference pool (`options.workers` threads on CPU, one on a GPU).
    /// `max_batch_tokens` bounds the tokens of jobs coalesced into one run (a single
    /// larger job still runs alone); `options` cuts runs into forward passes;
    /// `queue_capacity` bounds waiting jobs. The handle's thread ends when every
    /// [`Batcher`] is dropped and the queued work is done.
    pub fn start(
        encoder: SentenceEncoder,
        options: EncodeOptions,
        max_batch_tokens: usize,
        queue_capacity: usize,
        metrics: Arc<Metrics>,
    ) -> (Self, std::thread::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel::<Job>(queue_capacity.max(1));
        let on_cpu = encoder.device() == Device::Cpu;
        let workers = if on_cpu { options.workers.max(1) } else { 1 };
        let pool = Pool {
            encoder: InferenceEncoder::new(encoder),
            options,
            max_batch_tokens,
            passes: Mutex::new(VecDeque::new()),
            intake: Mutex::new(Intake {
                queue: rx,
                pending: None,
            }),
            metrics: metrics.clone(),
        };
        let handle = std::thread::Builder::new()
            .name("lase-inference".into())
            .spawn(move || {
                let threads_per_worker = (tch::get_num_threads() / workers as i32).max(1);
                std::thread::scope(|s| {
                    for i in 0..workers {
                        let pool = &pool;
                        std::thread::Builder::new()
                            .name(format!("lase-inference-{i}"))
                            .spawn_scoped(s, move || {
                                if on_cpu && workers > 1 {
                                    tch::set_num_threads(threads_per_worker);
                                }
                                pool.work();
                            })
                            .expect("spawn an inference thread");
                    }
                });
            })
            .expect("spawn the inference pool");
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
