//! Int8 linear layers: weights stored int8 (symmetric, one scale per output channel,
//! values within +-63 so that x86's saturating int16 pair sums cannot overflow on CPUs
//! without VNNI; see csrc/int8_linear.cpp), activations quantised to int8 per row (per
//! token) at each call, products in int8 with int32 sums, outputs float.
//! One scale per row, unlike PyTorch's and ONNX Runtime's dynamic int8 (one scale per
//! call): a row's output depends on that row alone, so no sentence sets another's scale,
//! and an outlier token costs precision to itself only (a model's vector can still move
//! with its batch at int8's noise level, through float32 attention's last bits:
//! tests/parity_minilm.rs bounds it). The product is oneDNN's s8 x s8 -> s32 GEMM, reached
//! through libtorch's entry point to it from csrc/int8_linear.cpp with the quantisation
//! around it (libtorch's own `_int_mm` ran a reference loop of its own on an AVX2-only
//! CPU, 45x slower; `LASE_INT8_MATMUL=libtorch` keeps it, for comparisons); the pass that rescales
//! the int32 sums also applies GELU or ReLU and adds a residual (the layer's output is
//! written once; `LASE_INT8_EPILOGUE=separate` runs them as libtorch operations after
//! it, for comparisons). CPU only, inference only:
//! the int8 copy does not follow later changes to the float weights.

use std::ffi::{CStr, c_char, c_void};
use std::ptr::NonNull;

use tch::{Device, Tensor};
use torch_sys::C_tensor;

use super::config::Activation;
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
        epilogue: i32,
        residual: *const C_tensor,
        fuse: bool,
        onednn: bool,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut C_tensor;
    fn lase_int8_linear_free(packed: *mut c_void);
    fn lase_int8_quantize_row(
        x: *const f32,
        q: *mut i8,
        n: i64,
        scale: *mut f32,
        version: i32,
    ) -> bool;
}

/// One row through one version of the int8 row quantiser (0 plain C++, 1 AVX2, 2
/// AVX-512F): its int8 values and scale, or None where this CPU lacks the version.
/// For tests: the forward pass always runs the widest version the CPU has.
pub fn quantize_row_with(x: &[f32], version: i32) -> Option<(Vec<i8>, f32)> {
    let mut q = vec![0i8; x.len()];
    let mut scale = 0f32;
    // SAFETY: both buffers hold x.len() elements; the C++ side writes q[..n] and *scale.
    let ran = unsafe {
        lase_int8_quantize_row(
            x.as_ptr(),
            q.as_mut_ptr(),
            x.len() as i64,
            &mut scale,
            version,
        )
    };
    ran.then_some((q, scale))
}

pub(super) const ERROR_BUFFER: usize = 1024;

pub(super) fn message(buffer: &[u8]) -> String {
    CStr::from_bytes_until_nul(buffer)
        .map(|m| m.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown libtorch error".into())
}

/// A linear layer's weights quantised to int8 (and its float bias).
pub struct Int8Linear {
    packed: NonNull<c_void>,
    in_features: i64,
    out_features: i64,
}

// SAFETY: the handle owns the int8 weights, their scales and the bias, which forward
// passes only read; nothing else holds it, and it is freed once in Drop.
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
        self.try_forward_with(x, None, None)
    }

    /// `act(x W^T + b) + residual` for a float input `[..., in]` (`residual`: float
    /// `[..., out]`); returns float `[..., out]`. GELU (exact) and ReLU run in the pass
    /// that applies the scales, as does the residual sum, so the output is written once
    /// (on CPUs with AVX-512F; csrc/int8_linear.cpp); other activations run after it.
    /// `LASE_INT8_EPILOGUE=separate` runs them all as separate operations (for
    /// comparisons).
    pub fn try_forward_with(
        &self,
        x: &Tensor,
        act: Option<Activation>,
        residual: Option<&Tensor>,
    ) -> Result<Tensor> {
        self.forward_on(x, act, residual, int8_matmul_wanted())
    }

    /// [`Self::try_forward_with`] with the int8 product taken from `matmul`.
    fn forward_on(
        &self,
        x: &Tensor,
        act: Option<Activation>,
        residual: Option<&Tensor>,
        matmul: Int8Matmul,
    ) -> Result<Tensor> {
        let epilogue = match act {
            None => EPILOGUE_NONE,
            Some(Activation::Gelu) => EPILOGUE_GELU,
            Some(Activation::Relu) => EPILOGUE_RELU,
            // No epilogue of its own: the activation, then the residual, after the product.
            Some(other @ (Activation::GeluTanh | Activation::Silu)) => {
                let out = other.apply(&self.forward_on(x, None, None, matmul)?);
                return Ok(match residual {
                    Some(r) => out + r,
                    None => out,
                });
            }
        };
        let mut err = [0u8; ERROR_BUFFER];
        // SAFETY: as in `pack`; `self.packed` is alive for the call (freed only in Drop);
        // the residual, when given, outlives the call.
        let out = unsafe {
            lase_int8_linear_forward(
                x.as_ptr(),
                self.packed.as_ptr(),
                epilogue,
                residual.map_or(std::ptr::null(), |r| r.as_ptr()),
                fused_epilogue_wanted(),
                matmul == Int8Matmul::OneDnn,
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

    /// As [`Self::try_forward_with`], panicking on a libtorch error.
    pub fn forward_with(
        &self,
        x: &Tensor,
        act: Option<Activation>,
        residual: Option<&Tensor>,
    ) -> Tensor {
        self.try_forward_with(x, act, residual)
            .unwrap_or_else(|e| panic!("{e}"))
    }
}

// csrc/int8_linear.cpp's kEpilogue* codes.
const EPILOGUE_NONE: i32 = 0;
const EPILOGUE_GELU: i32 = 1;
const EPILOGUE_RELU: i32 = 2;

/// Whether the activation and residual run in the scales' pass (default) or as separate
/// operations after it (`LASE_INT8_EPILOGUE=separate`, for comparisons).
fn fused_epilogue_wanted() -> bool {
    static FUSED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FUSED.get_or_init(|| std::env::var("LASE_INT8_EPILOGUE").map_or(true, |v| v != "separate"))
}

/// Which kernel multiplies the int8 operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Int8Matmul {
    /// oneDNN's GEMM through libtorch's entry point to it: VNNI, AVX-512 or AVX2 kernels,
    /// whichever the CPU runs (the default).
    OneDnn,
    /// libtorch's `_int_mm`: oneDNN on CPUs with AVX512-VNNI, a scalar reference loop on
    /// every other CPU (its source gates oneDNN on `is_avx512_vnni_supported()`;
    /// `LASE_INT8_MATMUL=libtorch`, for comparisons).
    Libtorch,
}

fn int8_matmul_wanted() -> Int8Matmul {
    static MATMUL: std::sync::OnceLock<Int8Matmul> = std::sync::OnceLock::new();
    *MATMUL.get_or_init(|| match std::env::var("LASE_INT8_MATMUL").as_deref() {
        Ok("libtorch") => Int8Matmul::Libtorch,
        _ => Int8Matmul::OneDnn,
    })
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
        // 8-bit activations, 7-bit weights: ~1% relative error, never exact.
        assert!(rel < 0.03, "relative error {rel}");
        assert!(rel > 1e-5, "an int8 product cannot be exact: {rel}");
        let no_bias = Int8Linear::pack(&w, None).unwrap().forward(&x);
        let rel = f64::try_from((&no_bias - x.linear::<&Tensor>(&w, None)).norm() / exact.norm())
            .unwrap();
        assert!(rel < 0.03, "relative error without bias {rel}");
    }

    /// The quantisation written out with tensor operations: weights to +-63 per output
    /// channel, each input row to +-127 with its own scale, integer products summed
    /// exactly (in float64, far below 2^53), then both scales; the bias is the caller's to
    /// add (float64 result). Each row is quantised with csrc/int8_linear.cpp's float32
    /// arithmetic (`rint(x * (127 / amax))`, scale `amax / 127`; inverse 0 and scale 1 for
    /// an all-zero row), so that no draw of inputs can put a value on the other side of a
    /// rounding tie.
    fn reference_product(x: &Tensor, w: &Tensor) -> Tensor {
        let w_scale = w.abs().amax([1].as_slice(), true) / 63.0;
        let wq = (w / &w_scale).round().clamp(-63.0, 63.0);
        let amax = x.abs().amax([-1].as_slice(), true);
        let zero = amax.eq(0.0);
        let inverse = (amax.full_like(127.0) / &amax).masked_fill(&zero, 0.0);
        let x_scale = (&amax / 127.0).masked_fill(&zero, 1.0);
        let xq = (x * inverse).round().clamp(-127.0, 127.0);
        let sums = xq
            .to_kind(Kind::Double)
            .matmul(&wq.to_kind(Kind::Double).tr());
        sums * x_scale.to_kind(Kind::Double) * w_scale.tr().to_kind(Kind::Double)
    }

    #[test]
    fn quantises_each_row_with_its_own_scale() {
        tch::manual_seed(5);
        // Widths that are not multiples of a vector register, rows of very different
        // ranges (one row 1,000 times another), and a row of zeros.
        let w = Tensor::randn([37, 29], (Kind::Float, Device::Cpu));
        let b = Tensor::randn([37], (Kind::Float, Device::Cpu));
        let x = Tensor::randn([6, 29], (Kind::Float, Device::Cpu));
        let _ = x.get(1).g_mul_scalar_(1000.0);
        let _ = x.get(2).g_mul_scalar_(0.001);
        let _ = x.get(3).zero_();
        let q = Int8Linear::pack(&w, Some(&b)).unwrap();
        let got = q.forward(&x);
        let product = reference_product(&x, &w);
        let bias = b.to_kind(Kind::Double);
        let want = &product + &bias;
        // Float32 dequantisation and bias: each output within 1e-5 of the magnitudes it
        // sums (about 80 units of float32 rounding; one quantisation level off moves an
        // output by about 1 / 127 of them).
        let magnitude = product.abs() + bias.abs() + 1e-6;
        let worst =
            f64::try_from(((got.to_kind(Kind::Double) - &want).abs() / magnitude).max()).unwrap();
        assert!(
            worst < 1e-5,
            "worst difference to the reference, relative to its terms: {worst}"
        );
        // The zero row gives the bias exactly.
        assert!(
            got.get(3).equal(&b),
            "{:?}",
            Vec::<f32>::try_from(got.get(3)).unwrap()
        );
    }

    /// oneDNN's GEMM (the default) and libtorch's `_int_mm` (its own reference loop on an
    /// AVX2-only CPU) give the same outputs to the bit, on operands at int8's
    /// extremes: every activation at +-127 and every weight at +-63, signs aligned so that
    /// each pair of products reaches the largest sum an x86 int16 pair (vpmaddubsw, u8 x s8)
    /// can hold with 7-bit weights, 255 x 63 x 2 = 32130, and its negative; plus random
    /// operands. Both equal the exact integer reference.
    #[test]
    fn onednn_and_libtorch_products_agree_at_the_extremes() {
        tch::manual_seed(13);
        let (rows, width_in, width_out) = (9i64, 384i64, 40i64);
        let signs =
            Tensor::randint(2, [width_out, width_in], (Kind::Float, Device::Cpu)) * 2.0 - 1.0;
        let w = &signs * 0.5;
        // Rows 0-3 copy weight rows 0-3's signs (sums +63 x 127 x 384), rows 4-7 their
        // opposites (the negative sums), row 8 is random.
        let aligned = signs.narrow(0, 0, 4) * 3.0;
        let opposed = -signs.narrow(0, 0, 4) * 3.0;
        let random = Tensor::randn([1, width_in], (Kind::Float, Device::Cpu));
        let x = Tensor::cat(&[&aligned, &opposed, &random], 0);
        assert_eq!(x.size()[0], rows);
        let q = Int8Linear::pack(&w, None).unwrap();
        let onednn = q.forward_on(&x, None, None, Int8Matmul::OneDnn).unwrap();
        let libtorch = q.forward_on(&x, None, None, Int8Matmul::Libtorch).unwrap();
        assert!(
            onednn.equal(&libtorch),
            "the two kernels differ: {}",
            f64::try_from((&onednn - &libtorch).abs().max()).unwrap()
        );
        let want = reference_product(&x, &w);
        let worst = f64::try_from(
            ((onednn.to_kind(Kind::Double) - &want).abs() / (want.abs() + 1e-6)).max(),
        )
        .unwrap();
        assert!(
            worst < 1e-6,
            "worst relative difference to the exact sums: {worst}"
        );
        // The aligned rows reach the extreme sums (127 x 63 x 384 in units of both scales).
        let top = f64::try_from(want.get(0).get(0)).unwrap();
        assert!(top > 0.0 && f64::try_from(want.get(4).get(0)).unwrap() < 0.0);
    }

    #[test]
    fn the_row_quantisers_agree_byte_for_byte() {
        tch::manual_seed(9);
        let mut checked = 0;
        // Lengths around both vector widths (8 and 16 floats, 32 per AVX2 step), rows
        // with exact ties (k + 0.5 after scaling), zeros, one huge value.
        for n in [1usize, 7, 8, 15, 16, 17, 31, 32, 33, 64, 383, 384, 1536] {
            let mut rows: Vec<Vec<f32>> = (0..4)
                .map(|_| {
                    Vec::<f32>::try_from(Tensor::randn([n as i64], (Kind::Float, Device::Cpu)))
                        .unwrap()
                })
                .collect();
            rows.push(vec![0.0; n]);
            rows.push(
                (0..n)
                    .map(|j| (j as f32 % 255.0) - 127.0 + 0.5 * (j % 2) as f32)
                    .collect(),
            );
            let mut loud = rows[0].clone();
            loud[n / 2] = 1e30;
            rows.push(loud);
            for x in &rows {
                let plain = quantize_row_with(x, 0).expect("the plain version runs anywhere");
                assert!(plain.0.iter().all(|&v| (-127..=127).contains(&v)));
                for version in [1, 2] {
                    if let Some(fast) = quantize_row_with(x, version) {
                        assert_eq!(fast, plain, "version {version}, {n} values");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 0 || !is_x86_feature_detected!("avx2"));
    }

    #[test]
    fn a_row_gives_the_same_output_in_any_batch() {
        tch::manual_seed(7);
        let w = Tensor::randn([64, 48], (Kind::Float, Device::Cpu));
        let q = Int8Linear::pack(&w, None).unwrap();
        let row = Tensor::randn([1, 48], (Kind::Float, Device::Cpu));
        let alone = q.forward(&row);
        // The same row beside rows with a 100x larger range (as a batch's long sentence
        // or an outlier token would be), first and last, in batches of several sizes.
        for others in [1i64, 7, 100] {
            let loud = Tensor::randn([others, 48], (Kind::Float, Device::Cpu)) * 100.0;
            let batch = Tensor::cat(&[&loud, &row, &loud], 0);
            let out = q.forward(&batch);
            assert!(
                out.get(others).unsqueeze(0).equal(&alone),
                "a row's output changed with {others} louder rows on each side"
            );
        }
    }

    /// GELU and ReLU in the rescaling pass, and the residual sum, against the same
    /// product followed by libtorch's operators: the activation to float32's accuracy
    /// (GELU's erf to 1.5e-7 absolute, Abramowitz & Stegun 7.1.26, as oneDNN's gelu_erf),
    /// over outputs reaching past +-3 (asserted: both of GELU's tails) at widths that are not
    /// multiples of 16; tanh-GELU and SiLU (no epilogue of their own) exactly.
    #[test]
    fn the_epilogue_matches_separate_operations() {
        tch::manual_seed(11);
        for (rows, width_in, width_out) in [(5i64, 32i64, 48i64), (3, 29, 37), (64, 16, 1536)] {
            let w = Tensor::randn([width_out, width_in], (Kind::Float, Device::Cpu));
            let b = Tensor::randn([width_out], (Kind::Float, Device::Cpu));
            // Rows with small and large ranges, so the outputs span both erf tails.
            let x = Tensor::randn([rows, width_in], (Kind::Float, Device::Cpu))
                * Tensor::linspace(0.01, 1.5, rows, (Kind::Float, Device::Cpu)).unsqueeze(1);
            let q = Int8Linear::pack(&w, Some(&b)).unwrap();
            let plain = q.forward(&x);
            let range = f64::try_from(plain.abs().max()).unwrap();
            assert!(range > 3.0, "outputs reach GELU's saturated tails: {range}");
            let residual = Tensor::randn([rows, width_out], (Kind::Float, Device::Cpu));
            let cases = [
                (Some(Activation::Gelu), None, 1e-6),
                (Some(Activation::Relu), None, 0.0),
                (None, Some(&residual), 1e-6),
                (Some(Activation::Gelu), Some(&residual), 1e-6),
                (Some(Activation::GeluTanh), Some(&residual), 0.0),
                (Some(Activation::Silu), None, 0.0),
            ];
            for (act, res, tol) in cases {
                let got = q.forward_with(&x, act, res);
                let mut want = act.map_or_else(|| plain.shallow_clone(), |a| a.apply(&plain));
                if let Some(r) = res {
                    want = &want + r;
                }
                let worst = f64::try_from((&got - &want).abs().max()).unwrap();
                assert!(
                    worst <= tol * (1.0 + range),
                    "{act:?} residual {} [{rows}, {width_out}]: worst difference {worst}",
                    res.is_some()
                );
            }
            // The epilogue is not a no-op: GELU changes the negative outputs.
            let gelu = q.forward_with(&x, Some(Activation::Gelu), None);
            assert!(!gelu.allclose(&plain, 1e-3, 1e-3, false));
        }
        // Against exact GELU in float64 (an erf of its own below), not libtorch's: the
        // products of a [64, 1536] layer (outputs with a standard deviation of about 3).
        let w = Tensor::randn([1536, 16], (Kind::Float, Device::Cpu));
        let x = Tensor::randn([64, 16], (Kind::Float, Device::Cpu)) * 0.8;
        let q = Int8Linear::pack(&w, None).unwrap();
        let plain = Vec::<f32>::try_from(q.forward(&x).view([-1])).unwrap();
        let got = Vec::<f32>::try_from(q.forward_with(&x, Some(Activation::Gelu), None).view([-1]))
            .unwrap();
        for (&v, &g) in plain.iter().zip(&got) {
            let v = f64::from(v);
            let want = 0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2));
            assert!(
                (f64::from(g) - want).abs() <= 2e-7 * (1.0 + v.abs()),
                "GELU({v}) = {g}, exact {want}"
            );
        }
    }

    /// erf to about 1e-13: its Maclaurin series for |x| < 3, the continued fraction of
    /// erfc beyond.
    fn erf(x: f64) -> f64 {
        if x.abs() < 3.0 {
            // erf x = 2/sqrt(pi) sum_n (-1)^n x^(2n+1) / (n! (2n+1))
            let (mut term, mut sum) = (x, x);
            for n in 1..200 {
                term *= -x * x / n as f64;
                sum += term / (2 * n + 1) as f64;
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // erfc x = exp(-x^2)/(x sqrt(pi)) * 1/(1 + 1/(2x^2)/(1 + 2/(2x^2)/(1 + ...)))
            let a = x.abs();
            let mut f = 0.0;
            for k in (1..60).rev() {
                f = (k as f64 / 2.0) / (a + f);
            }
            let erfc = (-a * a).exp() / std::f64::consts::PI.sqrt() / (a + f);
            (1.0 - erfc).copysign(x)
        }
    }

    #[test]
    fn a_residual_of_the_wrong_shape_is_an_error() {
        let w = Tensor::randn([8, 4], (Kind::Float, Device::Cpu));
        let q = Int8Linear::pack(&w, None).unwrap();
        let x = Tensor::randn([3, 4], (Kind::Float, Device::Cpu));
        let err = q
            .try_forward_with(
                &x,
                None,
                Some(&Tensor::zeros([3, 7], (Kind::Float, Device::Cpu))),
            )
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("residual must have the output's sizes"),
            "{err}"
        );
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
        let err =
            Int8Linear::pack(&Tensor::zeros([8, 0], (Kind::Float, Device::Cpu)), None).unwrap_err();
        assert!(err.to_string().contains("non-empty [out, in]"), "{err}");
    }
}
