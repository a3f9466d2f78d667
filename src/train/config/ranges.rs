//! Range checks of every numeric recipe setting, each failure naming its key.

use super::TrainConfig;
use crate::error::{LaseError, Result};

impl TrainConfig {
    /// Every numeric setting inside the range where training means something: a NaN,
    /// a dropout of 5, a temperature of 0 or a beta1 of 2 is refused here, naming the key,
    /// rather than surfacing as a NaN loss (or silence) steps later.
    pub(super) fn validate_ranges(&self) -> Result<()> {
        let mut checks = RangeChecks::default();
        let m = &self.model;
        checks.fraction("model.dropout", m.dropout);
        checks.at_least("model.layers", m.layers, 1);
        checks.at_least("model.ffn", m.ffn, 1);
        checks.at_least("model.max_tokens", m.max_tokens, 3);
        for (key, value) in [
            ("model.embedding_size", m.embedding_size),
            ("model.recurrent_unit_layers", m.recurrent_unit_layers),
            ("model.output_dim", m.output_dim),
        ] {
            if let Some(v) = value {
                checks.at_least(key, v, 1);
            }
        }
        if let Some(v) = m.train_max_tokens {
            checks.at_least("model.train_max_tokens", v, 3);
        }
        if let Some(e) = &m.extend_vocabulary {
            checks.at_least("model.extend_vocabulary.pieces", e.pieces, 1);
            checks.at_least(
                "model.extend_vocabulary.sample_sentences",
                e.sample_sentences,
                1,
            );
            checks.positive("model.extend_vocabulary.alpha", e.alpha);
        }
        let t = &self.tokenizer;
        if t.path.is_none() {
            checks.at_least("tokenizer.vocab_size", t.vocab_size, 1);
            checks.at_least("tokenizer.sample_sentences", t.sample_sentences, 1);
            checks.positive("tokenizer.alpha", t.alpha);
        }
        checks.positive("data.sampling.alpha", self.data.sampling.alpha);
        if let Some(n) = self.data.max_train_pairs {
            checks.at_least("data.max_train_pairs", n, 1);
        }
        let o = &self.objective;
        checks.positive("objective.temperature", o.temperature);
        checks.finite("objective.margin", o.margin);
        checks.positive("objective.scale", o.scale);
        if let Some(v) = o.triplet_margin {
            checks.non_negative("objective.triplet_margin", v);
        }
        checks.positive("objective.simcse_temperature", o.simcse_temperature);
        checks.positive("objective.ems.temperature", o.ems.temperature);
        checks.at_least("objective.ems.projection_dim", o.ems.projection_dim, 1);
        checks.at_least(
            "objective.xtr_head.language_dim",
            o.xtr_head.language_dim,
            1,
        );
        if let Some(d) = &o.distillation {
            for (key, weight) in [
                ("mse", d.mse),
                ("feature", d.feature),
                ("logit", d.logit),
                ("soft_contrastive", d.soft_contrastive),
                ("mcl", d.mcl),
            ] {
                checks.non_negative(&format!("objective.distillation.{key}"), weight);
            }
            checks.positive(
                "objective.distillation.logit_temperature",
                d.logit_temperature,
            );
            checks.positive(
                "objective.distillation.soft_temperature",
                d.soft_temperature,
            );
            if let Some(l) = d.tcm_lambda {
                checks.non_negative("objective.distillation.tcm_lambda", l);
            }
        }
        let p = &self.optimizer;
        checks.non_negative("optimizer.weight_decay", p.weight_decay);
        checks.fraction("optimizer.beta1", p.beta1);
        checks.fraction("optimizer.beta2", p.beta2);
        checks.positive("optimizer.eps", p.eps);
        checks.non_negative("optimizer.max_grad_norm", p.max_grad_norm);
        let s = &self.schedule;
        checks.at_least("schedule.steps", s.steps, 1);
        checks.at_least("schedule.padding_chunk", s.padding_chunk, 1);
        match checks.first {
            Some(message) => Err(LaseError::InvalidArgument(message)),
            None => Ok(()),
        }
    }
}

/// The first out-of-range setting [`TrainConfig::validate`] finds, as a message that
/// names its key, the value and the range.
#[derive(Default)]
struct RangeChecks {
    first: Option<String>,
}

impl RangeChecks {
    fn fail(&mut self, key: &str, value: impl std::fmt::Display, range: &str) {
        if self.first.is_none() {
            self.first = Some(format!("{key} = {value}: must be {range}"));
        }
    }
    fn finite(&mut self, key: &str, v: f64) {
        if !v.is_finite() {
            self.fail(key, v, "a finite number");
        }
    }
    fn positive(&mut self, key: &str, v: f64) {
        if !(v.is_finite() && v > 0.0) {
            self.fail(key, v, "a positive finite number");
        }
    }
    fn non_negative(&mut self, key: &str, v: f64) {
        if !(v.is_finite() && v >= 0.0) {
            self.fail(key, v, "a finite number >= 0");
        }
    }
    fn fraction(&mut self, key: &str, v: f64) {
        if !(0.0..1.0).contains(&v) {
            self.fail(key, v, "in [0, 1)");
        }
    }
    fn at_least<T: PartialOrd + std::fmt::Display>(&mut self, key: &str, v: T, min: T) {
        if v < min {
            self.fail(key, v, &format!("at least {min}"));
        }
    }
}
