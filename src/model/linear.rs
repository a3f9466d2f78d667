//! A transformer's linear layer, `x W^T + b`: the float parameters (trained and saved)
//! and, for inference on the CPU, a copy of them for a faster kernel: packed int8
//! (src/model/int8.rs) or bfloat16 packed for oneDNN (src/model/packed_linear.rs).

use tch::{Kind, Tensor, nn, nn::Module};

use super::config::Activation;
use super::int8::Int8Linear;
use super::packed_linear::{FusedActivation, PackedLinear};
use crate::error::Result;

/// Which kernel an inference forward pass uses for the transformer's linear layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinearKernel {
    /// libtorch's `linear` on the parameters as they are (any kind, any device).
    Plain,
    /// int8 weights, activations quantised per token (CPU).
    Int8,
    /// bfloat16 with the weight packed once for oneDNN (CPU; bfloat16 parameters).
    PackedBf16,
}

#[derive(Debug)]
enum InferenceCopy {
    Int8(Int8Linear),
    PackedBf16(PackedLinear),
}

#[derive(Debug)]
pub struct Linear {
    float: nn::Linear,
    copy: Option<InferenceCopy>,
}

impl Linear {
    pub fn new(float: nn::Linear) -> Self {
        Self { float, copy: None }
    }

    /// `x W^T + b`: with an inference copy, its kernel; otherwise in `autocast`'s kind
    /// when set (mixed precision as torch.autocast does it: the float32 weights are cast
    /// for the product, so gradients still reach float32 parameters), or in the weights'
    /// own kind.
    pub fn forward(&self, x: &Tensor, autocast: Option<Kind>) -> Tensor {
        match (&self.copy, autocast) {
            (Some(InferenceCopy::Int8(int8)), _) => int8.forward(x),
            (Some(InferenceCopy::PackedBf16(packed)), _) => {
                packed.forward(x, FusedActivation::None)
            }
            (None, None) => self.float.forward(x),
            (None, Some(kind)) => x.to_kind(kind).linear(
                &self.float.ws.to_kind(kind),
                self.float.bs.as_ref().map(|b| b.to_kind(kind)).as_ref(),
            ),
        }
    }

    /// `act(x W^T + b)`: with packed bfloat16 weights the activation runs inside the
    /// product (oneDNN's post-op), otherwise after it.
    pub fn forward_activated(&self, x: &Tensor, autocast: Option<Kind>, act: Activation) -> Tensor {
        match &self.copy {
            Some(InferenceCopy::PackedBf16(packed)) => packed.forward(x, act.fused()),
            _ => act.apply(&self.forward(x, autocast)),
        }
    }

    /// The float parameters: weight `[out, in]` and optional bias `[out]`.
    pub fn parameters(&self) -> (&Tensor, Option<&Tensor>) {
        (&self.float.ws, self.float.bs.as_ref())
    }

    /// Makes the inference copy `kernel` needs from the current weights (or drops it for
    /// [`LinearKernel::Plain`], so products use the parameters again). Packing bfloat16
    /// fails where oneDNN has no bfloat16 kernel; the caller then keeps `Plain`.
    pub fn set_kernel(&mut self, kernel: LinearKernel) -> Result<()> {
        let _guard = tch::no_grad_guard();
        self.copy = match kernel {
            LinearKernel::Plain => None,
            LinearKernel::Int8 => Some(InferenceCopy::Int8(Int8Linear::pack(
                &self.float.ws,
                self.float.bs.as_ref(),
            )?)),
            LinearKernel::PackedBf16 => Some(InferenceCopy::PackedBf16(PackedLinear::pack(
                &self.float.ws,
                self.float.bs.as_ref(),
            )?)),
        };
        Ok(())
    }

    pub fn kernel(&self) -> LinearKernel {
        match self.copy {
            None => LinearKernel::Plain,
            Some(InferenceCopy::Int8(_)) => LinearKernel::Int8,
            Some(InferenceCopy::PackedBf16(_)) => LinearKernel::PackedBf16,
        }
    }
}
