//! The BERT family as Hugging Face's `modeling_bert.py` builds it, one struct per HF
//! module, so each weight name reads off the struct that owns it (candle-transformers'
//! `bert.rs` is the model followed):
//!
//! ```text
//! BertModel
//! ├── embeddings: BertEmbeddings            word (+ bottleneck), position, token type
//! └── encoder: BertEncoder                  a unit of layers, applied `repeats` times
//!     └── layer.N: BertLayer
//!         ├── attention: BertAttention
//!         │   ├── self: BertSelfAttention   softmax(QKᵀ/√d_k + mask) V
//!         │   └── output: BertSelfOutput    LayerNorm(dropout(W x + b) + input)
//!         ├── intermediate: BertIntermediate act(W₁ x + b₁)
//!         └── output: BertOutput            LayerNorm(dropout(W₂ h + b₂) + attended)
//! ```
//!
//! RoBERTa / XLM-R differ only in how positions are numbered (from config.json's
//! `model_type`, [`EncoderConfig::position_offset`]). Two lase extensions: a factorised
//! token table (multistage distillation's embedding bottleneck) and parameter recurrence
//! (the encoder stores `stored_layers()` distinct layers and applies them as a unit
//! `num_hidden_layers / stored_layers()` times; a plain stack is a unit applied once).
//! Another architecture family would get a file of its own beside this one.

use tch::{Kind, Tensor, nn};

use super::config::{Activation, EncoderConfig};
use super::dropout;
use super::linear::{InferenceLinear, Linear, LinearKernel};
use super::param_init::{embedding, layer_norm, linear, linear_no_bias};
use super::token_layout::{TokenLayout, UnpadPolicy};
use crate::error::Result;

/// HF `BertEmbeddings` (`embeddings.*`): token (optionally factorised V x B then B x H),
/// absolute position and token type embeddings, summed, then LayerNorm and dropout.
#[derive(Debug)]
pub struct BertEmbeddings {
    word_embeddings: nn::Embedding,
    /// B x H projection after a V x B token table (multistage distillation's
    /// embedding bottleneck); `None` when the table is V x H.
    word_projection: Option<nn::Linear>,
    position_embeddings: nn::Embedding,
    token_type_embeddings: Option<nn::Embedding>,
    layer_norm: nn::LayerNorm,
    dropout: f64,
    position_offset: i64,
    padding_offset_positions: bool,
    pad_token_id: i64,
}

impl BertEmbeddings {
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        let h = c.hidden_size as i64;
        let width = c.embedding_size.unwrap_or(c.hidden_size) as i64;
        let std = c.initializer_range;
        let word_embeddings = embedding(&p / "word_embeddings", c.vocab_size as i64, width, std);
        let word_projection = c
            .embedding_size
            .map(|_| linear_no_bias(&p / "word_embeddings_projection", width, h, std));
        let position_embeddings = embedding(
            &p / "position_embeddings",
            c.max_position_embeddings as i64,
            h,
            std,
        );
        let token_type_embeddings = (c.type_vocab_size > 0).then(|| {
            embedding(
                &p / "token_type_embeddings",
                c.type_vocab_size as i64,
                h,
                std,
            )
        });
        Self {
            word_embeddings,
            word_projection,
            position_embeddings,
            token_type_embeddings,
            layer_norm: layer_norm(&p / "LayerNorm", h, c.layer_norm_eps),
            dropout: c.hidden_dropout_prob,
            position_offset: c.position_offset(),
            padding_offset_positions: c.uses_padding_offset_positions(),
            pad_token_id: c.pad_token_id,
        }
    }

    /// Token embeddings alone, projected to H (what multistage stage 2 aligns).
    pub fn token_embeddings(&self, input_ids: &Tensor) -> Tensor {
        let e = input_ids.apply(&self.word_embeddings);
        match &self.word_projection {
            Some(proj) => e.apply(proj),
            None => e,
        }
    }

    /// `input_ids`, `token_type_ids`: [B, S] int64. Returns [B, S, H].
    pub fn forward_t(&self, input_ids: &Tensor, token_type_ids: &Tensor, train: bool) -> Tensor {
        let positions = self.position_ids(input_ids);
        let mut x = self.token_embeddings(input_ids) + positions.apply(&self.position_embeddings);
        if let Some(types) = &self.token_type_embeddings {
            x += token_type_ids.apply(types);
        }
        dropout::dropout(&x.apply(&self.layer_norm), self.dropout, train)
    }

    fn position_ids(&self, input_ids: &Tensor) -> Tensor {
        if self.padding_offset_positions {
            // RoBERTa: positions count non-padding tokens only, starting at pad + 1.
            let not_pad = input_ids.ne(self.pad_token_id).to_kind(Kind::Int64);
            not_pad.cumsum(1, Kind::Int64) * &not_pad + self.pad_token_id
        } else {
            let seq = input_ids.size()[1];
            Tensor::arange_start(
                self.position_offset,
                self.position_offset + seq,
                (Kind::Int64, input_ids.device()),
            )
            .unsqueeze(0)
        }
    }
}

/// HF `BertSelfAttention` (`attention.self.*`): multi-head scaled dot-product attention
/// through libtorch's fused kernel (Vaswani et al. 2017).
#[derive(Debug)]
pub struct BertSelfAttention {
    query: Linear,
    key: Linear,
    value: Linear,
    /// With an inference kernel (packed bfloat16 or int8): query, key and value as one
    /// [3H, H] product (the packed copy alone: the float parameters stay in the three).
    qkv: Option<InferenceLinear>,
    num_heads: i64,
    head_dim: i64,
    dropout: f64,
}

impl BertSelfAttention {
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        let h = c.hidden_size as i64;
        let std = c.initializer_range;
        Self {
            query: Linear::new(linear(&p / "query", h, h, std)),
            key: Linear::new(linear(&p / "key", h, h, std)),
            value: Linear::new(linear(&p / "value", h, h, std)),
            qkv: None,
            num_heads: c.num_attention_heads as i64,
            head_dim: c.head_dim() as i64,
            dropout: c.attention_probs_dropout_prob,
        }
    }

    /// `hidden`: [B, S, H], or the real tokens' rows [T, H] of `layout`; `mask`:
    /// boolean [B, 1, 1, S], true where a key may be attended. Returns the context in
    /// `hidden`'s layout. Attention itself runs on [B, S]: packed query, key and value
    /// rows are scattered for it and the context gathered after. `autocast`: the kind of
    /// the matrix products (None: the weights' kind).
    pub fn forward_t(
        &self,
        hidden: &Tensor,
        mask: &Tensor,
        layout: Option<&TokenLayout>,
        train: bool,
        autocast: Option<Kind>,
    ) -> Tensor {
        let h = *hidden.size().last().expect("hidden states have a width");
        let (b, s) = match layout {
            Some(layout) => layout.padded_shape(),
            None => {
                let (b, s, _) = hidden.size3().expect("padded hidden states are [B, S, H]");
                (b, s)
            }
        };
        let padded = |x: Tensor| match layout {
            Some(layout) => layout.unpack(&x),
            None => x,
        };
        let heads = |x: Tensor| {
            x.view([b, s, self.num_heads, self.head_dim])
                .transpose(1, 2)
        };
        let (q, k, v) = match &self.qkv {
            Some(qkv) => {
                let all = padded(qkv.forward(hidden, None));
                let mut parts = all.split(h, -1).into_iter().map(heads);
                let mut next = || parts.next().expect("three [B, S, H] parts");
                (next(), next(), next())
            }
            None => (
                heads(padded(self.query.forward(hidden, autocast))),
                heads(padded(self.key.forward(hidden, autocast))),
                heads(padded(self.value.forward(hidden, autocast))),
            ),
        };
        let dropout = if train { self.dropout } else { 0.0 };
        let context = if dropout > 0.0 && q.device() == tch::Device::Cpu {
            attention_with_dropout(&q, &k, &v, mask, dropout)
        } else {
            Tensor::scaled_dot_product_attention(
                &q,
                &k,
                &v,
                Some(mask),
                dropout,
                false,
                None,
                false,
            )
        };
        let context = context.transpose(1, 2).reshape([b, s, h]);
        match layout {
            Some(layout) => layout.pack(&context),
            None => context,
        }
    }

    /// With an inference kernel (packed bfloat16 or int8) the three products become one
    /// (their weights and biases concatenated, then packed): one call, and for int8 one
    /// quantisation of the input instead of three; each output channel keeps its own
    /// weights and scale, so the result is the three products' (bit for bit at widths
    /// that are multiples of 16, as BERT's; src/model/linear.rs's test). The plain kernel runs
    /// them one by one on the parameters, which training updates.
    fn set_kernel(&mut self, kernel: LinearKernel) -> Result<()> {
        self.qkv = None;
        if kernel != LinearKernel::Plain {
            let _guard = tch::no_grad_guard();
            let parts = [&self.query, &self.key, &self.value].map(Linear::parameters);
            let weight = Tensor::cat(&parts.map(|(w, _)| w), 0);
            // A part without a bias adds zeros (BERT has all three).
            let bias = parts.iter().any(|(_, b)| b.is_some()).then(|| {
                let each = parts.map(|(w, b)| {
                    b.map_or_else(|| w.zeros_like().select(1, 0), Tensor::shallow_clone)
                });
                Tensor::cat(&each, 0)
            });
            self.qkv = InferenceLinear::pack(kernel, &weight, bias.as_ref())?;
            for linear in [&mut self.query, &mut self.key, &mut self.value] {
                linear.set_kernel(LinearKernel::Plain)?;
            }
            return Ok(());
        }
        self.query.set_kernel(kernel)?;
        self.key.set_kernel(kernel)?;
        self.value.set_kernel(kernel)
    }
}

/// softmax(QKᵀ/√d_k + mask) V with dropout on the attention probabilities, step by step
/// as libtorch's math attention (the path it takes on CPU when dropout is on: the profile
/// in src/model/dropout.rs shows its separate softmax kernels) but with
/// [`dropout::dropout`]'s parallel masks; bfloat16 and half inputs in float32, the context
/// cast back to their kind. `mask`: boolean, true where a key may be attended.
fn attention_with_dropout(q: &Tensor, k: &Tensor, v: &Tensor, mask: &Tensor, p: f64) -> Tensor {
    attention_dropping_with(q, k, v, mask, |probs| dropout::dropout(probs, p, true))
}

/// [`attention_with_dropout`] with `drop` applied to the probabilities: the training
/// dropout there; in tests a mask of a named seed.
fn attention_dropping_with(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: &Tensor,
    drop: impl FnOnce(&Tensor) -> Tensor,
) -> Tensor {
    let kind = q.kind();
    let wide = |t: &Tensor| match kind {
        Kind::BFloat16 | Kind::Half => t.to_kind(Kind::Float),
        _ => t.shallow_clone(),
    };
    let (q, k, v) = (wide(q), wide(k), wide(v));
    let head_dim = *q.size().last().expect("heads have a width") as f64;
    let scores = q.matmul(&k.transpose(-2, -1)) / head_dim.sqrt();
    // Masked keys get the lowest finite score, not -inf: a row with no key to attend (a
    // sentence of no tokens) then stays finite, and is zeroed after the softmax, as
    // libtorch's `_safe_softmax` leaves it; every other row weighs masked keys exp(-huge) = 0.
    let probs = scores
        .masked_fill(&mask.logical_not(), f64::from(f32::MIN))
        .softmax(-1, scores.kind())
        * mask
            .any_dims([-1i64].as_slice(), true)
            .to_kind(scores.kind());
    drop(&probs).matmul(&v).to_kind(kind)
}

/// HF `BertSelfOutput` (`attention.output.*`) and `BertOutput` (`output.*`) share one
/// shape: LayerNorm(dropout(x Wᵀ + b) + residual), the product in `autocast`'s kind, the
/// sum and the norm in the residual's.
#[derive(Debug)]
pub struct BertResidualOutput {
    dense: Linear,
    layer_norm: nn::LayerNorm,
    dropout: f64,
}

/// HF `BertSelfOutput`.
pub type BertSelfOutput = BertResidualOutput;
/// HF `BertOutput`.
pub type BertOutput = BertResidualOutput;

impl BertResidualOutput {
    /// `p` is the module's path (`attention.output` or `output`); `in_dim` the width of
    /// what the dense layer reads (H after attention, the FFN width after it).
    pub fn new(p: nn::Path, in_dim: i64, c: &EncoderConfig) -> Self {
        let h = c.hidden_size as i64;
        Self {
            dense: Linear::new(linear(&p / "dense", in_dim, h, c.initializer_range)),
            layer_norm: layer_norm(&p / "LayerNorm", h, c.layer_norm_eps),
            dropout: c.hidden_dropout_prob,
        }
    }

    pub fn forward_t(
        &self,
        x: &Tensor,
        residual: &Tensor,
        train: bool,
        autocast: Option<Kind>,
    ) -> Tensor {
        if !train {
            // No dropout: the sum can come from the product's own pass (int8).
            return self
                .dense
                .forward_residual(x, autocast, residual)
                .apply(&self.layer_norm);
        }
        let out = dropout::dropout(&self.dense.forward(x, autocast), self.dropout, train);
        (out.to_kind(residual.kind()) + residual).apply(&self.layer_norm)
    }

    fn set_kernel(&mut self, kernel: LinearKernel) -> Result<()> {
        self.dense.set_kernel(kernel)
    }
}

/// HF `BertAttention` (`attention.*`): self-attention, then its output block.
#[derive(Debug)]
pub struct BertAttention {
    self_attention: BertSelfAttention,
    output: BertSelfOutput,
}

impl BertAttention {
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        Self {
            self_attention: BertSelfAttention::new(&p / "self", c),
            output: BertSelfOutput::new(&p / "output", c.hidden_size as i64, c),
        }
    }

    pub fn forward_t(
        &self,
        hidden: &Tensor,
        mask: &Tensor,
        layout: Option<&TokenLayout>,
        train: bool,
        autocast: Option<Kind>,
    ) -> Tensor {
        let context = self
            .self_attention
            .forward_t(hidden, mask, layout, train, autocast);
        self.output.forward_t(&context, hidden, train, autocast)
    }

    fn set_kernel(&mut self, kernel: LinearKernel) -> Result<()> {
        self.self_attention.set_kernel(kernel)?;
        self.output.set_kernel(kernel)
    }
}

/// HF `BertIntermediate` (`intermediate.*`): act(x W₁ᵀ + b₁), H -> FFN width.
#[derive(Debug)]
pub struct BertIntermediate {
    dense: Linear,
    activation: Activation,
}

impl BertIntermediate {
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        let (h, ff) = (c.hidden_size as i64, c.intermediate_size as i64);
        Self {
            dense: Linear::new(linear(&p / "dense", h, ff, c.initializer_range)),
            activation: c.hidden_act,
        }
    }

    pub fn forward(&self, x: &Tensor, autocast: Option<Kind>) -> Tensor {
        self.dense.forward_activated(x, autocast, self.activation)
    }

    fn set_kernel(&mut self, kernel: LinearKernel) -> Result<()> {
        self.dense.set_kernel(kernel)
    }
}

/// HF `BertLayer` (`encoder.layer.N.*`): one post-LN transformer layer.
#[derive(Debug)]
pub struct BertLayer {
    attention: BertAttention,
    intermediate: BertIntermediate,
    output: BertOutput,
}

impl BertLayer {
    /// `p` is the layer's path, e.g. `encoder.layer.3`.
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        Self {
            attention: BertAttention::new(&p / "attention", c),
            intermediate: BertIntermediate::new(&p / "intermediate", c),
            output: BertOutput::new(&p / "output", c.intermediate_size as i64, c),
        }
    }

    /// Products in `autocast`'s kind, residual sums and layer norms in `hidden`'s.
    /// `hidden` is [B, S, H], or [T, H] packed by `layout`.
    pub fn forward_t(
        &self,
        hidden: &Tensor,
        mask: &Tensor,
        layout: Option<&TokenLayout>,
        train: bool,
        autocast: Option<Kind>,
    ) -> Tensor {
        let attended = self
            .attention
            .forward_t(hidden, mask, layout, train, autocast);
        let ff = self.intermediate.forward(&attended, autocast);
        self.output.forward_t(&ff, &attended, train, autocast)
    }

    fn set_kernel(&mut self, kernel: LinearKernel) -> Result<()> {
        self.attention.set_kernel(kernel)?;
        self.intermediate.set_kernel(kernel)?;
        self.output.set_kernel(kernel)
    }
}

/// HF `BertEncoder` (`encoder.*`): the stored unit of layers, applied `repeats` times.
#[derive(Debug)]
pub struct BertEncoder {
    unit: Vec<BertLayer>,
    repeats: usize,
}

impl BertEncoder {
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        let layers = &p / "layer";
        let stored = c.stored_layers();
        Self {
            unit: (0..stored)
                .map(|i| BertLayer::new(&layers / i, c))
                .collect(),
            repeats: c.num_hidden_layers / stored,
        }
    }

    /// `hidden`: [B, S, H], or [T, H] packed by `layout` (then so is the result).
    pub fn forward_t(
        &self,
        hidden: Tensor,
        mask: &Tensor,
        layout: Option<&TokenLayout>,
        train: bool,
        autocast: Option<Kind>,
    ) -> Tensor {
        let mut hidden = hidden;
        for _ in 0..self.repeats {
            for layer in &self.unit {
                hidden = layer.forward_t(&hidden, mask, layout, train, autocast);
            }
        }
        hidden
    }

    fn set_kernel(&mut self, kernel: LinearKernel) -> Result<()> {
        self.unit
            .iter_mut()
            .try_for_each(|layer| layer.set_kernel(kernel))
    }
}

/// HF `BertModel` without the pooler (sentence-transformers pools itself): embeddings,
/// then the encoder.
#[derive(Debug)]
pub struct BertModel {
    pub embeddings: BertEmbeddings,
    pub encoder: BertEncoder,
    /// Mixed precision: the kind the layers' matrix products run in (None: the weights').
    autocast: Option<Kind>,
    /// When inference passes run the layers on the real tokens only (`LASE_UNPAD`).
    unpad: UnpadPolicy,
}

impl BertModel {
    /// `p` is the checkpoint root (HF BERT keys start at `embeddings.` / `encoder.`).
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        Self {
            embeddings: BertEmbeddings::new(&p / "embeddings", c),
            encoder: BertEncoder::new(&p / "encoder", c),
            autocast: None,
            unpad: UnpadPolicy::from_env(),
        }
    }

    /// Runs the layers' matrix products in `kind` (e.g. bfloat16) while the weights, the
    /// residual stream and the layer norms keep theirs: torch.autocast's mixed precision.
    pub fn set_autocast(&mut self, kind: Option<Kind>) {
        self.autocast = kind;
    }

    pub fn autocast(&self) -> Option<Kind> {
        self.autocast
    }

    /// When inference passes run the layers on the real tokens only
    /// ([`TokenLayout::worth_packing`]).
    pub fn set_unpad(&mut self, policy: UnpadPolicy) {
        self.unpad = policy;
    }

    /// Runs every layer's linear products with `kernel` (int8 or packed bfloat16: a copy
    /// of the current weights, CPU only, inference only; plain: the parameters again).
    /// The embeddings, attention, layer norms and everything after the layers are not
    /// affected.
    pub fn set_kernel(&mut self, kernel: LinearKernel) -> Result<()> {
        self.encoder.set_kernel(kernel)
    }

    /// The kernel of the layers' linear products (that of the first feed-forward layer;
    /// [`Self::set_kernel`] sets every layer alike). Plain for a model without layers.
    pub fn kernel(&self) -> LinearKernel {
        self.encoder
            .unit
            .first()
            .map_or(LinearKernel::Plain, |l| l.intermediate.dense.kernel())
    }

    /// Boolean key mask [B, 1, 1, S] from a 0/1 attention mask [B, S].
    pub fn key_mask(attention_mask: &Tensor) -> Tensor {
        attention_mask.to_kind(Kind::Bool).unsqueeze(1).unsqueeze(1)
    }

    /// Token states [B, S, H] of the last layer (zeros at padded positions when the
    /// pass ran unpadded).
    pub fn forward_t(
        &self,
        input_ids: &Tensor,
        token_type_ids: &Tensor,
        attention_mask: &Tensor,
        train: bool,
    ) -> Tensor {
        let mask = Self::key_mask(attention_mask);
        let hidden = self.embeddings.forward_t(input_ids, token_type_ids, train);
        match TokenLayout::worth_packing(attention_mask, &hidden, train, self.unpad) {
            Some(layout) => {
                let packed = layout.pack(&hidden);
                let out =
                    self.encoder
                        .forward_t(packed, &mask, Some(&layout), train, self.autocast);
                layout.unpack(&out)
            }
            None => self
                .encoder
                .forward_t(hidden, &mask, None, train, self.autocast),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    /// The model's key mask [B, 1, 1, S] of sentences of these lengths padded to `s`.
    fn key_mask_of_lengths(lengths: &[i64], s: i64) -> Tensor {
        let attention = Tensor::arange(s, (Kind::Int64, Device::Cpu))
            .unsqueeze(0)
            .lt_tensor(&Tensor::from_slice(lengths).unsqueeze(1));
        BertModel::key_mask(&attention)
    }

    /// With a drop rate too small to drop anything (its 16-bit threshold rounds to 0) the
    /// step-by-step attention is libtorch's fused one, padded keys masked, in float32 and
    /// bfloat16; and at p = 0.5 about half the probabilities are gone.
    #[test]
    fn attention_with_dropout_is_the_fused_attention_when_nothing_drops() {
        tch::manual_seed(1);
        let shape = [3, 4, 7, 16];
        let (q, k, v) = (
            Tensor::randn(shape, (Kind::Float, Device::Cpu)),
            Tensor::randn(shape, (Kind::Float, Device::Cpu)),
            Tensor::randn(shape, (Kind::Float, Device::Cpu)),
        );
        let mask = key_mask_of_lengths(&[7, 3, 5], 7);
        for kind in [Kind::Float, Kind::BFloat16] {
            let (q, k, v) = (q.to_kind(kind), k.to_kind(kind), v.to_kind(kind));
            let fused = Tensor::scaled_dot_product_attention(
                &q,
                &k,
                &v,
                Some(&mask),
                0.0,
                false,
                None,
                false,
            );
            let ours = attention_with_dropout(&q, &k, &v, &mask, 1e-9);
            assert_eq!(ours.kind(), kind);
            let diff = (ours.to_kind(Kind::Float) - fused.to_kind(Kind::Float))
                .abs()
                .max()
                .double_value(&[]);
            let tolerance = if kind == Kind::Float { 1e-5 } else { 2e-2 };
            assert!(diff < tolerance, "{kind:?}: {diff}");
        }
        // At p = 0.5 the probabilities are what is dropped: the context is the masked,
        // doubled probabilities times V, with the mask the same seed draws. The seed is
        // named, not drawn: libtorch's generator is shared with the tests running beside.
        let half = attention_dropping_with(&q, &k, &v, &mask, |probs| {
            dropout::dropout_with_seed(probs, 0.5, 4)
        });
        let ones = Tensor::ones([3, 4, 7, 7], (Kind::Float, Device::Cpu));
        let kept = dropout::dropout_with_seed(&ones, 0.5, 4);
        let probs = (q.matmul(&k.transpose(-2, -1)) / 4.0)
            .masked_fill(&mask.logical_not(), f64::NEG_INFINITY)
            .softmax(-1, Kind::Float);
        let expected = (probs * kept).matmul(&v);
        let diff = (half - expected).abs().max().double_value(&[]);
        assert!(diff < 1e-5, "{diff}");
        // And the training path drops at p = 0.5 (its mask drawn from libtorch's generator).
        let fused =
            Tensor::scaled_dot_product_attention(&q, &k, &v, Some(&mask), 0.0, false, None, false);
        let dropped = attention_with_dropout(&q, &k, &v, &mask, 0.5);
        assert!(!dropped.allclose(&fused, 1e-3, 1e-3, false));
    }

    /// A row with no key to attend (a sentence of no tokens) gives a zero context, not NaN,
    /// and finite gradients.
    #[test]
    fn attention_with_dropout_keeps_a_row_without_keys_finite() {
        tch::manual_seed(2);
        let shape = [2, 2, 5, 8];
        let q = Tensor::randn(shape, (Kind::Float, Device::Cpu)).set_requires_grad(true);
        let (k, v) = (
            Tensor::randn(shape, (Kind::Float, Device::Cpu)),
            Tensor::randn(shape, (Kind::Float, Device::Cpu)),
        );
        let mask = key_mask_of_lengths(&[5, 0], 5);
        let out = attention_with_dropout(&q, &k, &v, &mask, 0.1);
        assert_eq!(out.isfinite().all().int64_value(&[]), 1);
        assert_eq!(out.get(1).abs().max().double_value(&[]), 0.0);
        assert!(out.get(0).abs().max().double_value(&[]) > 0.0);
        out.sum(Kind::Float).backward();
        assert_eq!(q.grad().isfinite().all().int64_value(&[]), 1);
    }
}
