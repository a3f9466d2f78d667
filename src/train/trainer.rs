//! The training loop ([`Trainer`]): data -> tokenizer -> encoder -> objective -> AdamW,
//! with dev evaluation, JSONL metrics, atomic checkpoints and exact resume. What it is
//! built from lives beside it: [`super::training_data`], [`super::encoder_init`],
//! [`super::teacher_cache`], [`super::dev_set`], and the set-up that joins them,
//! `super::run_setup`.
//!
//! Layout of an output folder:
//! - `config.toml`: the recipe (a resumed run must use the same one);
//! - `tokenizer.json`: trained here unless the recipe names one;
//! - `checkpoint/`: the latest checkpoint ([`super::checkpoint`]);
//! - `metrics.jsonl`, `metrics.svg`: the log and its plot;
//! - `model/`: the final model, a normal lase / sentence-transformers folder;
//! - `best-model/`: the model at the best dev P@1 so far (the paper's checkpoint choice in
//!   soft-contrastive.txt: early stopping on the dev set), with `dev.json` ({step,
//!   dev_p_at_1}) inside; written atomically each time dev P@1 improves.
//!
//! Reproducibility: a run is deterministic for its seed, and a resumed run ends with the
//! same weights as an uninterrupted one. libtorch's random generator (dropout) is
//! process-global, so two runs must not train concurrently in one process.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};

use super::checkpoint::{self, TrainState};
use super::config::TrainConfig;
use super::dev_set::DevSet;
use super::grad_cache::{PassOptions, forward_backward};
use super::metrics::{MetricsLog, plot};
use super::objective::{BatchContext, Objective};
use super::optimizer::AdamW;
pub use super::options::TrainOptions;
use super::outcome::summary;
pub use super::outcome::{BEST_MODEL, BestDev, TrainSummary};
pub use super::run_setup::trainable_parameters;
use super::run_setup::{
    claim_run_folder, new_optimizer, special_token_ids, teacher_and_objective, training_encoder,
};
use super::schedule::learning_rate;
use super::teacher_cache::TeacherCache;
use super::training_data::{batch_sampler, tokenize_pairs, training_and_dev_sets};
use crate::data::sampler::pair_keys;
use crate::data::{BatchSampler, ParallelCorpus};
use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;
use crate::model::{Precision, SentenceEncoder};
use crate::rng::mix_seed;
use crate::tokenizer::{TokenIds, TokenStore};

/// Mixed into the step's seed for the draw of contrastive distillation's teacher bank, so
/// the draw is its own stream (and a resumed run draws the same rows).
const TEACHER_BANK_STREAM: u64 = 0x7EAC_4E2B_A4C0;

/// Trains (or resumes) the recipe `config` into `out`.
pub fn train(config: &TrainConfig, out: &Path, options: &TrainOptions) -> Result<TrainSummary> {
    Trainer::new(config, out, options)?.run()
}

/// One run of a recipe: everything the loop holds between steps.
pub struct Trainer<'a> {
    config: &'a TrainConfig,
    out: &'a Path,
    options: &'a TrainOptions,
    train_set: ParallelCorpus,
    src_tokens: TokenStore,
    tgt_tokens: TokenStore,
    sampler: BatchSampler,
    encoder: SentenceEncoder,
    objective: Objective,
    optimizer: AdamW,
    teacher: Option<TeacherCache>,
    dev: DevSet,
    vocab_size: usize,
    special_ids: Vec<i64>,
    state: TrainState,
    resumed_from: Option<u64>,
    best: Option<BestDev>,
    metrics: MetricsLog,
}

/// What one optimizer step did.
struct StepOutcome {
    loss: f64,
    lr: f64,
    grad_norm: f64,
    parts: BTreeMap<&'static str, f64>,
}

impl<'a> Trainer<'a> {
    /// Sets a run up in `out`: the recipe checked against the folder's, the data read and
    /// tokenized, the encoder built (or loaded from the checkpoint), the teacher cache
    /// filled, and the objective, optimizer and sampler restored when resuming.
    pub fn new(config: &'a TrainConfig, out: &'a Path, options: &'a TrainOptions) -> Result<Self> {
        config.validate()?;
        crate::runtime::flush_denormals();
        claim_run_folder(config, out)?;
        let (train_set, dev_set) = training_and_dev_sets(&config.data, config.run.seed)?;
        tracing::info!(
            "{} training pairs in {} languages ({} of them between two non-pivot languages; {} skipped as empty), {} dev pairs ({} non-pivot)",
            train_set.len(),
            train_set.languages.len(),
            train_set.pairs.iter().filter(|p| p.is_non_pivot()).count(),
            train_set.skipped_empty,
            dev_set.len(),
            dev_set.pairs.iter().filter(|p| p.is_non_pivot()).count(),
        );

        let resume_dir = checkpoint::find(out);
        let resumed_state = resume_dir
            .as_deref()
            .map(checkpoint::read_state)
            .transpose()?;
        let mut encoder =
            training_encoder(config, out, options, &train_set, resume_dir.as_deref())?;
        if let Some(state) = &resumed_state
            && state.languages != train_set.languages
        {
            return Err(LaseError::InvalidArgument(
                "the training data's languages differ from the checkpoint's".into(),
            ));
        }
        let (src_tokens, tgt_tokens) =
            tokenize_pairs(&mut encoder, &train_set, config.model.train_max_tokens)?;
        let keys: Vec<crate::data::sampler::PairKeys> =
            train_set.pairs.iter().map(pair_keys).collect();
        let mut sampler = batch_sampler(&config.data, &train_set, keys)?;

        let vocab_size = encoder.tokenizer().vocab_size();
        let special_ids = special_token_ids(&encoder);
        let (teacher, mut objective) =
            teacher_and_objective(config, out, options, &train_set, &encoder, vocab_size)?;
        let mut optimizer = new_optimizer(config, &encoder, &objective, out)?;

        let mut state = TrainState {
            step: 0,
            sampler: sampler.state().clone(),
            optimizer_steps: 0,
            languages: train_set.languages.clone(),
            pairs_seen: 0,
            elapsed_seconds: 0.0,
            files: Default::default(),
        };
        if let (Some(dir), Some(saved)) = (&resume_dir, resumed_state) {
            checkpoint::restore(dir, &mut objective, &mut optimizer, &saved)?;
            sampler.restore(saved.sampler.clone())?;
            state = saved;
            tracing::info!("resuming {} at step {}", out.display(), state.step);
        }
        let resumed_from = (state.step > 0).then_some(state.step);
        // A best-dev model belongs to the run whose checkpoint is here: a fresh start drops
        // any left from an earlier run in this folder.
        let best_dir = out.join(BEST_MODEL);
        if resumed_from.is_none() && best_dir.exists() {
            std::fs::remove_dir_all(&best_dir).map_err(|e| LaseError::io(&best_dir, e))?;
        }
        let best = BestDev::read(out)?;
        let metrics = MetricsLog::open(&out.join("metrics.jsonl"), Some(state.step))?;
        let dev = DevSet::new(&dev_set, config.run.dev_max_pairs);
        Ok(Self {
            config,
            out,
            options,
            train_set,
            src_tokens,
            tgt_tokens,
            sampler,
            encoder,
            objective,
            optimizer,
            teacher,
            dev,
            vocab_size,
            special_ids,
            state,
            resumed_from,
            best,
            metrics,
        })
    }

    /// Trains to the end of the schedule (or to the stop the options ask for, with a
    /// checkpoint), then writes `model/` and the metrics plot.
    pub fn run(mut self) -> Result<TrainSummary> {
        if crate::runtime::keep_freed_memory_for_reuse() {
            tracing::debug!("glibc keeps freed blocks in its heap for the next step");
        } else {
            tracing::debug!("glibc's malloc settings left as they are");
        }
        let s = &self.config.schedule;
        let bar = progress_bar(self.options.progress, s.steps, self.state.step);
        let started = Instant::now();
        let elapsed_before = self.state.elapsed_seconds;
        let (mut first_loss, mut last_loss, mut last_dev) = (None, None, None);
        let mut window_pairs = 0u64;
        let mut window_start = Instant::now();
        let mut steps_this_run = 0u64;
        let best_dir = self.out.join(BEST_MODEL);
        while self.state.step < s.steps {
            let pairs_before = self.state.pairs_seen;
            let step = self.step()?;
            window_pairs += self.state.pairs_seen - pairs_before;
            steps_this_run += 1;
            first_loss.get_or_insert(step.loss);
            last_loss = Some(step.loss);
            bar.set_position(self.state.step);

            let stop_now = self
                .options
                .stop_after_steps
                .is_some_and(|n| steps_this_run >= n)
                || self.options.deadline.is_some_and(|d| d.passed());
            // A run's last step is logged and evaluated, and so is the last step of a run
            // stopped early (a time slot, --stop-after), so best-model/ can be the
            // checkpoint it leaves: a decaying schedule cut short is usually best at its
            // last step.
            let last_step = self.state.step == s.steps || stop_now;
            let log_now = self
                .state
                .step
                .is_multiple_of(self.config.run.log_every.max(1))
                || last_step;
            let eval_now = self.config.run.eval_every > 0
                && (self.state.step.is_multiple_of(self.config.run.eval_every) || last_step);
            if log_now || eval_now {
                let secs = window_start.elapsed().as_secs_f64().max(1e-9);
                let pairs_per_second = window_pairs as f64 / secs;
                if let Some(p1) = self.record(&step, pairs_per_second, eval_now, &best_dir)? {
                    last_dev = Some(p1);
                }
                bar.set_message(format!(
                    "loss {:.4} lr {:.2e} {pairs_per_second:.0} pairs/s{}",
                    step.loss,
                    step.lr,
                    last_dev
                        .map(|d| format!(" dev P@1 {d:.1}"))
                        .unwrap_or_default()
                ));
                window_pairs = 0;
                window_start = Instant::now();
            }
            let checkpoint_now = self
                .state
                .step
                .is_multiple_of(self.config.run.checkpoint_every.max(1))
                || self.state.step == s.steps
                || stop_now;
            if checkpoint_now {
                self.state.elapsed_seconds = elapsed_before + started.elapsed().as_secs_f64();
                self.checkpoint()?;
            }
            if stop_now && self.state.step < s.steps {
                bar.abandon();
                return Ok(summary(
                    &self.state,
                    self.resumed_from,
                    first_loss,
                    last_loss,
                    last_dev,
                    started,
                    None,
                )
                .with_best(self.best, &best_dir));
            }
        }
        bar.finish();
        plot(self.metrics.path(), &self.out.join("metrics.svg"))?;
        let model_dir = self.out.join("model");
        export(&mut self.encoder, &model_dir, None)?;
        Ok(summary(
            &self.state,
            self.resumed_from,
            first_loss,
            last_loss,
            last_dev,
            started,
            Some(model_dir),
        )
        .with_best(self.best, &best_dir))
    }

    /// One optimizer step: the schedule's micro-batches forward and backward (gradients
    /// accumulated), clipping, AdamW at the step's learning rate.
    fn step(&mut self) -> Result<StepOutcome> {
        let s = &self.config.schedule;
        let device = self.options.device;
        let lr = learning_rate(
            self.config.optimizer.lr,
            self.state.step,
            s.warmup_steps,
            s.steps,
            s.decay,
        );
        let mut loss_sum = 0.0;
        let mut parts_sum: BTreeMap<&'static str, f64> = BTreeMap::new();
        for micro in 0..s.accumulation_steps {
            let batch = self.sampler.next_batch(s.batch_pairs);
            let xs_owned: Vec<TokenIds> = batch
                .iter()
                .map(|&i| self.src_tokens.get(i as usize))
                .collect();
            let ys_owned: Vec<TokenIds> = batch
                .iter()
                .map(|&i| self.tgt_tokens.get(i as usize))
                .collect();
            let xs: Vec<&TokenIds> = xs_owned.iter().collect();
            let ys: Vec<&TokenIds> = ys_owned.iter().collect();
            let pairs = &self.train_set.pairs;
            let lang_x: Vec<i64> = batch
                .iter()
                .map(|&i| pairs[i as usize].src_lang as i64)
                .collect();
            let lang_y: Vec<i64> = batch
                .iter()
                .map(|&i| pairs[i as usize].tgt_lang as i64)
                .collect();
            let ids_x: Vec<&[i64]> = xs.iter().map(|t| t.ids.as_slice()).collect();
            let ids_y: Vec<&[i64]> = ys.iter().map(|t| t.ids.as_slice()).collect();
            let mut ctx = BatchContext::new(&lang_x, &lang_y, device);
            if self.objective.needs_bags() {
                ctx = ctx.with_bags(&ids_x, &ids_y, self.vocab_size, &self.special_ids);
            }
            if let Some(t) = &self.teacher {
                ctx = ctx.with_teacher(
                    t.rows(&t.source, &batch, device),
                    t.rows(&t.target, &batch, device),
                );
                let bank_rows = self.objective.teacher_bank_rows();
                if bank_rows > 0 {
                    let seed = mix_seed(&[
                        self.config.run.seed,
                        self.state.step,
                        micro as u64,
                        TEACHER_BANK_STREAM,
                    ]);
                    if let Some(bank) = t.bank(bank_rows, seed, device) {
                        ctx = ctx.with_teacher_bank(bank);
                    }
                }
            }
            let pass = PassOptions {
                chunk: s.grad_cache_chunk,
                seed: mix_seed(&[self.config.run.seed, self.state.step, micro as u64]),
                loss_scale: 1.0 / s.accumulation_steps as f64,
                train: true,
                padding_chunk: s.padding_chunk,
            };
            let out_loss = forward_backward(&self.encoder, &self.objective, &xs, &ys, &ctx, &pass);
            let value = out_loss.total.double_value(&[]);
            if !value.is_finite() {
                return Err(LaseError::Model(format!(
                    "loss is {value} at step {} (parts {:?}); lower the learning rate or check the data",
                    self.state.step + 1,
                    out_loss.parts
                )));
            }
            loss_sum += value / s.accumulation_steps as f64;
            for (name, v) in out_loss.parts {
                *parts_sum.entry(name).or_insert(0.0) += v / s.accumulation_steps as f64;
            }
            self.state.pairs_seen += batch.len() as u64;
        }
        let grad_norm = self.optimizer.grad_norm();
        if !grad_norm.is_finite() {
            return Err(LaseError::Model(format!(
                "gradient norm is {grad_norm} at step {}; lower the learning rate or check the data",
                self.state.step + 1
            )));
        }
        let max_norm = self.config.optimizer.max_grad_norm;
        if max_norm > 0.0 && grad_norm > max_norm {
            self.optimizer.scale_grads(max_norm / (grad_norm + 1e-6));
        }
        self.optimizer.step(lr);
        self.optimizer.zero_grad();
        self.state.step += 1;
        Ok(StepOutcome {
            loss: loss_sum,
            lr,
            grad_norm,
            parts: parts_sum,
        })
    }

    /// Appends the step's metrics line; when `eval_now`, scores the dev set first and
    /// writes `best-model/` if it improved. Returns the dev P@1 it measured.
    fn record(
        &mut self,
        step: &StepOutcome,
        pairs_per_second: f64,
        eval_now: bool,
        best_dir: &Path,
    ) -> Result<Option<f64>> {
        let mut record = serde_json::json!({
            "step": self.state.step,
            "loss": step.loss,
            "lr": step.lr,
            "grad_norm": step.grad_norm,
            "pairs_per_second": pairs_per_second,
            "pairs_seen": self.state.pairs_seen,
            "mixed_precision": self.options.precision == Precision::Bf16,
        });
        for (name, v) in &step.parts {
            record[*name] = serde_json::json!(v);
        }
        let mut dev = None;
        if eval_now && !self.dev.is_empty() {
            let scores = self.dev.scores(&self.encoder)?;
            let p1 = scores.p_at_1;
            record["dev_p_at_1"] = serde_json::json!(p1);
            record["dev_pooled_p_at_1"] = serde_json::json!(scores.pooled_p_at_1);
            if let Some(np) = &scores.non_pivot {
                record["dev_non_pivot_p_at_1"] = serde_json::json!(np.p_at_1);
                record["dev_non_pivot_pooled_p_at_1"] = serde_json::json!(np.pooled_p_at_1);
            }
            dev = Some(p1);
            if self.best.is_none_or(|b| p1 > b.dev_p_at_1) {
                let now = BestDev {
                    step: self.state.step,
                    dev_p_at_1: p1,
                };
                export(&mut self.encoder, best_dir, Some(&now))?;
                self.best = Some(now);
            }
        }
        self.metrics.append(&record)?;
        Ok(dev)
    }

    /// Saves the checkpoint of the current step (atomically; see [`checkpoint::save`]).
    fn checkpoint(&mut self) -> Result<()> {
        self.state.sampler = self.sampler.state().clone();
        self.state.optimizer_steps = self.optimizer.steps_taken();
        checkpoint::save(
            self.out,
            &self.encoder,
            &self.objective,
            &self.optimizer,
            &self.state,
        )
    }
}

fn progress_bar(show: bool, steps: u64, position: u64) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(steps);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} steps {msg} [{elapsed_precise} < {eta_precise}]",
        )
        .expect("valid template"),
    );
    bar.set_position(position);
    bar
}

/// Writes a model (L2-normalised outputs) into `dir` via a temporary folder; with `best`,
/// its `dev.json` goes in before the folder is swapped in.
fn export(encoder: &mut SentenceEncoder, dir: &Path, best: Option<&BestDev>) -> Result<()> {
    let partial = dir.with_extension("partial");
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| LaseError::io(&partial, e))?;
    }
    let in_training = encoder.normalizes();
    encoder.set_normalize(true);
    let saved = encoder.save(&partial);
    encoder.set_normalize(in_training);
    saved?;
    if let Some(b) = best {
        let mut json = serde_json::to_string_pretty(b).expect("BestDev serialises");
        json.push('\n');
        write_atomic(partial.join("dev.json"), json.as_bytes())?;
    }
    crate::io::atomic::replace_dir(&partial, dir)
}
