//! Range checks of every numeric recipe setting, each failure naming its key.

use super::TrainConfig;
use crate::error::{LaseError, Result};
use crate::losses::term::Checks as RangeChecks;
use crate::tokenizer::training::MAX_VOCABULARY;

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
            checks.within(
                "model.extend_vocabulary.pieces",
                e.pieces,
                1,
                MAX_VOCABULARY,
            );
            checks.at_least(
                "model.extend_vocabulary.sample_sentences",
                e.sample_sentences,
                1,
            );
            checks.positive("model.extend_vocabulary.alpha", e.alpha);
        }
        let t = &self.tokenizer;
        if t.path.is_none() {
            checks.within("tokenizer.vocab_size", t.vocab_size, 1, MAX_VOCABULARY);
            checks.at_least("tokenizer.sample_sentences", t.sample_sentences, 1);
            checks.positive("tokenizer.alpha", t.alpha);
        }
        checks.positive("data.sampling.alpha", self.data.sampling.alpha);
        if let Some(n) = self.data.max_train_pairs {
            checks.at_least("data.max_train_pairs", n, 1);
        }
        self.objective.check(&mut checks);
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
