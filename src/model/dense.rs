//! sentence-transformers' `Dense` module (e.g. LaBSE's `2_Dense/`): y = act(W x + b) on
//! the pooled vector. Its config is `2_Dense/config.json`, its weights
//! `2_Dense/model.safetensors` with keys `linear.weight`, `linear.bias`.

use serde::{Deserialize, Serialize};
use tch::{Tensor, nn, nn::Module};

use crate::error::{LaseError, Result};

use super::param_init::{linear, linear_no_bias};

pub const TANH: &str = "torch.nn.modules.activation.Tanh";
pub const IDENTITY: &str = "torch.nn.modules.linear.Identity";

/// `2_Dense/config.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DenseConfig {
    pub in_features: usize,
    pub out_features: usize,
    #[serde(default = "default_bias")]
    pub bias: bool,
    #[serde(default = "default_activation")]
    pub activation_function: String,
}

fn default_bias() -> bool {
    true
}

fn default_activation() -> String {
    TANH.into()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DenseActivation {
    Identity,
    Tanh,
    Relu,
    Gelu,
    Sigmoid,
}

impl DenseActivation {
    fn parse(name: &str) -> Result<Self> {
        let short = name.rsplit('.').next().unwrap_or(name);
        Ok(match short {
            "Identity" => Self::Identity,
            "Tanh" => Self::Tanh,
            "ReLU" => Self::Relu,
            "GELU" => Self::Gelu,
            "Sigmoid" => Self::Sigmoid,
            _ => {
                return Err(LaseError::Model(format!(
                    "unsupported Dense activation_function {name:?}"
                )));
            }
        })
    }
}

/// A dense projection head.
#[derive(Debug)]
pub struct Dense {
    pub config: DenseConfig,
    linear: nn::Linear,
    activation: DenseActivation,
}

impl Dense {
    /// `p` is the module's path; its parameters are `p.linear.weight` / `p.linear.bias`.
    pub fn new(p: nn::Path, config: DenseConfig, init_std: f64) -> Result<Self> {
        let activation = DenseActivation::parse(&config.activation_function)?;
        let (i, o) = (config.in_features as i64, config.out_features as i64);
        let linear = if config.bias {
            linear(&p / "linear", i, o, init_std)
        } else {
            linear_no_bias(&p / "linear", i, o, init_std)
        };
        Ok(Self {
            config,
            linear,
            activation,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Tensor {
        let y = self.linear.forward(x);
        match self.activation {
            DenseActivation::Identity => y,
            DenseActivation::Tanh => y.tanh(),
            DenseActivation::Relu => y.relu(),
            DenseActivation::Gelu => y.gelu("none"),
            DenseActivation::Sigmoid => y.sigmoid(),
        }
    }
}
