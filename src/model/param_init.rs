//! Parameter constructors with BERT's initialisation (normal(0, initializer_range)
//! weights, zero biases, unit LayerNorm), so models trained from scratch start where
//! HF's would. Names ("weight", "bias") match HF checkpoints.

use tch::nn;

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
