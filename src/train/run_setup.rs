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
/// an error naming the settings that differ (resume needs the same recipe). Only the
/// run's cadence ([`RunCadence`]: how often it logs, evaluates and checkpoints) may
/// change when resuming, e.g. a run moved from a GPU, where a step takes a fraction of a
/// second, to a CPU, where it takes seconds: the new cadence is recorded and applies from
/// the resumed step.
pub(super) fn claim_run_folder(config: &TrainConfig, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| LaseError::io(out, e))?;
    let config_path = out.join("config.toml");
    if !config_path.exists() {
        return write_atomic(&config_path, config.to_toml().as_bytes());
    }
    let previous = TrainConfig::from_file(&config_path)?;
    if &previous == config {
        return Ok(());
    }
    let mut with_new_cadence = previous.clone();
    RunCadence::of(config).apply_to(&mut with_new_cadence);
    if &with_new_cadence == config {
        tracing::info!(
            "resuming {} with another cadence: {} (was {})",
            out.display(),
            RunCadence::of(config),
            RunCadence::of(&previous)
        );
        return write_atomic(&config_path, config.to_toml().as_bytes());
    }
    if !has_trained(out) {
        // A run that failed before its first logged step (a data path mistyped, a teacher
        // missing): nothing of it is worth keeping, and its recipe must not block the
        // corrected one. What it derived from its own recipe goes with it.
        tracing::warn!(
            "{} holds a recipe that never trained a step; replacing it ({})",
            out.display(),
            differing_settings(&toml_tree(&previous), &toml_tree(config))
        );
        let tokenizer = out.join(TRAINED_TOKENIZER);
        // Unless a recipe names that file as its tokenizer (then it is an input).
        let named = |c: &TrainConfig| {
            c.tokenizer.path.as_ref().is_some_and(|p| {
                p == &tokenizer
                    || matches!((p.canonicalize(), tokenizer.canonicalize()), (Ok(a), Ok(b)) if a == b)
            })
        };
        if !named(&previous) && !named(config) {
            match std::fs::remove_file(&tokenizer) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(LaseError::io(&tokenizer, e));
                }
                _ => {}
            }
        }
        return write_atomic(&config_path, config.to_toml().as_bytes());
    }
    Err(LaseError::InvalidArgument(format!(
        "{} holds a run of a different recipe ({}); resume needs the same config, apart from \
         run.log_every, run.eval_every and run.checkpoint_every (or choose another --out)",
        out.display(),
        differing_settings(&toml_tree(&with_new_cadence), &toml_tree(config))
    )))
}

/// The tokenizer a run trains from its data before its first step and reuses when it
/// resumes: stale once the recipe changes. (The vocabulary-extended `init/` folder
/// records the settings it was built with and is rebuilt when they differ; the teacher's
/// caches carry a fingerprint of their texts and teacher: both are checked on their own.)
const TRAINED_TOKENIZER: &str = "tokenizer.json";

/// Whether `out` holds any progress of a run: a checkpoint, logged steps or a model.
fn has_trained(out: &Path) -> bool {
    super::checkpoint::find(out).is_some()
        || ["metrics.jsonl", "model", "best-model"]
            .iter()
            .any(|f| out.join(f).exists())
}

/// How often a run logs, evaluates on its dev split and writes a checkpoint: the settings
/// a resumed run may change without changing what it trains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RunCadence {
    log_every: u64,
    eval_every: u64,
    checkpoint_every: u64,
}

impl RunCadence {
    fn of(config: &TrainConfig) -> Self {
        Self {
            log_every: config.run.log_every,
            eval_every: config.run.eval_every,
            checkpoint_every: config.run.checkpoint_every,
        }
    }

    fn apply_to(self, config: &mut TrainConfig) {
        config.run.log_every = self.log_every;
        config.run.eval_every = self.eval_every;
        config.run.checkpoint_every = self.checkpoint_every;
    }
}

impl std::fmt::Display for RunCadence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "log every {}, evaluate every {}, checkpoint every {} steps",
            self.log_every, self.eval_every, self.checkpoint_every
        )
    }
}

/// The settings two recipes disagree on, as "section.key: old -> new" for up to four keys
/// (then how many more), from their TOML trees: the n-th table of an array of tables is
/// "name[n]", a key only one side has is "unset" on the other.
fn differing_settings(old: &toml::Value, new: &toml::Value) -> String {
    // Every leaf setting as (path, value), in the tree's order.
    fn leaves(prefix: &str, value: &toml::Value, out: &mut Vec<(String, String)>) {
        let join = |key: &str| {
            if prefix.is_empty() {
                key.to_string()
            } else {
                format!("{prefix}.{key}")
            }
        };
        match value {
            toml::Value::Table(table) => {
                for (key, v) in table {
                    leaves(&join(key), v, out);
                }
            }
            toml::Value::Array(items)
                if !items.is_empty() && items.iter().all(toml::Value::is_table) =>
            {
                for (i, v) in items.iter().enumerate() {
                    leaves(&format!("{prefix}[{i}]"), v, out);
                }
            }
            leaf => out.push((prefix.to_string(), leaf.to_string())),
        }
    }
    let (mut old_leaves, mut new_leaves) = (Vec::new(), Vec::new());
    leaves("", old, &mut old_leaves);
    leaves("", new, &mut new_leaves);
    let value_in = |lines: &[(String, String)], key: &str| {
        lines
            .iter()
            .find(|(k, _)| k == key)
            .map_or_else(|| "unset".to_string(), |(_, v)| v.clone())
    };
    let mut seen = std::collections::HashSet::new();
    let differing: Vec<String> = old_leaves
        .iter()
        .chain(&new_leaves)
        .map(|(k, _)| k)
        .filter(|k| seen.insert(k.as_str()))
        .filter_map(|k| {
            let (a, b) = (value_in(&old_leaves, k), value_in(&new_leaves, k));
            (a != b).then(|| format!("{k}: {a} -> {b}"))
        })
        .collect();
    match differing.len() {
        0 => "settings outside the TOML's keys".into(),
        n if n <= 4 => differing.join("; "),
        n => format!("{}; and {} more", differing[..4].join("; "), n - 4),
    }
}

/// A recipe as a TOML tree (what `config.toml` records).
fn toml_tree(config: &TrainConfig) -> toml::Value {
    toml::Value::try_from(config).expect("configs serialise")
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

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_SOURCES: &str = "[data]\nsources = [\n  { format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" },\n  { format = \"tsv\", path = \"b.tsv\", src_lang = \"fra\", tgt_lang = \"eng\", weight = 2.0 },\n]\nexclude_test_sets = false\n";

    fn recipe(extra: &str) -> TrainConfig {
        TrainConfig::from_toml(&format!("{TWO_SOURCES}{extra}")).unwrap()
    }

    fn recorded(out: &Path) -> TrainConfig {
        TrainConfig::from_file(&out.join("config.toml")).unwrap()
    }

    #[test]
    fn a_resumed_run_may_change_its_cadence_and_records_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let first = recipe("[run]\nlog_every = 100\neval_every = 250\ncheckpoint_every = 250\n");
        claim_run_folder(&first, &out).unwrap();
        assert_eq!(recorded(&out), first);
        // The same recipe resumes, and so does one that only logs, evaluates and
        // checkpoints more often; the folder then records the new cadence.
        claim_run_folder(&first, &out).unwrap();
        let cpu = recipe("[run]\nlog_every = 10\neval_every = 100\ncheckpoint_every = 25\n");
        claim_run_folder(&cpu, &out).unwrap();
        assert_eq!(recorded(&out), cpu);
        assert_eq!(recorded(&out).run.checkpoint_every, 25);
    }

    #[test]
    fn a_recipe_that_never_trained_a_step_gives_way_to_another() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        claim_run_folder(&recipe("[optimizer]\nlr = 1e-4\n"), &out).unwrap();
        // What the failed run derived from its recipe, and a teacher cache (kept: it is
        // fingerprinted).
        std::fs::write(out.join("tokenizer.json"), "{}").unwrap();
        std::fs::create_dir_all(out.join("init")).unwrap();
        std::fs::write(out.join("teacher-target.texts"), "1 texts").unwrap();
        let second = recipe("[optimizer]\nlr = 1e-3\n");
        claim_run_folder(&second, &out).unwrap();
        assert_eq!(recorded(&out), second);
        assert!(!out.join("tokenizer.json").exists());
        assert!(out.join("init").exists() && out.join("teacher-target.texts").exists());
        // A tokenizer the recipe names as its input is never removed.
        std::fs::write(out.join("tokenizer.json"), "{}").unwrap();
        let named = recipe(&format!(
            "[optimizer]\nlr = 2e-3\n[tokenizer]\npath = {:?}\n",
            out.join("tokenizer.json").display().to_string()
        ));
        claim_run_folder(&named, &out).unwrap();
        assert_eq!(recorded(&out), named);
        assert!(out.join("tokenizer.json").exists());
    }

    #[test]
    fn another_recipe_is_refused_naming_what_differs() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        claim_run_folder(&recipe("[optimizer]\nlr = 1e-4\n"), &out).unwrap();
        // The run has logged steps: its recipe is what they were trained with.
        std::fs::write(out.join("metrics.jsonl"), "{\"step\":10}\n").unwrap();
        let err = claim_run_folder(&recipe("[optimizer]\nlr = 1e-3\n"), &out)
            .unwrap_err()
            .to_string();
        assert!(err.contains("different recipe"), "{err}");
        assert!(err.contains("optimizer.lr: 0.0001 -> 0.001"), "{err}");
        // A changed seed is not cadence: it changes the order of the pairs.
        let err = claim_run_folder(&recipe("[optimizer]\nlr = 1e-4\n[run]\nseed = 7\n"), &out)
            .unwrap_err()
            .to_string();
        assert!(err.contains("run.seed: 1 -> 7"), "{err}");
        // A cadence change beside another change is still refused, and the folder keeps
        // the first recipe.
        let err = claim_run_folder(
            &recipe("[optimizer]\nlr = 2e-4\n[run]\ncheckpoint_every = 5\n"),
            &out,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("optimizer.lr: 0.0001 -> 0.0002"), "{err}");
        assert!(!err.contains("checkpoint_every:"), "{err}");
        assert_eq!(recorded(&out), recipe("[optimizer]\nlr = 1e-4\n"));
    }

    #[test]
    fn differing_settings_are_named_in_tables_of_an_array() {
        let tree = |text: &str| toml::Value::Table(toml::from_str(text).unwrap());
        let old = recipe("").to_toml();
        let new = old.replacen("weight = 2.0", "weight = 3.0", 1);
        assert_eq!(
            differing_settings(&tree(&old), &tree(&new)),
            "data.sources[1].weight: 2.0 -> 3.0"
        );
        let added = format!("{old}\n[extra]\nkey = 1\n");
        assert_eq!(
            differing_settings(&tree(&old), &tree(&added)),
            "extra.key: unset -> 1"
        );
        let many = "[a]\nk1 = 1\nk2 = 1\nk3 = 1\nk4 = 1\nk5 = 1\nk6 = 1\n";
        let changed = many.replace("= 1", "= 2");
        assert_eq!(
            differing_settings(&tree(many), &tree(&changed)),
            "a.k1: 1 -> 2; a.k2: 1 -> 2; a.k3: 1 -> 2; a.k4: 1 -> 2; and 2 more"
        );
    }
}
