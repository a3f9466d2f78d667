//! One post-LN transformer layer (BERT): self-attention block, then the feed-forward
//! block LayerNorm(x + Dropout(W₂ act(W₁ x + b₁) + b₂)).

use tch::{Kind, Tensor, nn};

use super::attention::SelfAttention;
use super::config::{Activation, EncoderConfig};
use super::param_init::{add_and_norm, apply_linear, layer_norm, linear};

#[derive(Debug)]
pub struct TransformerLayer {
    attention: SelfAttention,
    intermediate: nn::Linear,
    output: nn::Linear,
    layer_norm: nn::LayerNorm,
    activation: Activation,
    hidden_dropout: f64,
}

impl TransformerLayer {
    /// `p` is the layer's path, e.g. `encoder.layer.3`.
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        let h = c.hidden_size as i64;
        let ff = c.intermediate_size as i64;
        let std = c.initializer_range;
        Self {
            attention: SelfAttention::new(&p / "attention", c),
            intermediate: linear(&p / "intermediate" / "dense", h, ff, std),
            output: linear(&p / "output" / "dense", ff, h, std),
            layer_norm: layer_norm(&p / "output" / "LayerNorm", h, c.layer_norm_eps),
            activation: c.hidden_act,
            hidden_dropout: c.hidden_dropout_prob,
        }
    }

    /// `autocast` as [`SelfAttention::forward_t`]: products in that kind, residual sums
    /// and layer norms in `hidden`'s.
    pub fn forward_t(
        &self,
        hidden: &Tensor,
        mask: &Tensor,
        train: bool,
        autocast: Option<Kind>,
    ) -> Tensor {
        let attended = self.attention.forward_t(hidden, mask, train, autocast);
        let ff = self
            .activation
            .apply(&apply_linear(&self.intermediate, &attended, autocast));
        add_and_norm(
            &self.output,
            &self.layer_norm,
            &ff,
            &attended,
            (self.hidden_dropout, train),
            autocast,
        )
    }
}
