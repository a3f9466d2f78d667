//! The encoder: embeddings, then a stack of transformer layers. The stack stores
//! `stored_layers()` distinct layers and applies them as a unit `num_hidden_layers /
//! stored_layers()` times, so parameter recurrence (ALBERT-style sharing, multistage
//! distillation 3.1.3) is the same code path as a plain stack (a unit repeated once).

use tch::{Kind, Tensor, nn};

use super::config::EncoderConfig;
use super::embeddings::Embeddings;
use super::layer::TransformerLayer;

#[derive(Debug)]
pub struct Transformer {
    pub embeddings: Embeddings,
    unit: Vec<TransformerLayer>,
    repeats: usize,
    /// Mixed precision: the kind the layers' matrix products run in (None: the weights').
    autocast: Option<Kind>,
}

impl Transformer {
    /// `p` is the checkpoint root (HF BERT keys start at `embeddings.` / `encoder.`).
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        let layers = &p / "encoder" / "layer";
        let stored = c.stored_layers();
        Self {
            embeddings: Embeddings::new(&p / "embeddings", c),
            unit: (0..stored)
                .map(|i| TransformerLayer::new(&layers / i, c))
                .collect(),
            repeats: c.num_hidden_layers / stored,
            autocast: None,
        }
    }

    /// Boolean key mask [B, 1, 1, S] from a 0/1 attention mask [B, S].
    /// Runs the layers' matrix products in `kind` (e.g. bfloat16) while the weights, the
    /// residual stream and the layer norms keep theirs: torch.autocast's mixed precision.
    pub fn set_autocast(&mut self, kind: Option<Kind>) {
        self.autocast = kind;
    }

    pub fn autocast(&self) -> Option<Kind> {
        self.autocast
    }

    pub fn key_mask(attention_mask: &Tensor) -> Tensor {
        attention_mask.to_kind(Kind::Bool).unsqueeze(1).unsqueeze(1)
    }

    /// Token states [B, S, H] of the last layer.
    pub fn forward_t(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: &Tensor,
        train: bool,
    ) -> Tensor {
        let mask = Self::key_mask(attention_mask);
        let mut hidden = self.embeddings.forward_t(input_ids, token_type_ids, train);
        for _ in 0..self.repeats {
            for layer in &self.unit {
                hidden = layer.forward_t(&hidden, &mask, train, self.autocast);
            }
        }
        hidden
    }
}
