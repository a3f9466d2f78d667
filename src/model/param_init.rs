//! Parameter constructors with BERT's initialisation (normal(0, initializer_range)
//! weights, zero biases, unit LayerNorm), so models trained from scratch start where
//! HF's would. Names ("weight", "bias") match HF checkpoints.

use tch::{Kind, Tensor, nn, nn::Module};

pub fn linear(p: nn::Path, in_dim: i64, out_dim: i64, std: f64) -> nn::Linear {
    nn::linear(
        p,
        in_dim,
        out_dim,
        nn::LinearConfig {
            ws_init: nn::Init::Randn {
                mean: 0.0,
                stdev: std,
            },
            bs_init: Some(nn::Init::Const(0.0)),
            bias: true,
        },
    )
}

pub fn linear_no_bias(p: nn::Path, in_dim: i64, out_dim: i64, std: f64) -> nn::Linear {
    nn::linear(
        p,
        in_dim,
        out_dim,
        nn::LinearConfig {
            ws_init: nn::Init::Randn {
                mean: 0.0,
                stdev: std,
            },
            bs_init: None,
            bias: false,
        },
    )
}

pub fn embedding(p: nn::Path, num: i64, dim: i64, std: f64) -> nn::Embedding {
    nn::embedding(
        p,
        num,
        dim,
        nn::EmbeddingConfig {
            ws_init: nn::Init::Randn {
                mean: 0.0,
                stdev: std,
            },
            ..Default::default()
        },
    )
}

pub fn layer_norm(p: nn::Path, dim: i64, eps: f64) -> nn::LayerNorm {
    nn::layer_norm(
        p,
        vec![dim],
        nn::LayerNormConfig {
            eps,
            ..Default::default()
        },
    )
}

/// `x W^T + b`, in `autocast`'s kind when set (mixed precision as torch.autocast does it:
/// the float32 weights are cast for the product, so gradients still reach float32
/// parameters), otherwise in the weights' own kind.
pub fn apply_linear(l: &nn::Linear, x: &Tensor, autocast: Option<Kind>) -> Tensor {
    match autocast {
        None => l.forward(x),
        Some(kind) => x.to_kind(kind).linear(
            &l.ws.to_kind(kind),
            l.bs.as_ref().map(|b| b.to_kind(kind)).as_ref(),
        ),
    }
}

/// BERT's output block (HF `BertSelfOutput` / `BertOutput`): `LayerNorm(dropout(x W^T + b)
/// + residual)`, the product in `autocast`'s kind, the sum and the norm in the residual's.
pub fn add_and_norm(
    dense: &nn::Linear,
    layer_norm: &nn::LayerNorm,
    x: &Tensor,
    residual: &Tensor,
    (dropout, train): (f64, bool),
    autocast: Option<Kind>,
) -> Tensor {
    let out = apply_linear(dense, x, autocast).dropout(dropout, train);
    (out.to_kind(residual.kind()) + residual).apply(layer_norm)
}
