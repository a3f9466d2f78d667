//! What [`Trainer::new`](super::Trainer::new) builds from a recipe before the first
//! step: the run folder's claim, the encoder to train, the teacher's cached vectors with
//! the objective, and the optimizer over the trainable parameters.

use std::path::Path;

use super::config::TrainConfig;
use super::encoder_init::initial_encoder;
use super::objective::Objective;
use super::optimizer::AdamW;
use super::options::TrainOptions;
use super::teacher_cache::TeacherCache;
use crate::data::ParallelCorpus;
use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;
use crate::model::{Precision, SentenceEncoder};

/// Creates `out` and records the recipe there; a folder holding another recipe's run is
/// an error (resume needs the same recipe).
pub(super) fn claim_run_folder(config: &TrainConfig, out: &Path) -> Result<()> {
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
        Ok(())
    } else {
        write_atomic(&config_path, config.to_toml().as_bytes())
    }
}

/// The encoder a run trains: the checkpoint's when resuming, else the recipe's initial
/// one (seeded), set to the recipe's training normalisation and mixed precision.
pub(super) fn training_encoder(
    config: &TrainConfig,
    out: &Path,
    options: &TrainOptions,
    train_set: &ParallelCorpus,
    resume_dir: Option<&Path>,
) -> Result<SentenceEncoder> {
    tch::manual_seed(config.run.seed as i64);
    let mut encoder = match resume_dir {
        Some(dir) => SentenceEncoder::load(dir.join("encoder"), options.device)?,
        None => initial_encoder(config, out, train_set, options.device)?,
    };
    let normalize_in_training = config
        .objective
        .distillation
        .as_ref()
        .is_some_and(|d| d.normalize_student);
    encoder.set_normalize(normalize_in_training);
    encoder.set_mixed_precision(options.precision)?;
    if options.precision != Precision::F32 {
        tracing::info!(
            "mixed precision: {:?} matrix products, float32 weights",
            options.precision
        );
    }
    Ok(encoder)
}

/// Ids of the tokenizer's special tokens (left out of XTR's bags of tokens).
pub(super) fn special_token_ids(encoder: &SentenceEncoder) -> Vec<i64> {
    encoder
        .tokenizer()
        .inner()
        .get_added_tokens_decoder()
        .iter()
        .filter(|(_, t)| t.special)
        .map(|(id, _)| *id as i64)
        .collect()
}

/// The distillation teacher's cached vectors (when the recipe has a teacher) and the
/// recipe's objective, its heads sized for this encoder and teacher.
pub(super) fn teacher_and_objective(
    config: &TrainConfig,
    out: &Path,
    options: &TrainOptions,
    train_set: &ParallelCorpus,
    encoder: &SentenceEncoder,
    vocab_size: usize,
) -> Result<(Option<TeacherCache>, Objective)> {
    let device = options.device;
    let distillation = config.objective.distillation.as_ref();
    let teacher = match distillation {
        Some(d) => Some(TeacherCache::build(
            d,
            train_set,
            out,
            device,
            options.progress,
        )?),
        None => None,
    };
    let mut objective = Objective::new(
        &config.objective,
        encoder.dim(),
        train_set.languages.len(),
        vocab_size,
        teacher.as_ref().map(|t| t.dim),
        device,
    )?;
    if let Some(t) = &teacher
        && objective.wants_teacher_center()
    {
        objective.set_teacher_center(t.mean(device));
    }
    Ok((teacher, objective))
}

/// AdamW over the trainable parameters; with `freeze_encoder`, the transformer's
/// weights get no gradients and are left out (its dense head still trains); with
/// `extend_vocabulary.train_only_added_rows`, only the rows `out/init` added to the word
/// embeddings train (every other encoder weight is left out, the old rows frozen).
pub(super) fn new_optimizer(
    config: &TrainConfig,
    encoder: &SentenceEncoder,
    objective: &Objective,
    out: &Path,
) -> Result<AdamW> {
    let added_rows_only = config
        .model
        .extend_vocabulary
        .as_ref()
        .is_some_and(|x| x.train_only_added_rows);
    let is_word_embeddings = |name: &str| name.ends_with("embeddings.word_embeddings.weight");
    let params = trainable_parameters(encoder, objective);
    // The word-embedding matrices (name, rows): the one whose added rows train.
    let embeddings: Vec<(String, usize)> = params
        .iter()
        .filter(|(n, _)| n.starts_with("encoder.") && is_word_embeddings(n))
        .map(|(n, t)| (n.clone(), t.size()[0] as usize))
        .collect();
    let mut optimizer = AdamW::new(
        params
            .into_iter()
            .filter(|(name, t)| {
                let frozen = name.starts_with("encoder.")
                    && if added_rows_only {
                        !is_word_embeddings(name)
                    } else {
                        config.model.freeze_encoder && !name.starts_with("encoder.dense_")
                    };
                if frozen {
                    // No gradients flow into these weights at all.
                    let _ = t.shallow_clone().set_requires_grad(false);
                }
                !frozen
            })
            .collect(),
        &config.optimizer,
    );
    if added_rows_only {
        let (old_rows, new_rows) = super::encoder_init::rows_of_extension(out)?;
        let [(name, rows)] = embeddings.as_slice() else {
            let names: Vec<&String> = embeddings.iter().map(|(n, _)| n).collect();
            return Err(LaseError::Model(format!(
                "train_only_added_rows needs one word-embedding matrix, the encoder has {names:?}"
            )));
        };
        let rows = *rows;
        if new_rows != rows || old_rows >= new_rows {
            return Err(LaseError::bad_file(
                out.join("init").join("EXTENDED"),
                format!(
                    "records an extension from {old_rows} to {new_rows} rows, but {name} has \
                     {rows} rows: train_only_added_rows needs the run's own extension with \
                     at least one added piece"
                ),
            ));
        }
        optimizer.freeze_leading_rows(name, old_rows)?;
    }
    Ok(optimizer)
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
