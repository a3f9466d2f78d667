//! Typed training configuration, read from TOML. Every number that matters has the
//! default of the paper it comes from (ems.txt unless said otherwise); a config file
//! only states what it changes. Unknown keys are errors, so a typo cannot silently
//! fall back to a default. One file per recipe section: model (and tokenizer), data,
//! objective, schedule (optimiser, steps, run); range checks and recipe-file reading
//! beside them.

mod data;
mod model;
mod objective;
mod ranges;
mod recipe_file;
mod schedule;

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use data::{DataConfig, TestSetExclusion};
pub use model::{ModelConfig, TokenizerConfig, VocabularyExtension};
pub use objective::{DistillationConfig, ObjectiveConfig, TeacherSide};
pub use recipe_file::{RecipeOverride, locate_setting_error, parse_toml, read_recipe};
pub use schedule::{DIRECT_PADDING_CHUNK, Decay, OptimizerConfig, RunConfig, ScheduleConfig};

use crate::error::{LaseError, Result};

/// The whole recipe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    #[serde(default)]
    pub model: ModelConfig,
    #[serde(default)]
    pub tokenizer: TokenizerConfig,
    pub data: DataConfig,
    #[serde(default)]
    pub objective: ObjectiveConfig,
    #[serde(default)]
    pub optimizer: OptimizerConfig,
    #[serde(default)]
    pub schedule: ScheduleConfig,
    #[serde(default)]
    pub run: RunConfig,
}

/// An error's message without its kind's prefix ("invalid argument: ", "model: "), for
/// quoting it inside another message.
fn inner_message(e: LaseError) -> String {
    match e {
        LaseError::InvalidArgument(m) | LaseError::Model(m) => m,
        e => e.to_string(),
    }
}

/// Most parameters (before the vocabulary's rows) a from-scratch recipe may build: 4.3
/// billion, 17 GB in f32, far past any encoder this toolkit trains; above it a recipe is
/// refused as a likely typo rather than left to fail inside libtorch's allocator.
const MAX_SCRATCH_PARAMETERS: u128 = 1 << 32;

impl TrainConfig {
    /// Reads a TOML config; relative data paths are taken relative to the working
    /// directory (as the command line would).
    pub fn from_file(path: &Path) -> Result<Self> {
        Self::from_file_with(path, &[])
    }

    /// [`TrainConfig::from_file`] with command-line `--set` changes applied.
    pub fn from_file_with(path: &Path, overrides: &[RecipeOverride]) -> Result<Self> {
        let config: Self = read_recipe(path, overrides)?;
        // A setting's error names the file (and line) or the --set that gave its value.
        config.validate().map_err(|e| match e {
            LaseError::InvalidArgument(m) => {
                LaseError::InvalidArgument(locate_setting_error(path, overrides, &m))
            }
            e => e,
        })?;
        Ok(config)
    }

    pub fn from_toml(text: &str) -> Result<Self> {
        let config: Self = parse_toml(text, Path::new("<config>"))?;
        config.validate()?;
        Ok(config)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("configs serialise")
    }

    /// Refuses a recipe that cannot train, with a message naming the setting: each
    /// section's combinations here, then every number's range.
    pub fn validate(&self) -> Result<()> {
        self.validate_model_and_schedule()?;
        self.validate_objective()?;
        self.validate_data()?;
        self.validate_ranges()?;
        self.validate_scratch_shape()
    }

    /// The shape a from-scratch run builds, checked now rather than after the corpus is
    /// read and a tokenizer trained (each number's own range is checked before).
    fn validate_scratch_shape(&self) -> Result<()> {
        let bad = |m: String| Err(LaseError::InvalidArgument(m));
        let m = &self.model;
        if m.init_from.is_none() {
            // The vocabulary is not known yet: one row stands for it.
            let c = crate::train::encoder_init::scratch_encoder_config(m, 1, 0);
            c.validate().map_err(|e| {
                LaseError::InvalidArgument(format!(
                    "model (layers {}, hidden {}, heads {}, ffn {}, max_tokens {}, recurrent_unit_layers {:?}, embedding_size {:?}): {} (in config.json's names: num_hidden_layers = model.layers, hidden_size = model.hidden, num_attention_heads = model.heads)",
                    m.layers,
                    m.hidden,
                    m.heads,
                    m.ffn,
                    m.max_tokens,
                    m.recurrent_unit_layers,
                    m.embedding_size,
                    inner_message(e)
                ))
            })?;
            if c.minimum_parameters()
                .is_none_or(|p| p > MAX_SCRATCH_PARAMETERS)
            {
                return bad(format!(
                    "model: layers {}, hidden {}, ffn {}, max_tokens {} and embedding_size {:?} make more than {MAX_SCRATCH_PARAMETERS} parameters before the vocabulary (a typo?)",
                    m.layers, m.hidden, m.ffn, m.max_tokens, m.embedding_size
                ));
            }
            crate::train::encoder_init::scratch_pooling(m)?;
        }
        Ok(())
    }

    /// Model settings that need each other, batch shape and learning rate.
    fn validate_model_and_schedule(&self) -> Result<()> {
        let bad = |m: String| Err(LaseError::InvalidArgument(m));
        let m = &self.model;
        if m.init_from.is_none()
            && (m.hidden == 0 || m.heads == 0 || !m.hidden.is_multiple_of(m.heads))
        {
            return bad(format!(
                "model.hidden {} must be a positive multiple of model.heads {}",
                m.hidden, m.heads
            ));
        }
        if m.extend_vocabulary.is_some() && m.init_from.is_none() {
            return bad(
                "model.extend_vocabulary extends a pretrained model's vocabulary: set model.init_from".into(),
            );
        }
        if m.extend_vocabulary
            .as_ref()
            .is_some_and(|x| x.train_only_added_rows)
            && (m.freeze_encoder || m.output_dim.is_some())
        {
            return bad(
                "model.extend_vocabulary.train_only_added_rows keeps every other weight as it is: \
                 unset model.freeze_encoder and model.output_dim"
                    .into(),
            );
        }
        if m.freeze_encoder && m.output_dim.is_none() {
            return bad(
                "model.freeze_encoder trains only the dense head: set model.output_dim".into(),
            );
        }
        let s = &self.schedule;
        if s.batch_pairs < 2 {
            return bad("schedule.batch_pairs must be at least 2 (in-batch negatives)".into());
        }
        if s.accumulation_steps == 0 {
            return bad("schedule.accumulation_steps must be at least 1".into());
        }
        if self.optimizer.lr <= 0.0 || !self.optimizer.lr.is_finite() {
            return bad(format!(
                "optimizer.lr {} must be positive",
                self.optimizer.lr
            ));
        }
        Ok(())
    }

    /// At least one loss.
    fn validate_objective(&self) -> Result<()> {
        let o = &self.objective;
        if o.distillation.is_none() && o.terms().is_empty() {
            return Err(LaseError::InvalidArgument(
                "objective: no loss enabled (contrastive = \"none\" and xtr = false)".into(),
            ));
        }
        Ok(())
    }

    /// Training sources present, their weights, the test-set exclusion, and sources
    /// that the teacher's side cannot embed.
    fn validate_data(&self) -> Result<()> {
        let bad = |m: String| Err(LaseError::InvalidArgument(m));
        if self.data.sources.is_empty() {
            return bad("data.sources is empty".into());
        }
        // Every language code, before any source is read (a bad code in the last
        // source would otherwise surface after the others were read).
        for (i, source) in self.data.sources.iter().enumerate() {
            for (key, code) in source.language_codes() {
                if let Err(e) = crate::lang::LanguageCode::parse(code) {
                    return bad(format!(
                        "data.sources[{i}] ({}): {key}: {}",
                        source.path().display(),
                        inner_message(e)
                    ));
                }
            }
        }
        match &self.data.exclude_test_sets {
            None => {
                return bad(
                    "data.exclude_test_sets is required: the benchmark folder (or test-sentence list) whose sentences must not be trained on, e.g. \"../shared/data\", or false to train without the check".into(),
                );
            }
            Some(TestSetExclusion::Off(true)) => {
                return bad(
                    "data.exclude_test_sets = true: give the benchmark folder (or test-sentence list) instead".into(),
                );
            }
            _ => {}
        }
        if let Some(d) = &self.objective.distillation
            && d.teacher_side == TeacherSide::Source
            && let Some(s) = self.data.sources.iter().find(|s| s.non_pivot_pairs() > 0)
        {
            return bad(format!(
                "data.sources: {} draws non-pivot pairs, whose source side is not the pivot language a teacher_side = \"source\" teacher embeds: set non_pivot_pairs = 0, or teacher_side = \"target\" (the teacher embeds each non-pivot pair's row's pivot segment) or \"both\" (a multilingual teacher)",
                s.path().display(),
            ));
        }
        if let Some(w) = self
            .data
            .sources
            .iter()
            .filter_map(|s| s.weight())
            .find(|w| !(w.is_finite() && *w > 0.0))
        {
            return bad(format!(
                "data.sources: weight {w} must be a positive number"
            ));
        }
        if self.data.sampling.batches == crate::data::BatchComposition::OneSource
            && let Some(s) = self.data.sources.iter().find(|s| s.weight().is_none())
        {
            return bad(format!(
                "data.sampling.batches = \"one-source\" draws each batch's source by its weight, but {} has none: give every source a weight (e.g. weight = 1.0)",
                s.path().display()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_shape_that_cannot_be_built_is_refused_when_the_recipe_is_read() {
        let recipe = |model: &str| {
            format!(
                "[model]\n{model}\n[data]\nexclude_test_sets = false\nsources = [{{ format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }}]\n"
            )
        };
        for (model, says) in [
            (
                "layers = 6\nrecurrent_unit_layers = 4",
                "recurrent_unit_layers",
            ),
            ("pooling = \"avg\"", "model.pooling"),
            ("hidden = 76800\nheads = 12\nffn = 307200", "parameters"),
        ] {
            let err = TrainConfig::from_toml(&recipe(model))
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{model}: {err}");
        }
        TrainConfig::from_toml(&recipe(
            "layers = 6\nrecurrent_unit_layers = 3\npooling = \"cls\"",
        ))
        .unwrap();
    }

    #[test]
    fn a_bad_language_code_is_refused_before_any_source_is_read_naming_the_source() {
        let recipe = |code: &str| {
            format!(
                "[data]\nexclude_test_sets = false\nsources = [\n  {{ format = \"tsv\", path = \"a.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }},\n  {{ format = \"n-way\", path = \"bible\", languages = [\"fra\", \"{code}\"] }},\n]\n"
            )
        };
        for code in ["zh-CN", "en_US", "q1"] {
            let err = TrainConfig::from_toml(&recipe(code))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("data.sources[1] (bible): languages") && err.contains(code),
                "{code}: {err}"
            );
        }
        // Codes the scheme reads (aliases and scripts) pass.
        TrainConfig::from_toml(&recipe("zh_Hans")).unwrap();
        TrainConfig::from_toml(&recipe("de")).unwrap();
        // From a file, the error names the recipe too.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recipe.toml");
        std::fs::write(&path, recipe("pt-BR")).unwrap();
        let err = TrainConfig::from_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("recipe.toml") && err.contains("pt-BR"),
            "{err}"
        );
    }

    #[test]
    fn a_recipe_must_say_which_test_sets_it_excludes() {
        let base = "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\n";
        let err = TrainConfig::from_toml(base).unwrap_err().to_string();
        assert!(err.contains("exclude_test_sets is required"), "{err}");
        let err = TrainConfig::from_toml(&format!("{base}exclude_test_sets = true\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("exclude_test_sets = true"), "{err}");
        let off = TrainConfig::from_toml(&format!("{base}exclude_test_sets = false\n")).unwrap();
        assert_eq!(off.data.exclusion(), None);
        let on = TrainConfig::from_toml(&format!("{base}exclude_test_sets = \"bench\"\n")).unwrap();
        assert_eq!(on.data.exclusion(), Some(Path::new("bench")));
        // Both forms survive the round trip through the run folder's config.toml.
        for c in [off, on] {
            assert_eq!(TrainConfig::from_toml(&c.to_toml()).unwrap(), c);
        }
    }

    #[test]
    fn one_source_batches_need_weighted_sources_and_survive_the_run_folder() {
        let recipe = |weight: &str| {
            format!(
                "[data]\nexclude_test_sets = false\nsampling = {{ batches = \"one-source\" }}\nsources = [{{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\"{weight} }}]\n"
            )
        };
        let err = TrainConfig::from_toml(&recipe("")).unwrap_err().to_string();
        assert!(err.contains("one-source") && err.contains("p.tsv"), "{err}");
        let c = TrainConfig::from_toml(&recipe(", weight = 1.0")).unwrap();
        assert_eq!(
            c.data.sampling.batches,
            crate::data::BatchComposition::OneSource
        );
        let written = c.to_toml();
        assert!(written.contains("batches = \"one-source\""), "{written}");
        assert_eq!(TrainConfig::from_toml(&written).unwrap(), c);
    }

    #[test]
    fn paper_defaults_and_unknown_keys() {
        let c = TrainConfig::from_toml(
            "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\nexclude_test_sets = false\n",
        )
        .unwrap();
        assert_eq!(c.model.layers, 6);
        assert_eq!(c.model.hidden, 1024);
        assert_eq!(c.optimizer.lr, 3e-4);
        assert_eq!(c.schedule.warmup_steps, 10_000);
        assert_eq!(
            c.objective.settings["ems"]["projection_dim"].as_integer(),
            Some(128)
        );
        let again = TrainConfig::from_toml(&c.to_toml()).unwrap();
        assert_eq!(again, c);
        let err = TrainConfig::from_toml("[data]\nsources = []\n[optimizer]\nlearning_rate = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(":4:") && err.contains("learning_rate"),
            "{err}"
        );
    }

    #[test]
    fn average_labels_need_a_teacher_on_both_sides() {
        let recipe = |side: &str| {
            TrainConfig::from_toml(&format!(
                "[data]\nsources = [{{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }}]\nexclude_test_sets = false\n\
                 [objective.distillation]\nteacher = \"t\"\nteacher_side = \"{side}\"\nmse = 0.0\n\
                 soft_contrastive = 1.0\nsoft_label = \"average\"\n"
            ))
        };
        let err = recipe("target").unwrap_err().to_string();
        assert!(err.contains("teacher_side = \"both\""), "{err}");
        let c = recipe("both").unwrap();
        assert_eq!(
            c.objective.distillation.unwrap().settings["soft_label"].as_str(),
            Some("average")
        );
    }

    #[test]
    fn non_pivot_pairs_need_a_pivot_or_two_sided_teacher_and_extension_needs_init_from() {
        let recipe = |side: &str, model: &str| {
            TrainConfig::from_toml(&format!(
                "[model]\n{model}\n[data]\nsources = [{{ format = \"n-way\", path = \"b\", non_pivot_pairs = 1 }}]\nexclude_test_sets = false\n\
                 [objective.distillation]\nteacher = \"t\"\nteacher_side = \"{side}\"\n"
            ))
        };
        let err = recipe("source", "").unwrap_err().to_string();
        assert!(
            err.contains("non_pivot_pairs") && err.contains("teacher_side = \"source\""),
            "{err}"
        );
        assert!(recipe("target", "").is_ok());
        assert!(recipe("both", "").is_ok());
        let err = recipe("both", "extend_vocabulary = { pieces = 10 }")
            .unwrap_err()
            .to_string();
        assert!(err.contains("init_from"), "{err}");
        assert!(
            recipe(
                "both",
                "init_from = \"m\"\nextend_vocabulary = { pieces = 10 }"
            )
            .is_ok()
        );
    }

    #[test]
    fn set_overrides_change_add_and_remove_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recipe.toml");
        std::fs::write(
            &path,
            "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\nexclude_test_sets = false\n\
             [model]\nlayers = 4\noutput_dim = 128\n",
        )
        .unwrap();
        let set = |s: &str| s.parse::<RecipeOverride>().unwrap();
        let plain = TrainConfig::from_file(&path).unwrap();
        assert_eq!((plain.model.layers, plain.model.output_dim), (4, Some(128)));
        let changed = TrainConfig::from_file_with(
            &path,
            &[
                set("model.layers=2"),
                set("model.output_dim="),
                set("optimizer.lr = 2e-4"),
                set("schedule.decay=linear"),
            ],
        )
        .unwrap();
        assert_eq!(changed.model.layers, 2);
        assert_eq!(changed.model.output_dim, None);
        assert_eq!(changed.optimizer.lr, 2e-4);
        // Everything not named stays as in the file.
        assert_eq!(changed.data, plain.data);
        assert_eq!(changed.model.hidden, plain.model.hidden);

        let err = TrainConfig::from_file_with(&path, &[set("model.layers=many")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("recipe.toml") && err.contains("model.layers"),
            "{err}"
        );
        let err = TrainConfig::from_file_with(&path, &[set("model.layers.deep=1")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("model.layers is not a table"), "{err}");
        let err = TrainConfig::from_file_with(&path, &[set("model.typo=1")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("typo"), "{err}");
        assert!("no-equals-sign".parse::<RecipeOverride>().is_err());
        assert!("a..b=1".parse::<RecipeOverride>().is_err());
    }

    /// The settings the fuzz campaign found accepted (docs/reliability.md, "Gap the fuzzing
    /// shows"), and a few neighbours: each alone is refused, and the message names its
    /// key. The in-range neighbours of the same keys are accepted.
    #[test]
    fn out_of_range_numbers_are_refused_with_their_key() {
        let base = "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\nexclude_test_sets = false\n";
        let refused = [
            ("model", "dropout", "5.0"),
            ("model", "dropout", "nan"),
            ("model", "dropout", "-0.1"),
            ("model", "layers", "0"),
            ("model", "ffn", "0"),
            ("model", "max_tokens", "0"),
            ("model", "output_dim", "0"),
            ("model", "embedding_size", "0"),
            ("objective", "temperature", "0.0"),
            ("objective", "temperature", "-1.0"),
            ("objective", "temperature", "nan"),
            ("objective", "scale", "nan"),
            ("objective", "margin", "inf"),
            ("optimizer", "beta1", "2.0"),
            ("optimizer", "beta2", "-1.0"),
            ("optimizer", "eps", "-1.0"),
            ("optimizer", "weight_decay", "nan"),
            ("optimizer", "max_grad_norm", "-1.0"),
            ("schedule", "steps", "0"),
            ("schedule", "padding_chunk", "0"),
            ("tokenizer", "vocab_size", "0"),
            ("tokenizer", "alpha", "nan"),
        ];
        for (section, key, value) in refused {
            let text = format!("{base}[{section}]\n{key} = {value}\n");
            let err = TrainConfig::from_toml(&text)
                .err()
                .unwrap_or_else(|| panic!("{section}.{key} = {value} was accepted"))
                .to_string();
            assert!(
                err.contains(&format!("{section}.{key} = ")),
                "{section}.{key} = {value}: {err}"
            );
        }
        let accepted = [
            ("model", "dropout", "0.0"),
            ("model", "layers", "1"),
            ("objective", "temperature", "0.05"),
            ("optimizer", "beta1", "0.0"),
            ("optimizer", "max_grad_norm", "0.0"),
            ("schedule", "steps", "1"),
            ("schedule", "grad_cache_chunk", "0"),
            ("schedule", "warmup_steps", "18446744073709551615"),
        ];
        for (section, key, value) in accepted {
            let text = format!("{base}[{section}]\n{key} = {value}\n");
            if let Err(e) = TrainConfig::from_toml(&text) {
                panic!("{section}.{key} = {value} refused: {e}");
            }
        }
    }

    /// A run folder's config.toml written before the losses owned their keys (every
    /// key of the old typed objective, in its order) still reads as the same recipe,
    /// so that runs started then resume; and the recipe survives its own round trip.
    #[test]
    fn a_config_toml_from_before_the_loss_registry_is_the_same_recipe() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let old = TrainConfig::from_file(
            &root.join("tests/fixtures/run-config-before-loss-registry.toml"),
        )
        .unwrap();
        let recipe =
            TrainConfig::from_file(&root.join("configs/ablation/lase-base/ems-scratch-mse.toml"))
                .unwrap();
        assert_eq!(old, recipe);
        assert_eq!(TrainConfig::from_toml(&recipe.to_toml()).unwrap(), recipe);
        // A changed setting is a different recipe (the comparison can fail).
        let changed = TrainConfig::from_toml(&recipe.to_toml().replace(
            "mse_sum_over_dimensions = true",
            "mse_sum_over_dimensions = false",
        ))
        .unwrap();
        assert_ne!(changed, recipe);
    }

    /// Each key of `[objective]` and `[objective.distillation]` belongs to one loss; a
    /// key no loss owns is refused naming it, in either section.
    #[test]
    fn every_objective_key_has_one_owner_and_strangers_are_refused() {
        use crate::losses::registry::keys_of;
        use crate::losses::term::Section;
        for section in [Section::Objective, Section::Distillation] {
            let keys = keys_of(section);
            let mut unique = keys.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), keys.len(), "{section:?}: {keys:?}");
        }
        let base = "[data]\nsources = [{ format = \"tsv\", path = \"p.tsv\", src_lang = \"deu\", tgt_lang = \"eng\" }]\nexclude_test_sets = false\n";
        for (table, key) in [
            ("[objective]", "temprature"),
            ("[objective.distillation]\nteacher = \"t\"", "mse_weight"),
        ] {
            let err = TrainConfig::from_toml(&format!("{base}{table}\n{key} = 1.0\n"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("unknown field `{key}`")), "{err}");
        }
        let err = TrainConfig::from_toml(&format!("{base}[objective]\ncontrastive = \"amss\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"amss\"") && err.contains("info-nce"),
            "{err}"
        );
    }
}
