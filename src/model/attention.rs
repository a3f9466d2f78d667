//! Multi-head self-attention block of a post-LN transformer (Vaswani et al. 2017;
//! BERT's `attention.self` + `attention.output`): softmax(QKᵀ/√d_k + mask) V through
//! libtorch's fused scaled_dot_product_attention, then dense, dropout, residual, LayerNorm.

use tch::{Kind, Tensor, nn};

use super::config::EncoderConfig;
use super::param_init::{add_and_norm, apply_linear, layer_norm, linear};

#[derive(Debug)]
pub struct SelfAttention {
    query: nn::Linear,
    key: nn::Linear,
    value: nn::Linear,
    output: nn::Linear,
    layer_norm: nn::LayerNorm,
    num_heads: i64,
    head_dim: i64,
    attention_dropout: f64,
    hidden_dropout: f64,
}

impl SelfAttention {
    /// `p` is the layer's `attention` path.
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        let h = c.hidden_size as i64;
        let std = c.initializer_range;
        let s = &p / "self";
        let o = &p / "output";
        Self {
            query: linear(&s / "query", h, h, std),
            key: linear(&s / "key", h, h, std),
            value: linear(&s / "value", h, h, std),
            output: linear(&o / "dense", h, h, std),
            layer_norm: layer_norm(&o / "LayerNorm", h, c.layer_norm_eps),
            num_heads: c.num_attention_heads as i64,
            head_dim: c.head_dim() as i64,
            attention_dropout: c.attention_probs_dropout_prob,
            hidden_dropout: c.hidden_dropout_prob,
        }
    }

    /// `hidden`: [B, S, H]; `mask`: boolean [B, 1, 1, S], true where a key may be attended.
    /// `autocast`: the kind of the matrix products (None: the weights' kind); the residual
    /// sum and the layer norm stay in `hidden`'s kind.
    pub fn forward_t(
        &self,
        hidden: &Tensor,
        mask: &Tensor,
        train: bool,
        autocast: Option<Kind>,
    ) -> Tensor {
        let (b, s, h) = hidden.size3().expect("hidden states are [B, S, H]");
        let heads = |x: Tensor| {
            x.view([b, s, self.num_heads, self.head_dim])
                .transpose(1, 2)
        };
        let q = heads(apply_linear(&self.query, hidden, autocast));
        let k = heads(apply_linear(&self.key, hidden, autocast));
        let v = heads(apply_linear(&self.value, hidden, autocast));
        let dropout = if train { self.attention_dropout } else { 0.0 };
        let context = Tensor::scaled_dot_product_attention(
            &q,
            &k,
            &v,
            Some(mask),
            dropout,
            false,
            None,
            false,
        );
        let context = context.transpose(1, 2).reshape([b, s, h]);
        add_and_norm(
            &self.output,
            &self.layer_norm,
            &context,
            hidden,
            (self.hidden_dropout, train),
            autocast,
        )
    }
}
