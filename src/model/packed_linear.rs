//! bfloat16 linear layers with the weight packed once for oneDNN's CPU kernels (AMX /
//! AVX-512 BF16), as torch.compile's CPU freezing does: libtorch's plain `linear` packs
//! the weight again on every product, which made the products of all-MiniLM-L6-v2's
//! layers 1.59x slower on a 2-core AMX Xeon (bench/gemm_prepack.py, docs/benchmarks.md).
//! The kernels are libtorch's own (`mkldnn::_reorder_linear_weight`,
//! `mkldnn::_linear_pointwise`), reached through csrc/packed_linear.cpp because tch binds
//! ATen's native functions only. CPU only, inference only: the packed copy does not follow
//! later changes to the weights.

use std::ffi::{CStr, c_char};

use tch::{Device, Kind, Tensor};
use torch_sys::C_tensor;

use super::int8::{ERROR_BUFFER, message};
use crate::error::{LaseError, Result};

unsafe extern "C" {
    fn lase_packed_linear_pack(
        weight: *const C_tensor,
        rows: i64,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut C_tensor;
    fn lase_packed_linear_forward(
        input: *const C_tensor,
        packed: *const C_tensor,
        bias: *const C_tensor,
        out_features: i64,
        attr: *const c_char,
        algorithm: *const c_char,
        row_bucket: i64,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut C_tensor;
}

/// An activation oneDNN applies inside the product (its post-op).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusedActivation {
    None,
    /// Exact GELU, x Φ(x).
    Gelu,
    /// GELU's tanh approximation.
    GeluTanh,
    Relu,
    /// x σ(x).
    Silu,
}

impl FusedActivation {
    /// oneDNN's post-op name and algorithm (`_linear_pointwise`'s `attr`, `algorithm`).
    fn names(self) -> (&'static CStr, Option<&'static CStr>) {
        match self {
            Self::None => (c"none", None),
            Self::Gelu => (c"gelu", Some(c"none")),
            Self::GeluTanh => (c"gelu", Some(c"tanh")),
            Self::Relu => (c"relu", None),
            Self::Silu => (c"swish", None),
        }
    }
}

/// Rows the packing is blocked for: a CPU forward pass of lase embed (512 padded tokens).
const PACKING_ROWS: i64 = 512;

/// On CPUs with AMX a product's rows are padded up to a multiple of this: oneDNN
/// JIT-compiles a primitive for each new row count (its AMX kernels 8.4 ms each on average
/// on a 2-core AMX Xeon, 1.7 s of CPU time for 200 of them while encoding 3,112
/// sentences), and unpadded forward passes bring a new row count with nearly every pass;
/// with buckets of 32 rows a pass of up to 512 tokens has at most 16. Its AVX512-BF16
/// kernels (CPUs without AMX) built in 0.5 ms each on the same Xeon (91 ms for 200, with
/// `ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16`): little to save, and on a Zen 5 EPYC (AVX512-BF16,
/// no AMX) buckets of 32 encoded at 0.98x-1.00x the unpadded rate, so there the rows stay
/// unpadded (docs/benchmarks.md, "bf16 products in row buckets").
pub const AMX_ROW_BUCKET: i64 = 32;

/// The row bucket for CPUs with these /proc/cpuinfo flags: [`AMX_ROW_BUCKET`] with AMX,
/// else 1 (unpadded).
pub fn row_bucket_for<S: AsRef<str>>(flags: &[S]) -> i64 {
    if crate::runtime::has_amx(flags) {
        AMX_ROW_BUCKET
    } else {
        1
    }
}

/// [`row_bucket_for`] this CPU, or `LASE_BF16_ROW_BUCKET` where set (1: no padding; for
/// comparisons).
fn row_bucket() -> i64 {
    static BUCKET: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *BUCKET.get_or_init(|| {
        std::env::var("LASE_BF16_ROW_BUCKET")
            .ok()
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|&b| b >= 1)
            .unwrap_or_else(|| row_bucket_for(&crate::runtime::cpu_flags()))
    })
}

/// A bfloat16 linear layer's weight in oneDNN's packed layout, and its bias.
#[derive(Debug)]
pub struct PackedLinear {
    packed: Tensor,
    bias: Option<Tensor>,
    in_features: i64,
    out_features: i64,
}

impl PackedLinear {
    /// Packs a bfloat16 `[out, in]` weight and optional `[out]` bias on the CPU. Fails
    /// (an error to fall back on, not a panic) where oneDNN has no bfloat16 kernel.
    pub fn pack(weight: &Tensor, bias: Option<&Tensor>) -> Result<Self> {
        let (out_features, in_features) = weight.size2().map_err(|_| {
            LaseError::InvalidArgument(format!(
                "packed linear: weight must be [out, in], got {:?}",
                weight.size()
            ))
        })?;
        if weight.device() != Device::Cpu || weight.kind() != Kind::BFloat16 {
            return Err(LaseError::InvalidArgument(format!(
                "packed linear layers take bfloat16 weights on the CPU (got {:?} on {:?})",
                weight.kind(),
                weight.device()
            )));
        }
        let mut err = [0u8; ERROR_BUFFER];
        // SAFETY: the weight outlives the call; the C++ side returns a new owned tensor
        // (or null) and writes at most ERROR_BUFFER bytes, NUL-terminated, into `err`.
        let packed = unsafe {
            lase_packed_linear_pack(
                weight.as_ptr(),
                PACKING_ROWS,
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        if packed.is_null() {
            return Err(LaseError::Model(format!(
                "packed linear: packing failed: {}",
                message(&err)
            )));
        }
        let layer = Self {
            // SAFETY: a new, owned at::Tensor from the C++ side.
            packed: unsafe { Tensor::from_ptr(packed) },
            bias: bias.map(|b| b.detach().copy()),
            in_features,
            out_features,
        };
        // A CPU where oneDNN packs but cannot run the product fails here, at set-up, not
        // in the middle of an encode.
        let _probe = layer
            .try_forward(
                &Tensor::zeros([1, in_features], (Kind::BFloat16, Device::Cpu)),
                FusedActivation::None,
            )
            .map_err(|e| LaseError::Model(format!("packed linear: packing failed: {e}")))?;
        Ok(layer)
    }

    /// `act(x W^T + b)` for a bfloat16 input `[..., in]`; returns bfloat16 `[..., out]`.
    pub fn try_forward(&self, x: &Tensor, act: FusedActivation) -> Result<Tensor> {
        self.try_forward_in_buckets(x, act, row_bucket())
    }

    /// [`Self::try_forward`] with the rows padded up to a multiple of `bucket` for the
    /// product (1: not padded); the padding's outputs are dropped.
    pub fn try_forward_in_buckets(
        &self,
        x: &Tensor,
        act: FusedActivation,
        bucket: i64,
    ) -> Result<Tensor> {
        if x.kind() != Kind::BFloat16
            || x.device() != Device::Cpu
            || x.size().last() != Some(&self.in_features)
        {
            return Err(LaseError::InvalidArgument(format!(
                "packed linear ({} -> {}) takes bfloat16 [..., {}] on the CPU, got {:?} {:?} on {:?}",
                self.in_features,
                self.out_features,
                self.in_features,
                x.kind(),
                x.size(),
                x.device()
            )));
        }
        let (attr, algorithm) = act.names();
        let mut err = [0u8; ERROR_BUFFER];
        // SAFETY: as in `pack`; every tensor is alive for the call.
        let out = unsafe {
            lase_packed_linear_forward(
                x.as_ptr(),
                self.packed.as_ptr(),
                self.bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr()),
                self.out_features,
                attr.as_ptr(),
                algorithm.map_or(std::ptr::null(), CStr::as_ptr),
                bucket,
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        if out.is_null() {
            return Err(LaseError::Model(format!(
                "packed linear ({} -> {}) on input {:?}: {}",
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
    pub fn forward(&self, x: &Tensor, act: FusedActivation) -> Tensor {
        self.try_forward(x, act).unwrap_or_else(|e| panic!("{e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf16(t: Tensor) -> Tensor {
        t.to_kind(Kind::BFloat16)
    }

    /// On a CPU with bfloat16 instructions the packed product is libtorch's bfloat16
    /// product, activation included, to bfloat16's rounding; elsewhere packing may be
    /// refused, as an error (the encoder then keeps the plain product), never an abort.
    #[test]
    fn matches_the_plain_bfloat16_product_with_each_activation() {
        tch::manual_seed(5);
        let w = bf16(Tensor::randn([48, 32], (Kind::Float, Device::Cpu)) * 0.2);
        let b = bf16(Tensor::randn([48], (Kind::Float, Device::Cpu)));
        let x = bf16(Tensor::randn([2, 5, 32], (Kind::Float, Device::Cpu)));
        let packed = match PackedLinear::pack(&w, Some(&b)) {
            Ok(p) => p,
            Err(e) => {
                assert!(
                    !crate::runtime::cpu_has_fast_bf16(),
                    "packing failed on a CPU with bfloat16 instructions: {e}"
                );
                assert!(e.to_string().contains("packing failed"), "{e}");
                return;
            }
        };
        let plain = x.linear(&w, Some(&b));
        let cases: [(FusedActivation, Tensor); 5] = [
            (FusedActivation::None, plain.shallow_clone()),
            (FusedActivation::Gelu, plain.gelu("none")),
            (FusedActivation::GeluTanh, plain.gelu("tanh")),
            (FusedActivation::Relu, plain.relu()),
            (FusedActivation::Silu, plain.silu()),
        ];
        for (act, expected) in cases {
            let got = packed.forward(&x, act);
            assert_eq!(got.size(), [2, 5, 48], "{act:?}");
            assert_eq!(got.kind(), Kind::BFloat16, "{act:?}");
            let diff = f64::try_from((&got - &expected).abs().max().to_kind(Kind::Float)).unwrap();
            let scale = f64::try_from(expected.abs().max().to_kind(Kind::Float)).unwrap();
            // bfloat16 keeps 8 significant bits: one rounding of the output is 0.4%.
            assert!(
                diff <= 0.02 * scale,
                "{act:?}: max |diff| {diff} of {scale}"
            );
        }
        let relu_in_product = packed.forward(&x, FusedActivation::Relu);
        assert!(f64::try_from(relu_in_product.min().to_kind(Kind::Float)).unwrap() >= 0.0);
        let no_bias = PackedLinear::pack(&w, None)
            .unwrap()
            .forward(&x, FusedActivation::None);
        let diff = f64::try_from(
            (&no_bias - x.linear::<&Tensor>(&w, None))
                .abs()
                .max()
                .to_kind(Kind::Float),
        )
        .unwrap();
        assert!(diff < 0.1, "without bias: max |diff| {diff}");
    }

    /// Exact and tanh GELU differ by under 5e-4, below the product test's tolerance: the
    /// names oneDNN receives are checked here.
    #[test]
    fn each_activation_names_its_onednn_post_op() {
        let names = |a: FusedActivation| {
            let (attr, algorithm) = a.names();
            (
                attr.to_str().unwrap(),
                algorithm.map(|c| c.to_str().unwrap()),
            )
        };
        assert_eq!(names(FusedActivation::None), ("none", None));
        assert_eq!(names(FusedActivation::Gelu), ("gelu", Some("none")));
        assert_eq!(names(FusedActivation::GeluTanh), ("gelu", Some("tanh")));
        assert_eq!(names(FusedActivation::Relu), ("relu", None));
        assert_eq!(names(FusedActivation::Silu), ("swish", None));
    }

    /// Rows padded to a bucket give each real row the product it gets unpadded, and the
    /// padding's rows are not returned: for row counts below, at and above a bucket, with
    /// a bias and a fused activation (whose outputs on the zero rows are not zero).
    #[test]
    fn rows_padded_to_a_bucket_keep_their_products_and_drop_the_padding() {
        tch::manual_seed(9);
        let w = bf16(Tensor::randn([40, 24], (Kind::Float, Device::Cpu)) * 0.2);
        let b = bf16(Tensor::randn([40], (Kind::Float, Device::Cpu)) + 1.0);
        let Ok(packed) = PackedLinear::pack(&w, Some(&b)) else {
            assert!(!crate::runtime::cpu_has_fast_bf16());
            return;
        };
        for rows in [1i64, 7, 16, 17, 33] {
            let x = bf16(Tensor::randn([rows, 24], (Kind::Float, Device::Cpu)));
            let plain = packed
                .try_forward_in_buckets(&x, FusedActivation::Gelu, 1)
                .unwrap();
            for bucket in [16i64, 32] {
                let got = packed
                    .try_forward_in_buckets(&x, FusedActivation::Gelu, bucket)
                    .unwrap();
                assert_eq!(got.size(), [rows, 40], "{rows} rows, bucket {bucket}");
                assert!(got.is_contiguous(), "{rows} rows, bucket {bucket}");
                let diff = f64::try_from((&got - &plain).abs().max().to_kind(Kind::Float)).unwrap();
                let scale = f64::try_from(plain.abs().max().to_kind(Kind::Float)).unwrap();
                assert!(
                    diff <= 0.01 * scale,
                    "{rows} rows, bucket {bucket}: max |diff| {diff} of {scale}"
                );
            }
        }
        // A batch shape [2, 5, in] keeps its shape through the padding.
        let x = bf16(Tensor::randn([2, 5, 24], (Kind::Float, Device::Cpu)));
        let got = packed
            .try_forward_in_buckets(&x, FusedActivation::None, 32)
            .unwrap();
        assert_eq!(got.size(), [2, 5, 40]);
    }

    #[test]
    fn rows_are_bucketed_on_amx_cpus_only() {
        assert_eq!(row_bucket_for(&["avx512f", "amx_bf16", "amx_tile"]), 32);
        assert_eq!(row_bucket_for(&["avx512f", "avx512_bf16"]), 1);
        assert_eq!(row_bucket_for::<&str>(&[]), 1);
    }

    #[test]
    fn wrong_kinds_and_shapes_are_errors_not_aborts() {
        let float = Tensor::randn([8, 4], (Kind::Float, Device::Cpu));
        let err = PackedLinear::pack(&float, None).unwrap_err();
        assert!(err.to_string().contains("bfloat16 weights"), "{err}");
        let err = PackedLinear::pack(&bf16(Tensor::randn([8], (Kind::Float, Device::Cpu))), None)
            .unwrap_err();
        assert!(err.to_string().contains("[out, in]"), "{err}");
        if let Ok(packed) = PackedLinear::pack(&bf16(float), None) {
            let err = packed
                .try_forward(
                    &bf16(Tensor::randn([3, 5], (Kind::Float, Device::Cpu))),
                    FusedActivation::None,
                )
                .unwrap_err();
            assert!(err.to_string().contains("packed linear (4 -> 8)"), "{err}");
            let err = packed
                .try_forward(
                    &Tensor::randn([3, 4], (Kind::Float, Device::Cpu)),
                    FusedActivation::None,
                )
                .unwrap_err();
            assert!(err.to_string().contains("takes bfloat16"), "{err}");
        }
    }
}
