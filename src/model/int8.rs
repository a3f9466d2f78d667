//! Dynamic int8 linear layers, as `torch.ao.quantization.quantize_dynamic` makes them:
//! weights stored int8 (symmetric, one scale per output channel, values within +-63 so
//! that x86's saturating int16 pair sums cannot overflow; see csrc/int8_linear.cpp),
//! activations quantised to 8 bits per call from their own range, products in int8 with
//! int32 sums, outputs float.
//! The kernels are libtorch's own (FBGEMM on x86: `quantized::linear_prepack` and
//! `quantized::linear_dynamic`), reached through csrc/int8_linear.cpp because tch binds
//! ATen's native functions only. CPU only, inference only: the packed copy does not follow
//! later changes to the float weights.

use std::ffi::{CStr, c_char, c_void};
use std::ptr::NonNull;

use tch::{Device, Tensor};
use torch_sys::C_tensor;

use crate::error::{LaseError, Result};

unsafe extern "C" {
    fn lase_int8_linear_pack(
        weight: *const C_tensor,
        bias: *const C_tensor,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut c_void;
    fn lase_int8_linear_forward(
        input: *const C_tensor,
        packed: *const c_void,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut C_tensor;
    fn lase_int8_linear_free(packed: *mut c_void);
}

pub(super) const ERROR_BUFFER: usize = 1024;

pub(super) fn message(buffer: &[u8]) -> String {
    CStr::from_bytes_until_nul(buffer)
        .map(|m| m.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown libtorch error".into())
}

/// A linear layer's weights (and bias) packed for libtorch's int8 kernels.
pub struct Int8Linear {
    packed: NonNull<c_void>,
    in_features: i64,
    out_features: i64,
}

// SAFETY: the handle owns a reference to libtorch's packed weights, which the kernels
// only read (`apply_dynamic` is const); nothing else holds it, and it is freed once in
// Drop. Concurrent forwards on one handle are what PyTorch's threads do with its modules.
unsafe impl Send for Int8Linear {}
unsafe impl Sync for Int8Linear {}

impl std::fmt::Debug for Int8Linear {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Int8Linear({} -> {})",
            self.in_features, self.out_features
        )
    }
}

impl Int8Linear {
    /// Packs a float `[out, in]` weight and optional `[out]` bias (on the CPU).
    pub fn pack(weight: &Tensor, bias: Option<&Tensor>) -> Result<Self> {
        let (out_features, in_features) = weight.size2().map_err(|_| {
            LaseError::InvalidArgument(format!(
                "int8 linear: weight must be [out, in], got {:?}",
                weight.size()
            ))
        })?;
        if weight.device() != Device::Cpu {
            return Err(LaseError::InvalidArgument(format!(
                "int8 linear layers run on the CPU only (weights on {:?})",
                weight.device()
            )));
        }
        let mut err = [0u8; ERROR_BUFFER];
        // SAFETY: the tensors outlive the call; the C++ side copies what it keeps and
        // writes at most ERROR_BUFFER bytes, NUL-terminated, into `err`.
        let packed = unsafe {
            lase_int8_linear_pack(
                weight.as_ptr(),
                bias.map_or(std::ptr::null(), |b| b.as_ptr()),
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        let packed = NonNull::new(packed).ok_or_else(|| {
            LaseError::Model(format!("int8 linear: packing failed: {}", message(&err)))
        })?;
        Ok(Self {
            packed,
            in_features,
            out_features,
        })
    }

    /// `x W^T + b` for a float input `[..., in]`; returns float `[..., out]`.
    pub fn try_forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut err = [0u8; ERROR_BUFFER];
        // SAFETY: as in `pack`; `self.packed` is alive for the call (freed only in Drop).
        let out = unsafe {
            lase_int8_linear_forward(
                x.as_ptr(),
                self.packed.as_ptr(),
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        if out.is_null() {
            return Err(LaseError::Model(format!(
                "int8 linear ({} -> {}) on input {:?}: {}",
                self.in_features,
                self.out_features,
                x.size(),
                message(&err)
            )));
        }
        // SAFETY: the C++ side returned a new, owned at::Tensor.
        Ok(unsafe { Tensor::from_ptr(out) })
    }

    /// As [`Self::try_forward`], panicking on a libtorch error as tch's own operators do
    /// (a shape mismatch is a programming error; `lase serve` catches such panics).
    pub fn forward(&self, x: &Tensor) -> Tensor {
        self.try_forward(x).unwrap_or_else(|e| panic!("{e}"))
    }
}

impl Drop for Int8Linear {
    fn drop(&mut self) {
        // SAFETY: created by lase_int8_linear_pack and freed only here.
        unsafe { lase_int8_linear_free(self.packed.as_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    #[test]
    fn matches_the_float_product_to_int8_accuracy() {
        tch::manual_seed(3);
        let w = Tensor::randn([48, 32], (Kind::Float, Device::Cpu));
        let b = Tensor::randn([48], (Kind::Float, Device::Cpu));
        let x = Tensor::randn([2, 5, 32], (Kind::Float, Device::Cpu));
        let exact = x.linear(&w, Some(&b));
        let q = Int8Linear::pack(&w, Some(&b)).unwrap();
        let got = q.forward(&x);
        assert_eq!(got.size(), [2, 5, 48]);
        let rel = f64::try_from((&got - &exact).norm() / exact.norm()).unwrap();
        // 8-bit activations, 7-bit weights: ~1% relative error, never exact. Gaussian
        // inputs fill the whole u8 range, so a kernel whose int16 pair sums saturate
        // (8-bit weights with 8-bit inputs) shows here as ~11% error.
        assert!(rel < 0.03, "relative error {rel}");
        assert!(rel > 1e-5, "an int8 product cannot be exact: {rel}");
        let no_bias = Int8Linear::pack(&w, None).unwrap().forward(&x);
        let rel = f64::try_from((&no_bias - x.linear::<&Tensor>(&w, None)).norm() / exact.norm())
            .unwrap();
        assert!(rel < 0.03, "relative error without bias {rel}");
    }

    #[test]
    fn shape_errors_are_errors_not_aborts() {
        let w = Tensor::randn([8, 4], (Kind::Float, Device::Cpu));
        let q = Int8Linear::pack(&w, None).unwrap();
        let err = q
            .try_forward(&Tensor::randn([3, 5], (Kind::Float, Device::Cpu)))
            .unwrap_err();
        assert!(err.to_string().contains("int8 linear (4 -> 8)"), "{err}");
        let err =
            Int8Linear::pack(&Tensor::randn([8], (Kind::Float, Device::Cpu)), None).unwrap_err();
        assert!(err.to_string().contains("[out, in]"), "{err}");
    }
}
