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

/// A linear layer's weights in an inference kernel's own format, without the float
/// parameters they were made from: what [`Linear`] keeps beside its parameters, and what
/// a fused product (the attention's query, key and value as one) keeps alone.
#[derive(Debug)]
pub enum InferenceLinear {
    Int8(Int8Linear),
    PackedBf16(PackedLinear),
}

impl InferenceLinear {
    /// `weight` [out, in] and `bias` [out] packed for `kernel`; None for
    /// [`LinearKernel::Plain`], which has no copy of its own.
    pub fn pack(
        kernel: LinearKernel,
        weight: &Tensor,
        bias: Option<&Tensor>,
    ) -> Result<Option<Self>> {
        let _guard = tch::no_grad_guard();
        Ok(match kernel {
            LinearKernel::Plain => None,
            LinearKernel::Int8 => Some(Self::Int8(Int8Linear::pack(weight, bias)?)),
            LinearKernel::PackedBf16 => Some(Self::PackedBf16(PackedLinear::pack(weight, bias)?)),
        })
    }

    /// `act(x W^T + b)` (no activation: None): packed bfloat16 runs the activation
    /// inside the product (oneDNN's post-op), int8 in the pass that rescales the int32
    /// sums (GELU, ReLU; others after it).
    pub fn forward(&self, x: &Tensor, act: Option<Activation>) -> Tensor {
        match (self, act) {
            (Self::Int8(int8), act) => int8.forward_with(x, act, None),
            (Self::PackedBf16(packed), None) => packed.forward(x, FusedActivation::None),
            (Self::PackedBf16(packed), Some(act)) => packed.forward(x, act.fused()),
        }
    }

    pub fn kernel(&self) -> LinearKernel {
        match self {
            Self::Int8(_) => LinearKernel::Int8,
            Self::PackedBf16(_) => LinearKernel::PackedBf16,
        }
    }
}

#[derive(Debug)]
pub struct Linear {
    float: nn::Linear,
    copy: Option<InferenceLinear>,
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
            (Some(copy), _) => copy.forward(x, None),
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
            Some(copy) => copy.forward(x, Some(act)),
            None => act.apply(&self.forward(x, autocast)),
        }
    }

    /// `x W^T + b + residual` for inference: int8 adds the residual in the pass that
    /// rescales its sums (the output is written once); other kernels add it after the
    /// product, in the residual's kind.
    pub fn forward_residual(
        &self,
        x: &Tensor,
        autocast: Option<Kind>,
        residual: &Tensor,
    ) -> Tensor {
        match &self.copy {
            Some(InferenceLinear::Int8(int8)) if residual.kind() == Kind::Float => {
                int8.forward_with(x, None, Some(residual))
            }
            _ => self.forward(x, autocast).to_kind(residual.kind()) + residual,
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
        self.copy = InferenceLinear::pack(kernel, &self.float.ws, self.float.bs.as_ref())?;
        Ok(())
    }

    pub fn kernel(&self) -> LinearKernel {
        self.copy
            .as_ref()
            .map_or(LinearKernel::Plain, InferenceLinear::kernel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    /// Query, key and value stacked into one int8 product (as the attention fuses them)
    /// give the three separate int8 products: each output channel keeps its own weights
    /// and scale, and each input row its own scale. Bit for bit where each part's width
    /// is a multiple of 16 (the AVX-512 rescaling loop's width; BERT widths such as 384
    /// are), else to float32's last bits (a part's tail is rescaled by the loop's
    /// remainder code).
    #[test]
    fn stacked_int8_products_equal_the_separate_ones() {
        tch::manual_seed(3);
        let x = Tensor::randn([2, 7, 16], (Kind::Float, Device::Cpu));
        check_stacked(32, &x, true);
        check_stacked(24, &x, false);
    }

    fn check_stacked(width: i64, x: &Tensor, bitwise: bool) {
        let part = || nn::Linear {
            ws: Tensor::randn([width, 16], (Kind::Float, Device::Cpu)) * 0.3,
            bs: Some(Tensor::randn([width], (Kind::Float, Device::Cpu))),
        };
        let parts = [part(), part(), part()];
        let weight = Tensor::cat(&parts.each_ref().map(|p| &p.ws), 0);
        let bias = Tensor::cat(&parts.each_ref().map(|p| p.bs.as_ref().unwrap()), 0);
        let fused = InferenceLinear::pack(LinearKernel::Int8, &weight, Some(&bias))
            .unwrap()
            .unwrap();
        let all = fused.forward(x, None);
        assert_eq!(all.size(), vec![2, 7, 3 * width]);
        for (i, p) in parts.into_iter().enumerate() {
            let mut alone = Linear::new(p);
            alone.set_kernel(LinearKernel::Int8).unwrap();
            let want = alone.forward(x, None);
            let got = all.narrow(-1, width * i as i64, width);
            if bitwise {
                assert!(got.equal(&want), "width {width}, part {i}");
            } else {
                assert!(
                    got.allclose(&want, 1e-6, 1e-6, false),
                    "width {width}, part {i}"
                );
            }
            // And the int8 product is not the float one: the test sees the kernel.
            alone.set_kernel(LinearKernel::Plain).unwrap();
            assert!(!alone.forward(x, None).allclose(&want, 1e-6, 1e-6, false));
        }
    }
}
