//! Parameter constructors with BERT's initialisation (normal(0, initializer_range)
//! weights, zero biases, unit LayerNorm), so models trained from scratch start where
//! HF's would. Names ("weight", "bias") match HF checkpoints. A standard deviation of 0
//! gives zeros without drawing from libtorch's generator (normal(0, 0) is 0): what a model
//! whose every weight is then loaded from a file is built with.

use tch::nn;

pub fn linear(p: nn::Path, in_dim: i64, out_dim: i64, std: f64) -> nn::Linear {
    nn::linear(
        p,
        in_dim,
        out_dim,
        nn::LinearConfig {
            ws_init: normal(std),
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
            ws_init: normal(std),
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
            ws_init: normal(std),
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

/// normal(0, std), or zeros without a draw where std is 0.
fn normal(std: f64) -> nn::Init {
    if std == 0.0 {
        nn::Init::Const(0.0)
    } else {
        nn::Init::Randn {
            mean: 0.0,
            stdev: std,
        }
    }
}
