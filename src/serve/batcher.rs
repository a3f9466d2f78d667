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
//!
//! Isolation: a forward pass that panics (a libtorch error surfaces as a Rust panic) is
//! caught on its worker thread. The jobs that shared the pass are retried one job per
//! pass, so only the job whose own pass panics is answered with an error (the server's
//! 500); the thread goes on with the next pass. A panic anywhere else in a worker's loop
//! restarts the loop on the same thread, so the pool never loses a worker.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tch::{Device, Tensor};
use tokio::sync::{mpsc, oneshot};

use super::metrics::Metrics;
use crate::inference::{Embedder, EncodeOptions, first_non_finite, pass_tokens, plan_batches};
use crate::tokenizer::TokenIds;

/// A job's forward pass failed (it panicked, returned the wrong number of values, or
/// returned NaN or infinity, which JSON would carry as `null`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("inference failed: {0}")]
pub struct InferenceFailed(pub String);

/// A job's vectors ([n, dim] float32), or why they could not be computed.
pub type JobResult = Result<Tensor, InferenceFailed>;

/// One request's sentences and where to send their vectors.
pub struct Job {
    pub tokens: Vec<TokenIds>,
    pub respond: oneshot::Sender<JobResult>,
}

/// Locks a pool mutex even if a thread panicked while holding it. Sound here because
/// every critical section in this module leaves its data consistent at each step (a
/// push, a pop, a row copy, taking the sender), and forward passes, the code expected
/// to panic, run with no lock held.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The text of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
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
    respond: Mutex<Option<oneshot::Sender<JobResult>>>,
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
        lock(&self.values)[row * self.dim..(row + 1) * self.dim].copy_from_slice(vector);
        if self.missing.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.send();
        }
    }

    fn send(&self) {
        let values = std::mem::take(&mut *lock(&self.values));
        let vectors = Tensor::from_slice(&values).view([self.rows as i64, self.dim as i64]);
        if let Some(respond) = lock(&self.respond).take() {
            // A dropped receiver means the client went away: nothing to do.
            let _ = respond.send(Ok(vectors));
        }
    }

    /// Nobody waits for this job's vectors any more: it was answered already (failed),
    /// or its receiver was dropped (the client went away, or the request timed out).
    fn abandoned(&self) -> bool {
        lock(&self.respond)
            .as_ref()
            .is_none_or(oneshot::Sender::is_closed)
    }

    /// Answers the job with an error at once; rows filled later are ignored.
    fn fail(&self, error: InferenceFailed) {
        if let Some(respond) = lock(&self.respond).take() {
            let _ = respond.send(Err(error));
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
    encoder: Box<dyn Embedder>,
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
            if let Some(pass) = lock(&self.passes).pop_front() {
                return Some(pass);
            }
            let mut intake = lock(&self.intake);
            // Another thread may have queued a run while this one waited for the intake.
            if let Some(pass) = lock(&self.passes).pop_front() {
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
            // Queued before the intake is released: a thread waiting for the intake then
            // finds the run's passes when it re-checks, instead of blocking on the
            // request queue while they wait for this thread.
            self.queue_run(jobs);
            drop(intake);
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
        let mut passes = lock(&self.passes);
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
        while let Some(pass) = self.next_pass() {
            self.run_pass(pass);
        }
    }

    /// Runs one pass and routes its rows. If it fails and holds rows of several jobs,
    /// each job is retried in a pass of its own: only a job whose own pass fails is
    /// answered with the error.
    fn run_pass(&self, pass: Pass) {
        let Some(pass) = self.without_abandoned(pass) else {
            return;
        };
        let items: Vec<&TokenIds> = pass.tokens.iter().collect();
        let error = match self.try_pass(&items) {
            Ok(values) => {
                self.route(&pass.rows, &values);
                return;
            }
            Err(error) => error,
        };
        // The pass's jobs, in order of first appearance, with the pass indices of their rows.
        let mut jobs: Vec<(&Arc<RunningJob>, Vec<usize>)> = Vec::new();
        for (i, (job, _)) in pass.rows.iter().enumerate() {
            match jobs.iter_mut().find(|(j, _)| Arc::ptr_eq(j, job)) {
                Some((_, indices)) => indices.push(i),
                None => jobs.push((job, vec![i])),
            }
        }
        if jobs.len() == 1 {
            jobs[0].0.fail(error);
            return;
        }
        for (job, indices) in jobs {
            let items: Vec<&TokenIds> = indices.iter().map(|&i| &pass.tokens[i]).collect();
            match self.try_pass(&items) {
                Ok(values) => {
                    let rows: Vec<(Arc<RunningJob>, usize)> =
                        indices.iter().map(|&i| pass.rows[i].clone()).collect();
                    self.route(&rows, &values);
                }
                Err(error) => job.fail(error),
            }
        }
    }

    /// The pass without the rows of abandoned jobs (`None` if none is left): work for
    /// a request that nobody waits for is not done.
    fn without_abandoned(&self, pass: Pass) -> Option<Pass> {
        if !pass.rows.iter().any(|(job, _)| job.abandoned()) {
            return Some(pass);
        }
        let before = pass.rows.len();
        let (tokens, rows): (Vec<TokenIds>, Vec<(Arc<RunningJob>, usize)>) = pass
            .tokens
            .into_iter()
            .zip(pass.rows)
            .filter(|(_, (job, _))| !job.abandoned())
            .unzip();
        self.metrics
            .sentences_abandoned
            .fetch_add((before - rows.len()) as u64, Ordering::Relaxed);
        (!rows.is_empty()).then_some(Pass { tokens, rows })
    }

    /// Counts a forward pass's sentences and its tokens with and without padding.
    fn record_pass(&self, items: &[&TokenIds]) {
        let (real, padded) = pass_tokens(items.iter().map(|t| t.len()));
        let m = &self.metrics;
        m.pass_sentences.observe(items.len() as f64);
        m.pass_tokens.fetch_add(real as u64, Ordering::Relaxed);
        m.pass_padded_tokens
            .fetch_add(padded as u64, Ordering::Relaxed);
    }

    /// One forward pass with its panic caught: the pass's values, or why there are none.
    fn try_pass(&self, items: &[&TokenIds]) -> Result<Vec<f32>, InferenceFailed> {
        self.record_pass(items);
        // AssertUnwindSafe: a pass reads the weights and writes only tensors and a Vec
        // of its own, which the unwind drops; its no-grad guard is restored on drop, and
        // no pool lock is held here. Nothing shared is left half-written.
        let values = catch_unwind(AssertUnwindSafe(|| self.encoder.embed_pass(items))).map_err(
            |payload| {
                self.metrics
                    .inference_panics
                    .fetch_add(1, Ordering::Relaxed);
                let message = panic_message(payload.as_ref());
                tracing::error!(
                    "an inference pass of {} sentences panicked: {message}",
                    items.len()
                );
                InferenceFailed(format!("the forward pass panicked: {message}"))
            },
        )?;
        let want = items.len() * self.encoder.dim();
        if values.len() != want {
            return Err(InferenceFailed(format!(
                "the forward pass returned {} values, not {want}",
                values.len()
            )));
        }
        if let Some((row, value)) = first_non_finite(&values, self.encoder.dim()) {
            tracing::error!(
                "an inference pass of {} sentences returned {value} (sentence {row} of the pass)",
                items.len(),
            );
            return Err(InferenceFailed(format!(
                "the forward pass returned a non-finite value ({value})"
            )));
        }
        Ok(values)
    }

    /// Hands each row of a pass's values to its job.
    fn route(&self, rows: &[(Arc<RunningJob>, usize)], values: &[f32]) {
        let dim = self.encoder.dim();
        for (r, (job, row)) in rows.iter().enumerate() {
            job.fill(*row, &values[r * dim..(r + 1) * dim]);
        }
    }

    /// A worker thread's life: [`Pool::work`], restarted if it panics outside a forward
    /// pass (a bug in this module), so the pool keeps its number of workers.
    fn serve_forever(&self) {
        // AssertUnwindSafe: the pool's shared state is behind mutexes whose critical
        // sections leave it consistent (see `lock`); a pass in the worker's hands when
        // it panicked is dropped, and with it the senders of jobs no other pass holds,
        // so their requests are answered (500) rather than left waiting.
        while let Err(payload) = catch_unwind(AssertUnwindSafe(|| self.work())) {
            self.metrics
                .inference_panics
                .fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                "an inference worker panicked outside a pass, restarting it: {}",
                panic_message(payload.as_ref())
            );
        }
    }
}

impl Batcher {
    /// Starts the inference pool (`options.workers` threads on CPU, one on a GPU) over
    /// `embedder` (the pool sees the model only through [`Embedder`]).
    /// `max_batch_tokens` bounds the tokens of jobs coalesced into one run (a single
    /// larger job still runs alone); `options` cuts runs into forward passes;
    /// `queue_capacity` bounds waiting jobs. The handle's thread ends when every
    /// [`Batcher`] is dropped and the queued work is done.
    pub fn start(
        embedder: Box<dyn Embedder>,
        options: EncodeOptions,
        max_batch_tokens: usize,
        queue_capacity: usize,
        metrics: Arc<Metrics>,
    ) -> (Self, std::thread::JoinHandle<()>) {
        let (tx, rx) = mpsc::channel::<Job>(queue_capacity.max(1));
        let on_cpu = embedder.device() == Device::Cpu;
        let workers = if on_cpu { options.workers.max(1) } else { 1 };
        let pool = Pool {
            encoder: embedder,
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
                                pool.serve_forever();
                            })
                            .expect("spawn an inference thread");
                    }
                });
            })
            .expect("spawn the inference pool");
        (Self { queue: tx, metrics }, handle)
    }

    /// Queues a job without waiting; the receiver yields its vectors.
    pub fn submit(
        &self,
        tokens: Vec<TokenIds>,
    ) -> Result<oneshot::Receiver<JobResult>, EnqueueError> {
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
