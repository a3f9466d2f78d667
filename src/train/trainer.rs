//! The training loop: data -> tokenizer -> encoder -> objective -> AdamW, with dev
//! evaluation, JSONL metrics, atomic checkpoints and exact resume.
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

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use tch::{Device, Kind, Tensor};

use super::checkpoint::{self, TrainState};
use super::config::{DataConfig, ModelConfig, TokenizerConfig, TrainConfig};
use super::grad_cache::{PassOptions, forward_backward};
use super::metrics::{MetricsLog, plot};
use super::objective::{BatchContext, Objective};
use super::optimizer::AdamW;
use super::schedule::learning_rate;
use crate::data::sampler::pair_keys;
use crate::data::{BatchSampler, ParallelCorpus, split_dev};
use crate::error::{LaseError, Result};
use crate::eval::bitext_retrieval::bitext_retrieval;
use crate::eval::embed_unit_vectors;
use crate::eval::leakage::BenchmarkSentences;
use crate::inference::EncodeOptions;
use crate::io::atomic::write_atomic;
use crate::mine::MatrixView;
use crate::model::dense::{DenseConfig, IDENTITY};
use crate::model::{
    EncoderConfig, HeadSpec, PoolingConfig, PoolingMode, Precision, SentenceEncoder,
};
use crate::rng::mix_seed;
use crate::tokenizer::TokenIds;
use crate::tokenizer::training::{TokenizerTrainingOptions, balanced_sample, train_unigram};

/// Run-time options that are not part of the recipe.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    pub device: Device,
    /// Stop (after checkpointing) once this many steps are done in this process, as if
    /// the run were killed there; for resume tests and time-sliced runs.
    pub stop_after_steps: Option<u64>,
    /// Stop (after checkpointing) at the first step that ends past this much wall-clock
    /// time in this process: a run sliced to a scheduler's or a lent GPU's time limit.
    pub time_limit: Option<std::time::Duration>,
    pub progress: bool,
    /// Mixed precision of the student's forward and backward passes (bf16: bfloat16
    /// matrix products over float32 weights; faster on GPUs and AMX / AVX512-BF16 CPUs).
    /// A run option like the device, not part of the recipe: a run may resume in
    /// another precision.
    pub precision: Precision,
}

impl Default for TrainOptions {
    fn default() -> Self {
        Self {
            device: Device::Cpu,
            stop_after_steps: None,
            time_limit: None,
            progress: false,
            precision: Precision::F32,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Serialize)]
pub struct TrainSummary {
    pub steps: u64,
    pub resumed_from: Option<u64>,
    pub first_loss: Option<f64>,
    pub last_loss: Option<f64>,
    pub dev_p_at_1: Option<f64>,
    pub pairs_per_second: f64,
    pub seconds: f64,
    pub model_dir: Option<PathBuf>,
    /// The best dev P@1 of the run so far and where its model is (`best-model/`).
    pub best_dev: Option<BestDev>,
    pub best_model_dir: Option<PathBuf>,
}

/// The step and score of a run's best dev P@1 (`best-model/dev.json`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BestDev {
    pub step: u64,
    pub dev_p_at_1: f64,
}

/// The folder of the best-dev model in a run folder.
pub const BEST_MODEL: &str = "best-model";

impl BestDev {
    /// The best-dev record of the run in `out`, if a complete `best-model/` exists.
    pub fn read(out: &Path) -> Result<Option<Self>> {
        let path = out.join(BEST_MODEL).join("dev.json");
        if !path.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|e| LaseError::io(&path, e))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| LaseError::bad_line(&path, e.line(), e.to_string()))
    }
}

/// Trains (or resumes) the recipe `config` into `out`.
pub fn train(config: &TrainConfig, out: &Path, options: &TrainOptions) -> Result<TrainSummary> {
    config.validate()?;
    crate::runtime::flush_denormals();
    std::fs::create_dir_all(out).map_err(|e| LaseError::io(out, e))?;
    let config_path = out.join("config.toml");
    if config_path.exists() {
        let previous = TrainConfig::from_file(&config_path)?;
        if &previous != config {
            return Err(LaseError::InvalidArgument(format!(
                "{} holds a run of a different recipe; resume needs the same config (or choose another --out)",
                out.display()
            )));
        }
    } else {
        write_atomic(&config_path, config.to_toml().as_bytes())?;
    }

    let (train_set, dev_set) = training_and_dev_sets(&config.data, config.run.seed)?;
    tracing::info!(
        "{} training pairs in {} languages ({} skipped as empty), {} dev pairs",
        train_set.len(),
        train_set.languages.len(),
        train_set.skipped_empty,
        dev_set.len()
    );

    let device = options.device;
    let resume_dir = checkpoint::find(out);
    let resumed_state = resume_dir
        .as_deref()
        .map(checkpoint::read_state)
        .transpose()?;
    tch::manual_seed(config.run.seed as i64);
    let mut encoder = match &resume_dir {
        Some(dir) => SentenceEncoder::load(dir.join("encoder"), device)?,
        None => initial_encoder(config, out, &train_set, device)?,
    };
    let normalize_in_training = config
        .objective
        .distillation
        .as_ref()
        .is_some_and(|d| d.normalize_student);
    encoder.set_normalize(normalize_in_training);
    encoder.set_mixed_precision(options.precision);
    if options.precision != Precision::F32 {
        tracing::info!(
            "mixed precision: {:?} matrix products, float32 weights",
            options.precision
        );
    }
    if let Some(state) = &resumed_state
        && state.languages != train_set.languages
    {
        return Err(LaseError::InvalidArgument(
            "the training data's languages differ from the checkpoint's".into(),
        ));
    }

    // Training sentences may be cut shorter than the model's own limit (which the saved
    // model keeps for inference).
    let model_max = encoder.tokenizer().max_length();
    if let Some(n) = config.model.train_max_tokens {
        encoder.set_max_seq_length(n.min(model_max))?;
    }
    // In chunks into flat stores: millions of pairs fit in a few GB (issue 14: the
    // whole-corpus batch encode took 18 GB for 2.8M pairs and was killed).
    const TOKENIZE_CHUNK: usize = 16_384;
    let tokenizer = encoder.tokenizer();
    let src_tokens = tokenizer.encode_to_store(
        train_set.pairs.iter().map(|p| p.src.as_str()),
        TOKENIZE_CHUNK,
    )?;
    let tgt_tokens = tokenizer.encode_to_store(
        train_set.pairs.iter().map(|p| p.tgt.as_str()),
        TOKENIZE_CHUNK,
    )?;
    encoder.set_max_seq_length(model_max)?;
    let keys: Vec<[u64; 3]> = train_set.pairs.iter().map(pair_keys).collect();
    let mut sampler = batch_sampler(&config.data, &train_set, keys)?;

    let vocab_size = encoder.tokenizer().vocab_size();
    let special_ids: Vec<i64> = encoder
        .tokenizer()
        .inner()
        .get_added_tokens_decoder()
        .iter()
        .filter(|(_, t)| t.special)
        .map(|(id, _)| *id as i64)
        .collect();
    let teacher = match &config.objective.distillation {
        Some(d) => Some(TeacherCache::build(
            d,
            &train_set,
            out,
            device,
            options.progress,
        )?),
        None => None,
    };
    if let (Some(t), Some(d)) = (&teacher, &config.objective.distillation)
        && (d.mse > 0.0)
        && t.dim != encoder.dim()
    {
        return Err(LaseError::InvalidArgument(format!(
            "MSE distillation needs the student's output width ({}) to equal the teacher's ({}); set model.output_dim = {}",
            encoder.dim(),
            t.dim,
            t.dim
        )));
    }
    let mut objective = Objective::new(
        &config.objective,
        encoder.dim(),
        train_set.languages.len(),
        vocab_size,
        teacher.as_ref().map(|t| t.dim),
        device,
    )?;
    if let (Some(t), Some(d)) = (&teacher, &config.objective.distillation)
        && d.soft_label_centering
    {
        objective.set_teacher_center(t.mean(device));
    }
    let mut optimizer = AdamW::new(
        trainable_parameters(&encoder, &objective)
            .into_iter()
            .filter(|(name, t)| {
                let frozen = config.model.freeze_encoder
                    && name.starts_with("encoder.")
                    && !name.starts_with("encoder.dense_");
                if frozen {
                    // No gradients flow into the transformer at all.
                    let _ = t.shallow_clone().set_requires_grad(false);
                }
                !frozen
            })
            .collect(),
        &config.optimizer,
    );

    let mut state = TrainState {
        step: 0,
        sampler: sampler.state().clone(),
        optimizer_steps: 0,
        languages: train_set.languages.clone(),
        pairs_seen: 0,
        elapsed_seconds: 0.0,
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
    let mut best = BestDev::read(out)?;
    let metrics = MetricsLog::open(&out.join("metrics.jsonl"), Some(state.step))?;

    let dev = DevSet::new(&dev_set, config.run.dev_max_pairs);
    let s = &config.schedule;
    let bar = if options.progress {
        let bar = ProgressBar::new(s.steps);
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} steps {msg} [{elapsed_precise} < {eta_precise}]",
            )
            .expect("valid template"),
        );
        bar.set_position(state.step);
        bar
    } else {
        ProgressBar::hidden()
    };
    let started = Instant::now();
    let elapsed_before = state.elapsed_seconds;
    let mut first_loss = None;
    let mut last_loss = None;
    let mut last_dev = None;
    let mut window_pairs = 0u64;
    let mut window_start = Instant::now();
    let mut steps_this_run = 0u64;

    while state.step < s.steps {
        let lr = learning_rate(
            config.optimizer.lr,
            state.step,
            s.warmup_steps,
            s.steps,
            s.decay,
        );
        let mut loss_sum = 0.0;
        let mut parts_sum: BTreeMap<&'static str, f64> = BTreeMap::new();
        for micro in 0..s.accumulation_steps {
            let batch = sampler.next_batch(s.batch_pairs);
            let xs_owned: Vec<TokenIds> =
                batch.iter().map(|&i| src_tokens.get(i as usize)).collect();
            let ys_owned: Vec<TokenIds> =
                batch.iter().map(|&i| tgt_tokens.get(i as usize)).collect();
            let xs: Vec<&TokenIds> = xs_owned.iter().collect();
            let ys: Vec<&TokenIds> = ys_owned.iter().collect();
            let lang_x: Vec<i64> = batch
                .iter()
                .map(|&i| train_set.pairs[i as usize].src_lang as i64)
                .collect();
            let lang_y: Vec<i64> = batch
                .iter()
                .map(|&i| train_set.pairs[i as usize].tgt_lang as i64)
                .collect();
            let ids_x: Vec<&[i64]> = xs.iter().map(|t| t.ids.as_slice()).collect();
            let ids_y: Vec<&[i64]> = ys.iter().map(|t| t.ids.as_slice()).collect();
            let mut ctx = BatchContext::new(&lang_x, &lang_y, device);
            if objective.needs_bags() {
                ctx = ctx.with_bags(&ids_x, &ids_y, vocab_size, &special_ids);
            }
            if let Some(t) = &teacher {
                ctx = ctx.with_teacher(
                    t.rows(&t.source, &batch, device),
                    t.rows(&t.target, &batch, device),
                );
            }
            let pass = PassOptions {
                chunk: s.grad_cache_chunk,
                seed: mix_seed(&[config.run.seed, state.step, micro as u64]),
                loss_scale: 1.0 / s.accumulation_steps as f64,
                train: true,
                padding_chunk: s.padding_chunk,
            };
            let out_loss = forward_backward(&encoder, &objective, &xs, &ys, &ctx, &pass);
            let value = out_loss.total.double_value(&[]);
            if !value.is_finite() {
                return Err(LaseError::Model(format!(
                    "loss is {value} at step {} (parts {:?}); lower the learning rate or check the data",
                    state.step + 1,
                    out_loss.parts
                )));
            }
            loss_sum += value / s.accumulation_steps as f64;
            for (name, v) in out_loss.parts {
                *parts_sum.entry(name).or_insert(0.0) += v / s.accumulation_steps as f64;
            }
            state.pairs_seen += batch.len() as u64;
            window_pairs += batch.len() as u64;
        }
        let grad_norm = optimizer.grad_norm();
        if !grad_norm.is_finite() {
            return Err(LaseError::Model(format!(
                "gradient norm is {grad_norm} at step {}; lower the learning rate or check the data",
                state.step + 1
            )));
        }
        if config.optimizer.max_grad_norm > 0.0 && grad_norm > config.optimizer.max_grad_norm {
            optimizer.scale_grads(config.optimizer.max_grad_norm / (grad_norm + 1e-6));
        }
        optimizer.step(lr);
        optimizer.zero_grad();
        state.step += 1;
        steps_this_run += 1;
        first_loss.get_or_insert(loss_sum);
        last_loss = Some(loss_sum);
        bar.set_position(state.step);

        let log_now =
            state.step.is_multiple_of(config.run.log_every.max(1)) || state.step == s.steps;
        let eval_now = config.run.eval_every > 0
            && (state.step.is_multiple_of(config.run.eval_every) || state.step == s.steps);
        if log_now || eval_now {
            let secs = window_start.elapsed().as_secs_f64().max(1e-9);
            let mut record = serde_json::json!({
                "step": state.step,
                "loss": loss_sum,
                "lr": lr,
                "grad_norm": grad_norm,
                "pairs_per_second": window_pairs as f64 / secs,
                "pairs_seen": state.pairs_seen,
                "mixed_precision": options.precision == Precision::Bf16,
            });
            for (name, v) in &parts_sum {
                record[*name] = serde_json::json!(v);
            }
            if eval_now && !dev.is_empty() {
                let p1 = dev.p_at_1(&encoder)?;
                record["dev_p_at_1"] = serde_json::json!(p1);
                last_dev = Some(p1);
                if best.is_none_or(|b| p1 > b.dev_p_at_1) {
                    let now = BestDev {
                        step: state.step,
                        dev_p_at_1: p1,
                    };
                    export(&mut encoder, &best_dir, Some(&now))?;
                    best = Some(now);
                }
            }
            bar.set_message(format!(
                "loss {loss_sum:.4} lr {lr:.2e} {:.0} pairs/s{}",
                window_pairs as f64 / secs,
                last_dev
                    .map(|d| format!(" dev P@1 {d:.1}"))
                    .unwrap_or_default()
            ));
            metrics.append(&record)?;
            window_pairs = 0;
            window_start = Instant::now();
        }
        let stop_now = options
            .stop_after_steps
            .is_some_and(|n| steps_this_run >= n)
            || options.time_limit.is_some_and(|t| started.elapsed() >= t);
        let checkpoint_now = state
            .step
            .is_multiple_of(config.run.checkpoint_every.max(1))
            || state.step == s.steps
            || stop_now;
        if checkpoint_now {
            state.sampler = sampler.state().clone();
            state.optimizer_steps = optimizer.steps_taken();
            state.elapsed_seconds = elapsed_before + started.elapsed().as_secs_f64();
            checkpoint::save(out, &encoder, &objective, &optimizer, &state)?;
        }
        if stop_now && state.step < s.steps {
            bar.abandon();
            return Ok(summary(
                &state,
                resumed_from,
                first_loss,
                last_loss,
                last_dev,
                started,
                None,
            )
            .with_best(best, &best_dir));
        }
    }
    bar.finish();
    plot(metrics.path(), &out.join("metrics.svg"))?;
    let model_dir = out.join("model");
    export(&mut encoder, &model_dir, None)?;
    Ok(summary(
        &state,
        resumed_from,
        first_loss,
        last_loss,
        last_dev,
        started,
        Some(model_dir),
    )
    .with_best(best, &best_dir))
}

fn summary(
    state: &TrainState,
    resumed_from: Option<u64>,
    first_loss: Option<f64>,
    last_loss: Option<f64>,
    dev_p_at_1: Option<f64>,
    started: Instant,
    model_dir: Option<PathBuf>,
) -> TrainSummary {
    let seconds = started.elapsed().as_secs_f64();
    TrainSummary {
        steps: state.step,
        resumed_from,
        first_loss,
        last_loss,
        dev_p_at_1,
        pairs_per_second: state.pairs_seen as f64 / state.elapsed_seconds.max(seconds).max(1e-9),
        seconds,
        model_dir,
        best_dev: None,
        best_model_dir: None,
    }
}

impl TrainSummary {
    /// The summary with the run's best-dev model, if dev P@1 was evaluated.
    fn with_best(mut self, best: Option<BestDev>, dir: &Path) -> Self {
        self.best_model_dir = best.map(|_| dir.to_path_buf());
        self.best_dev = best;
        self
    }
}

/// The recipe's batch sampler: languages pooled by temperature, or, when any source has a
/// weight, a source drawn by weight and then one of its languages by temperature.
fn batch_sampler(
    data: &DataConfig,
    train_set: &ParallelCorpus,
    keys: Vec<[u64; 3]>,
) -> Result<BatchSampler> {
    if data.sources.iter().all(|s| s.weight().is_none()) {
        return BatchSampler::new(train_set.pairs_by_language(), keys, &data.sampling);
    }
    let weights: Vec<f64> = data
        .sources
        .iter()
        .map(|s| s.weight().unwrap_or(1.0))
        .collect();
    let sampler = BatchSampler::mixed(
        train_set.pairs_by_source_and_language(),
        &weights,
        keys,
        &data.sampling,
    )?;
    tracing::info!(
        "sources mixed by weight {weights:?}, languages by temperature alpha {}",
        data.sampling.alpha
    );
    Ok(sampler)
}

/// A recipe's training pairs: its sources, less the pairs that share a sentence with a
/// test set under `exclude_test_sets`; also how many were dropped (None: no exclusion).
/// `already_read`: benchmark sentences the caller has read from a folder, used instead of
/// reading that folder again when it is the exclusion folder.
pub fn read_training_pairs(
    data: &DataConfig,
    already_read: Option<(&Path, &BenchmarkSentences)>,
) -> Result<(ParallelCorpus, Option<usize>)> {
    let mut corpus = ParallelCorpus::read(&data.sources)?;
    let Some(dir) = data.exclusion() else {
        return Ok((corpus, None));
    };
    let same_folder = |read_from: &Path| match (dir.canonicalize(), read_from.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let read_here;
    let benchmarks = match already_read {
        Some((folder, b)) if same_folder(folder) => b,
        _ => {
            read_here = BenchmarkSentences::read(dir)?;
            &read_here
        }
    };
    let dropped = crate::eval::leakage::drop_leaks(&mut corpus, benchmarks);
    tracing::info!(
        "dropped {dropped} training pairs sharing a sentence with the {} test sentences under {}",
        benchmarks.len(),
        dir.display()
    );
    Ok((corpus, Some(dropped)))
}

/// The pairs a recipe trains on and its dev pairs, as `lase train` splits them: the
/// sources minus test-set leaks, the dev split carved out, then `max_train_pairs`' sample.
pub fn training_and_dev_sets(
    data: &DataConfig,
    seed: u64,
) -> Result<(ParallelCorpus, ParallelCorpus)> {
    let (corpus, _) = read_training_pairs(data, None)?;
    let (mut train_set, dev_set) = split_dev(corpus, &data.dev);
    if let Some(n) = data.max_train_pairs {
        keep_sample(&mut train_set, n, seed);
    }
    Ok((train_set, dev_set))
}

/// Keeps a seeded random sample of `n` pairs (in their original order).
fn keep_sample(corpus: &mut ParallelCorpus, n: usize, seed: u64) {
    if corpus.pairs.len() <= n {
        return;
    }
    let mut order: Vec<usize> = (0..corpus.pairs.len()).collect();
    crate::rng::SplitMix64::new(mix_seed(&[seed, 0x5a3b1e])).shuffle(&mut order);
    let mut keep = vec![false; corpus.pairs.len()];
    for &i in &order[..n] {
        keep[i] = true;
    }
    let mut i = 0;
    corpus.pairs.retain(|_| {
        i += 1;
        keep[i - 1]
    });
}

/// What the optimizer updates, named as checkpoints store it: the encoder's variables
/// (`encoder.<name>`, sorted) and then the objective's heads.
pub fn trainable_parameters(
    encoder: &SentenceEncoder,
    objective: &Objective,
) -> Vec<(String, tch::Tensor)> {
    let mut params: Vec<(String, tch::Tensor)> = encoder
        .var_store()
        .variables()
        .into_iter()
        .map(|(n, t)| (format!("encoder.{n}"), t))
        .collect();
    params.sort_by(|a, b| a.0.cmp(&b.0));
    params.extend(objective.named_parameters());
    params
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

/// The encoder a fresh run starts from: `init_from`, or random weights with a
/// tokenizer from the recipe (or trained on the training text).
fn initial_encoder(
    config: &TrainConfig,
    out: &Path,
    train_set: &ParallelCorpus,
    device: Device,
) -> Result<SentenceEncoder> {
    if let Some(dir) = &config.model.init_from {
        let dir = match &config.model.extend_vocabulary {
            Some(x) => extended_init(dir, x, out, train_set, config.run.seed)?,
            None => dir.clone(),
        };
        let encoder = SentenceEncoder::load(&dir, device)?;
        return match config.model.output_dim {
            Some(k) if k != encoder.dim() => with_new_output_layer(&encoder, k),
            _ => Ok(encoder),
        };
    }
    let tokenizer_path = out.join("tokenizer.json");
    let tokenizer_json = if let Some(path) = &config.tokenizer.path {
        std::fs::read_to_string(path).map_err(|e| LaseError::io(path, e))?
    } else if tokenizer_path.exists() {
        std::fs::read_to_string(&tokenizer_path).map_err(|e| LaseError::io(&tokenizer_path, e))?
    } else {
        let json = train_tokenizer(train_set, &config.tokenizer, config.run.seed, false)?;
        write_atomic(&tokenizer_path, json.as_bytes())?;
        json
    };
    new_encoder(&config.model, tokenizer_json, device)
}

/// `init_from` with the recipe's vocabulary extension, written once to `out/init/` (the
/// sample and the trainer are seeded, so a re-run writes the same folder).
fn extended_init(
    dir: &Path,
    x: &super::config::VocabularyExtension,
    out: &Path,
    train_set: &ParallelCorpus,
    seed: u64,
) -> Result<PathBuf> {
    let target = out.join("init");
    if target.join("model.safetensors").exists() && target.join("EXTENDED").exists() {
        return Ok(target);
    }
    // The transformer folder of a sentence-transformers model is its root here.
    let mut by_language: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for p in &train_set.pairs {
        by_language
            .entry(train_set.languages[p.src_lang as usize].clone())
            .or_default()
            .push(p.src.as_str());
    }
    for v in by_language.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    let sample = crate::tokenizer::training::balanced_sample(
        &by_language,
        x.sample_sentences,
        x.alpha,
        seed,
    );
    let partial = out.join("init.partial");
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| LaseError::io(&partial, e))?;
    }
    let report = crate::tokenizer::extend::extend_vocabulary(dir, &sample, x.pieces, &partial)?;
    tracing::info!(
        "vocabulary {} -> {} pieces; tokens per sampled sentence {:.1} -> {:.1}; first new pieces {:?}",
        report.old_vocab_size,
        report.new_vocab_size,
        report.tokens_per_sentence_before,
        report.tokens_per_sentence_after,
        report.examples
    );
    let text = serde_json::to_string_pretty(&report).expect("report serialises");
    write_atomic(partial.join("EXTENDED"), text.as_bytes())?;
    if target.exists() {
        std::fs::remove_dir_all(&target).map_err(|e| LaseError::io(&target, e))?;
    }
    std::fs::rename(&partial, &target).map_err(|e| LaseError::io(&partial, e))?;
    Ok(target)
}

/// `encoder` with a new dense layer d -> k (PyTorch's nn.Linear initialisation: weight
/// uniform in ±1/√d, bias 0), e.g. the 384-d output MSE distillation from a 384-d
/// teacher needs on top of a 256-d pretrained student.
fn with_new_output_layer(encoder: &SentenceEncoder, k: usize) -> Result<SentenceEncoder> {
    let d = encoder.dim() as i64;
    let bound = 1.0 / (d as f64).sqrt();
    let weight = (Tensor::rand([k as i64, d], (Kind::Float, Device::Cpu)) * 2.0 - 1.0) * bound;
    let bias = Tensor::zeros([k as i64], (Kind::Float, Device::Cpu));
    encoder.with_linear_projection(&weight, &bias)
}

/// Trains the recipe's Unigram tokenizer on a language-balanced sample of `corpus`;
/// returns the tokenizer.json text.
pub fn train_tokenizer(
    corpus: &ParallelCorpus,
    t: &TokenizerConfig,
    seed: u64,
    progress: bool,
) -> Result<String> {
    let mut by_language: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (text, lang) in corpus.sentences() {
        by_language.entry(lang.to_owned()).or_default().push(text);
    }
    let sample = balanced_sample(&by_language, t.sample_sentences, t.alpha, seed);
    tracing::info!(
        "training a {}-piece unigram tokenizer on {} sampled sentences",
        t.vocab_size,
        sample.len()
    );
    train_unigram(
        &sample,
        &corpus.languages,
        &TokenizerTrainingOptions {
            vocab_size: t.vocab_size,
            show_progress: progress,
        },
    )
}

/// A randomly initialised encoder of the recipe's shape.
pub fn new_encoder(
    model: &ModelConfig,
    tokenizer_json: String,
    device: Device,
) -> Result<SentenceEncoder> {
    let inner = tokenizers::Tokenizer::from_bytes(tokenizer_json.as_bytes())
        .map_err(|e| LaseError::Tokenizer(format!("invalid tokenizer.json: {e}")))?;
    let vocab = inner.get_vocab_size(true);
    let pad = inner
        .token_to_id("<pad>")
        .or_else(|| inner.token_to_id("[PAD]"))
        .unwrap_or(0) as i64;
    let mut c = EncoderConfig::bert(vocab, model.hidden, model.layers, model.heads, model.ffn);
    c.max_position_embeddings = model.max_tokens;
    c.hidden_dropout_prob = model.dropout;
    c.attention_probs_dropout_prob = model.dropout;
    c.embedding_size = model.embedding_size;
    c.recurrent_unit_layers = model.recurrent_unit_layers;
    c.pad_token_id = pad;
    let mode: PoolingMode = model.pooling.parse().map_err(LaseError::InvalidArgument)?;
    let head = HeadSpec {
        pooling: PoolingConfig::single(model.hidden, mode),
        dense: model
            .output_dim
            .map(|k| DenseConfig {
                in_features: model.hidden,
                out_features: k,
                bias: true,
                activation_function: IDENTITY.into(),
            })
            .into_iter()
            .collect(),
        normalize: false,
    };
    SentenceEncoder::new(c, tokenizer_json, model.max_tokens, head, device)
}

/// Dev pairs grouped by language, for P@1 during training.
struct DevSet {
    groups: Vec<(Vec<String>, Vec<String>)>,
}

impl DevSet {
    fn new(dev: &ParallelCorpus, max_pairs: usize) -> Self {
        let mut by_lang: BTreeMap<u16, (Vec<String>, Vec<String>)> = BTreeMap::new();
        let limit = if max_pairs == 0 {
            usize::MAX
        } else {
            max_pairs
        };
        for p in dev.pairs.iter().take(limit) {
            let e = by_lang.entry(p.src_lang).or_default();
            e.0.push(p.src.clone());
            e.1.push(p.tgt.clone());
        }
        Self {
            groups: by_lang.into_values().filter(|g| g.0.len() >= 2).collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Mean over languages of the two directions' mean P@1, in percent.
    fn p_at_1(&self, encoder: &SentenceEncoder) -> Result<f64> {
        let options = EncodeOptions::for_device(encoder.device());
        let dim = encoder.dim();
        let mut total = 0.0;
        for (src, tgt) in &self.groups {
            let x = embed_unit_vectors(encoder, src, &options, "dev", false)?;
            let y = embed_unit_vectors(encoder, tgt, &options, "dev", false)?;
            let scores = bitext_retrieval(
                &MatrixView::new(&x, src.len(), dim)?,
                &MatrixView::new(&y, tgt.len(), dim)?,
                Some((src, tgt)),
            )?;
            total += scores.p_at_1();
        }
        Ok(100.0 * total / self.groups.len() as f64)
    }
}

/// Writes one `dim`-wide row per text of `texts` to `path` (atomically), embedding each
/// distinct text once (Tatoeba repeats many sentences: 249k of the 382k English sides
/// are distinct) into the scratch matrix `scratch`, removed afterwards.
fn write_embeddings_of_distinct(
    texts: &[String],
    dim: usize,
    path: &Path,
    scratch: &Path,
    bar: &ProgressBar,
    embed: &mut dyn FnMut(&[&str]) -> Result<Vec<f32>>,
) -> Result<()> {
    let mut row_of: HashMap<&str, usize> = HashMap::new();
    let mut distinct: Vec<&str> = Vec::new();
    let rows: Vec<usize> = texts
        .iter()
        .map(|text| {
            *row_of.entry(text.as_str()).or_insert_with(|| {
                distinct.push(text);
                distinct.len() - 1
            })
        })
        .collect();
    bar.set_length(distinct.len() as u64);
    let mut writer = crate::io::npy::NpyWriter::create(scratch, dim)?;
    for chunk in distinct.chunks(4096) {
        writer.write_rows(&embed(chunk)?)?;
        bar.inc(chunk.len() as u64);
    }
    writer.finish()?;
    let vectors = crate::io::npy::NpyMatrix::open(scratch)?;
    let mut writer = crate::io::npy::NpyWriter::create(path, dim)?;
    for chunk in rows.chunks(4096) {
        let values: Vec<f32> = chunk.iter().flat_map(|&r| vectors.row(r)).collect();
        writer.write_rows(&values)?;
    }
    writer.finish()?;
    drop(vectors);
    std::fs::remove_file(scratch).map_err(|e| LaseError::io(scratch, e))
}

/// Teacher embeddings of the training pairs, computed once into the run folder
/// (`teacher-source.npy`, `teacher-target.npy`) and memory-mapped.
struct TeacherCache {
    source: Option<crate::io::npy::NpyMatrix>,
    target: Option<crate::io::npy::NpyMatrix>,
    dim: usize,
}

impl TeacherCache {
    fn build(
        d: &super::config::DistillationConfig,
        train_set: &ParallelCorpus,
        out: &Path,
        device: Device,
        progress: bool,
    ) -> Result<Self> {
        use super::config::TeacherSide;
        let mut teacher: Option<SentenceEncoder> = None;
        let mut side = |name: &str,
                        wanted: bool,
                        pick: &dyn Fn(&crate::data::TranslationPair) -> String|
         -> Result<Option<crate::io::npy::NpyMatrix>> {
            if !wanted {
                return Ok(None);
            }
            let path = out.join(format!("teacher-{name}.npy"));
            if path.exists() {
                let m = crate::io::npy::NpyMatrix::open(&path)?;
                if m.rows == train_set.len() {
                    return Ok(Some(m));
                }
                tracing::warn!(
                    "{}: {} rows for {} pairs; recomputing",
                    path.display(),
                    m.rows,
                    train_set.len()
                );
            }
            if teacher.is_none() {
                teacher = Some(SentenceEncoder::load(&d.teacher, device)?);
            }
            let t = teacher.as_ref().expect("just loaded");
            let options = EncodeOptions::for_device(device);
            let bar = if progress {
                ProgressBar::new(train_set.len() as u64)
            } else {
                ProgressBar::hidden()
            };
            bar.set_message(format!("teacher embeddings ({name})"));
            let texts: Vec<String> = train_set.pairs.iter().map(pick).collect();
            let scratch = out.join(format!("teacher-{name}.distinct.npy"));
            write_embeddings_of_distinct(&texts, t.dim(), &path, &scratch, &bar, &mut |chunk| {
                let v = t.encode_with(chunk, &options)?.contiguous();
                let n = v.numel();
                let mut values = vec![0f32; n];
                v.copy_data(&mut values, n);
                Ok(values)
            })?;
            bar.finish_and_clear();
            Ok(Some(crate::io::npy::NpyMatrix::open(&path)?))
        };
        let (want_src, want_tgt) = match d.teacher_side {
            TeacherSide::Source => (true, false),
            TeacherSide::Target => (false, true),
            TeacherSide::Both => (true, true),
        };
        let source = side("source", want_src, &|p| p.src.clone())?;
        let target = side("target", want_tgt, &|p| p.tgt.clone())?;
        let dim = source
            .as_ref()
            .or(target.as_ref())
            .map(|m| m.cols)
            .unwrap_or(0);
        Ok(Self {
            source,
            target,
            dim,
        })
    }

    /// The mean teacher vector over every cached row of both sides, [d_t] on `device`.
    fn mean(&self, device: Device) -> tch::Tensor {
        let mut sum = vec![0f64; self.dim];
        let mut rows = 0usize;
        for m in [&self.source, &self.target].into_iter().flatten() {
            for row in m.values().chunks(m.cols) {
                for (s, &v) in sum.iter_mut().zip(row) {
                    *s += f64::from(v);
                }
            }
            rows += m.rows;
        }
        let mean: Vec<f32> = sum
            .iter()
            .map(|s| (s / rows.max(1) as f64) as f32)
            .collect();
        tch::Tensor::from_slice(&mean).to_device(device)
    }

    /// Rows `batch` of a side as [N, d_t] on `device`.
    fn rows(
        &self,
        side: &Option<crate::io::npy::NpyMatrix>,
        batch: &[u32],
        device: Device,
    ) -> Option<tch::Tensor> {
        side.as_ref().map(|m| {
            let flat: Vec<f32> = batch.iter().flat_map(|&i| m.row(i as usize)).collect();
            tch::Tensor::from_slice(&flat)
                .view([batch.len() as i64, m.cols as i64])
                .to_device(device)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teacher_rows_follow_the_pairs_and_each_distinct_text_is_embedded_once() {
        let dir = tempfile::tempdir().unwrap();
        let texts: Vec<String> = ["b", "a", "b", "cc", "a", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut calls: Vec<String> = Vec::new();
        let path = dir.path().join("cache.npy");
        let scratch = dir.path().join("cache.distinct.npy");
        write_embeddings_of_distinct(
            &texts,
            2,
            &path,
            &scratch,
            &ProgressBar::hidden(),
            &mut |chunk| {
                calls.extend(chunk.iter().map(|s| s.to_string()));
                Ok(chunk
                    .iter()
                    .flat_map(|s| [s.len() as f32, s.as_bytes()[0] as f32])
                    .collect())
            },
        )
        .unwrap();
        assert_eq!(calls, ["b", "a", "cc"]);
        let m = crate::io::npy::NpyMatrix::open(&path).unwrap();
        assert_eq!(m.rows, texts.len());
        for (i, t) in texts.iter().enumerate() {
            assert_eq!(
                m.row(i),
                vec![t.len() as f32, t.as_bytes()[0] as f32],
                "row {i}"
            );
        }
        assert!(!scratch.exists());
    }
}
