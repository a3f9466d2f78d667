// Int8 linear layers for src/model/int8.rs: weights quantised once per output channel,
// activations quantised per row (per token) at each call, the product in int8 with int32
// sums by oneDNN's s8 x s8 -> s32 GEMM (libtorch's own entry point to it; see
// `int8_product`: VNNI where the CPU has it, AVX2 or AVX-512 pair sums elsewhere), the
// scales applied after it in float, in one pass with the layer's activation (exact GELU
// or ReLU) and residual sum where the CPU has AVX-512F.
//
// Why per row and not per call (torch.ao's dynamic Linear, FBGEMM's
// quantized::linear_dynamic, ONNX Runtime's dynamic int8): one scale per call comes from
// the whole input's range, so every token's precision depends on the largest activation of
// any token in the batch, padding included, and a sentence's vector depends on the
// sentences it shares a batch with. With one scale per row, a row's output depends on that
// row and the weights only, and an outlier token costs precision to itself only (a whole
// model's vector can still move at int8's noise level with its batch: float32 attention's
// last bits change with the padded length and can tip a rounding in a later layer). Measured on all-MiniLM-L6-v2
// (bench/embed_speed.py, 4,000 sentences, cosine to sentence-transformers' float32): per
// row worst 0.9676 mean 0.9956; one scale per call (this file before) 0.9589 / 0.9918
// (docs/benchmarks.md, "int8 with one scale per token").
//
// Every function catches C++ exceptions and reports them through `err` (a caller-owned
// buffer); none lets an exception cross into Rust.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "torch_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using lase_ops::report;

// GCC 12's AVX-512 headers start masked intrinsics from _mm512_undefined_ps(), which its
// own -Wmaybe-uninitialized and -Wuninitialized then report at inlined calls: false
// positives.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace {

// Largest weight magnitude: 7 bits. x86 CPUs without VNNI multiply u8 x s8 with
// vpmaddubsw, which adds two products into a saturating int16; oneDNN feeds it the s8
// activations shifted to u8 (up to 255), so with 8-bit weights a pair can reach
// 2 x 255 x 127 = 64770 and saturate (measured: `_int_mm` with random 8-bit operands is
// off by up to 118,136 under ONEDNN_MAX_CPU_ISA=AVX2 or AVX512_CORE, exact with VNNI).
// With |w| <= 63 a pair is at most 32130 < 32767: exact on every CPU.
constexpr float kWeightLevels = 63.0f;
// Activations use the whole symmetric int8 range.
constexpr float kActivationLevels = 127.0f;

}  // namespace

namespace at::native {
// libtorch's oneDNN int8 matmul (aten/src/ATen/native/mkldnn/Matmul.cpp: oneDNN's
// gemm_s8s8s32 for operands contiguous along one dimension), exported by libtorch_cpu but
// not among its installed headers.
TORCH_API void mkldnn_matmul_i8i8i32(const at::Tensor& mat1, const at::Tensor& mat2,
                                     const at::Tensor& result);
}  // namespace at::native

namespace {

// The int8 product [m, k] x [k, n] with exact int32 sums. libtorch's `_int_mm` calls oneDNN
// only where `at::cpu::is_avx512_vnni_supported()` (aten/src/ATen/native/LinearAlgebra.cpp,
// _int_mm_out_cpu) and runs a scalar reference loop elsewhere: on an AVX2-only EPYC the
// encode's threads sat inside at::native::_int_mm_out_cpu, no oneDNN frame, 7 sentences/s
// against 299 through oneDNN (docs/benchmarks.md, "int8 on an AVX2-only EPYC"); CPUs with
// AVX-VNNI but no AVX512-VNNI take the same loop, while oneDNN's GEMM has int8 kernels
// for CPUs without VNNI too (vpmaddubsw pair sums: exact with this file's 7-bit weights,
// kWeightLevels). So the product goes to oneDNN directly; `onednn` = false keeps `_int_mm`
// (LASE_INT8_MATMUL=libtorch, for comparisons), as does a libtorch built without oneDNN.
at::Tensor int8_product(const at::Tensor& xq, const at::Tensor& weight_t, bool onednn) {
  if (!onednn || !at::hasMKLDNN()) {
    return at::_int_mm(xq, weight_t);
  }
  at::Tensor out = at::empty({xq.size(0), weight_t.size(1)}, xq.options().dtype(at::kInt));
  at::native::mkldnn_matmul_i8i8i32(xq, weight_t, out);
  return out;
}

struct Int8Weights {
  at::Tensor weight_t;  // int8 [in, out], the transpose of a contiguous [out, in]
  at::Tensor scales;    // float [out]
  std::optional<at::Tensor> bias;  // float [out]
  int64_t in_features;
  int64_t out_features;
};

// One row of activations to int8 with its own symmetric scale (max |x| / 127; 1 for an
// all-zero row), rounding half to even as torch.round does. Three versions of the same
// arithmetic: AVX-512F and AVX2 by hand (the compiler's own vectorisation of the
// float -> int8 conversion packed 4 lanes at a time and took 12% of an int8 encode), and
// plain C++ for other CPUs. All three give the same bytes: the scale is the same float
// division, and each element is rint(x * inverse) saturated to [-127, 127].
float row_inverse(float amax, float* scale) {
  *scale = amax > 0.0f ? amax / kActivationLevels : 1.0f;
  return amax > 0.0f ? kActivationLevels / amax : 0.0f;
}

// One value: rint(x * inverse) saturated to [-127, 127] (NaN gives -127, as the vector
// versions' conversions do).
inline int8_t quantize_value(float x, float inverse) {
  const float r = std::rint(x * inverse);
  return static_cast<int8_t>(std::min(kActivationLevels, std::max(-kActivationLevels, r)));
}

void quantize_row_plain(const float* x, int8_t* q, int64_t n, float* scale) {
  float amax = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    amax = std::max(amax, std::fabs(x[j]));
  }
  const float inverse = row_inverse(amax, scale);
  for (int64_t j = 0; j < n; ++j) {
    q[j] = quantize_value(x[j], inverse);
  }
}

__attribute__((target("avx512f"))) void quantize_row_avx512(const float* x, int8_t* q,
                                                            int64_t n, float* scale) {
  __m512 vmax = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_loadu_ps(x + j)));
  }
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - j)) - 1u);
  if (j < n) {
    vmax = _mm512_max_ps(vmax, _mm512_abs_ps(_mm512_maskz_loadu_ps(tail, x + j)));
  }
  const float inverse = row_inverse(_mm512_reduce_max_ps(vmax), scale);
  const __m512 vinv = _mm512_set1_ps(inverse);
  const __m512i lo = _mm512_set1_epi32(-127);
  // _mm512_cvtps_epi32 rounds with the current mode: to nearest, ties to even (as rint).
  for (j = 0; j + 16 <= n; j += 16) {
    const __m512i i = _mm512_max_epi32(
        lo, _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + j), vinv)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + j), _mm512_cvtsepi32_epi8(i));
  }
  if (j < n) {
    const __m512i i = _mm512_max_epi32(
        lo, _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + j), vinv)));
    _mm512_mask_cvtsepi32_storeu_epi8(q + j, tail, i);
  }
}

__attribute__((target("avx2"))) void quantize_row_avx2(const float* x, int8_t* q, int64_t n,
                                                       float* scale) {
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 vmax = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    vmax = _mm256_max_ps(vmax, _mm256_and_ps(_mm256_loadu_ps(x + j), sign));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, vmax);
  float amax = 0.0f;
  for (float v : lanes) {
    amax = std::max(amax, v);
  }
  for (int64_t t = j; t < n; ++t) {
    amax = std::max(amax, std::fabs(x[t]));
  }
  const float inverse = row_inverse(amax, scale);
  const __m256 vinv = _mm256_set1_ps(inverse);
  const __m256i lo = _mm256_set1_epi8(-127);
  // packs saturate to [-128, 127]; 4 x 8 ints -> 32 bytes in lane order 0 2 1 3 (per
  // 4-byte group), put back by the permute.
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (j = 0; j + 32 <= n; j += 32) {
    const __m256i a = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j), vinv));
    const __m256i b = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8), vinv));
    const __m256i c = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j + 16), vinv));
    const __m256i d = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j + 24), vinv));
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j),
                        _mm256_max_epi8(lo, _mm256_permutevar8x32_epi32(bytes, order)));
  }
  for (; j < n; ++j) {
    q[j] = quantize_value(x[j], inverse);
  }
}

using QuantizeRow = void (*)(const float*, int8_t*, int64_t, float*);

bool has_avx512f() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

QuantizeRow pick_quantize_row() {
  if (has_avx512f()) {
    return quantize_row_avx512;
  }
  if (__builtin_cpu_supports("avx2")) {
    return quantize_row_avx2;
  }
  return quantize_row_plain;
}

// What follows the product on each output value, in the same pass as the scales (so the
// layer's output is written once, while its rows are in cache): `kEpilogueGelu` is exact
// GELU, x Phi(x) (BERT's "gelu"), `kEpilogueRelu` max(x, 0); a residual, when given, is
// added after the activation. Without AVX-512F the activation and the residual run as
// libtorch operations on the whole output after the scales (what the Rust side did before
// the epilogue existed).
constexpr int kEpilogueNone = 0;
constexpr int kEpilogueGelu = 1;
constexpr int kEpilogueRelu = 2;

// One row of int32 sums back to float: sum x row_scale x channel_scale (+ bias).
__attribute__((target_clones("avx512f", "avx2", "default"))) void dequantize_row(
    const int32_t* acc, float row_scale, const float* channel_scales, const float* bias,
    float* out, int64_t n) {
  if (bias != nullptr) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      out[j] = static_cast<float>(acc[j]) * (row_scale * channel_scales[j]) + bias[j];
    }
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      out[j] = static_cast<float>(acc[j]) * (row_scale * channel_scales[j]);
    }
  }
}

// exp(v) for v <= 0 (0 below -87): Cephes' expf, e^r = 1 + r + r^2 P(r) on
// r in [-ln2/2, ln2/2] after v = n ln2 + r, then 2^n by scalef.
__attribute__((target("avx512f"))) inline __m512 exp_nonpositive_avx512(__m512 v) {
  v = _mm512_max_ps(v, _mm512_set1_ps(-87.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), v);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// Exact GELU, 0.5 x (1 + erf(x / sqrt 2)), with erf by Abramowitz & Stegun 7.1.26
// (absolute error <= 1.5e-7): the approximation oneDNN's gelu_erf kernel uses, which is
// what libtorch's gelu ran on these layers before (its eltwise_gelu_erf primitive).
__attribute__((target("avx512f"))) inline __m512 gelu_avx512(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
  const __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), z, one));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  p = _mm512_mul_ps(p, t);
  const __m512 erf_abs =
      _mm512_fnmadd_ps(p, exp_nonpositive_avx512(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), z), z)), one);
  // erf(x) = sign(x) erf(|x|)
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
  const __m512 erf = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(erf_abs), sign));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(one, erf));
}

// One row of int32 sums to float with the scales, the bias, the epilogue's activation and
// the residual, 16 values at a time.
__attribute__((target("avx512f"))) void dequantize_row_epilogue_avx512(
    const int32_t* acc, float row_scale, const float* channel_scales, const float* bias,
    const float* residual, int epilogue, float* out, int64_t n) {
  const __m512 rs = _mm512_set1_ps(row_scale);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m =
        j + 16 <= n ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - j)) - 1u);
    const __m512 a = _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, acc + j));
    const __m512 s = _mm512_mul_ps(rs, _mm512_maskz_loadu_ps(m, channel_scales + j));
    __m512 y = bias != nullptr ? _mm512_fmadd_ps(a, s, _mm512_maskz_loadu_ps(m, bias + j))
                               : _mm512_mul_ps(a, s);
    if (epilogue == kEpilogueGelu) {
      y = gelu_avx512(y);
    } else if (epilogue == kEpilogueRelu) {
      y = _mm512_max_ps(y, _mm512_setzero_ps());
    }
    if (residual != nullptr) {
      y = _mm512_add_ps(y, _mm512_maskz_loadu_ps(m, residual + j));
    }
    _mm512_mask_storeu_ps(out + j, m, y);
  }
}

// Rows per task of libtorch's intra-op thread pool: a row is 384-1536 values, so a few
// dozen rows make a task worth its scheduling.
constexpr int64_t kRowGrain = 32;

}  // namespace

extern "C" {

// Quantises a float [out, in] weight to int8, symmetric per output channel with 7-bit
// values (scale = max |w_row| / 63), and keeps it with its optional float bias. Returns an
// owned handle, or null with `err` set.
void* lase_int8_linear_pack(const at::Tensor* weight, const at::Tensor* bias, char* err,
                            size_t err_len) {
  try {
    if (weight->dim() != 2 || weight->size(0) == 0 || weight->size(1) == 0) {
      throw std::invalid_argument("weight must be a non-empty [out, in], got sizes " +
                                  c10::str(weight->sizes()));
    }
    at::Tensor w = weight->to(at::kFloat).contiguous();
    at::Tensor scales = w.abs().amax({1}).clamp_min(1e-12).div(kWeightLevels);
    at::Tensor q = w.div(scales.unsqueeze(1))
                       .round()
                       .clamp(-kWeightLevels, kWeightLevels)
                       .to(at::kChar)
                       .contiguous();
    auto* packed = new Int8Weights{q.t(), scales.contiguous(), std::nullopt, w.size(1),
                                   w.size(0)};
    if (bias != nullptr) {
      packed->bias = bias->to(at::kFloat).contiguous();
    }
    return packed;
  } catch (const std::exception& e) {
    report(e, err, err_len);
    return nullptr;
  }
}

// act(x W^T + b) (+ residual) for a float input [..., in], returned as float [..., out]:
// each row of the input quantised to int8 with its own scale, multiplied with the int8
// weights in int32, scaled back, then `epilogue`'s activation (kEpilogue*) and the
// residual (float [..., out], or null) in the same pass where the CPU has AVX-512F.
// `fuse` = false runs the activation and the residual as separate libtorch operations
// after the scales (for comparisons); `onednn` = false multiplies with libtorch's `_int_mm`
// instead of oneDNN's GEMM (`int8_product`). Returns an owned tensor, or null with `err` set.
at::Tensor* lase_int8_linear_forward(const at::Tensor* input, const void* handle, int epilogue,
                                     const at::Tensor* residual, bool fuse, bool onednn,
                                     char* err, size_t err_len) {
  try {
    const auto* packed = static_cast<const Int8Weights*>(handle);
    if (input->dim() < 1 || input->size(-1) != packed->in_features) {
      throw std::invalid_argument("input's last dimension must be " +
                                  std::to_string(packed->in_features) + ", got sizes " +
                                  c10::str(input->sizes()));
    }
    const at::Tensor x = input->to(at::kFloat).contiguous();
    const int64_t k = packed->in_features;
    const int64_t n = packed->out_features;
    const int64_t m = x.numel() / k;
    std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end());
    out_sizes.back() = n;
    if (epilogue != kEpilogueNone && epilogue != kEpilogueGelu && epilogue != kEpilogueRelu) {
      throw std::invalid_argument("unknown epilogue " + std::to_string(epilogue));
    }
    std::optional<at::Tensor> res;
    if (residual != nullptr) {
      if (residual->sizes() != at::IntArrayRef(out_sizes)) {
        throw std::invalid_argument("residual must have the output's sizes " +
                                    c10::str(at::IntArrayRef(out_sizes)) + ", got " +
                                    c10::str(residual->sizes()));
      }
      res = residual->to(at::kFloat).contiguous();
    }
    if (m == 0) {
      return new at::Tensor(at::empty(out_sizes, x.options()));
    }
    at::Tensor xq = at::empty({m, k}, x.options().dtype(at::kChar));
    at::Tensor row_scales = at::empty({m}, x.options());
    const float* xp = x.data_ptr<float>();
    int8_t* qp = xq.data_ptr<int8_t>();
    float* sp = row_scales.data_ptr<float>();
    static const QuantizeRow quantize_row = pick_quantize_row();
    at::parallel_for(0, m, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        quantize_row(xp + i * k, qp + i * k, k, sp + i);
      }
    });
    const at::Tensor acc = int8_product(xq, packed->weight_t, onednn).contiguous();
    at::Tensor out = at::empty({m, n}, x.options());
    const int32_t* ap = acc.data_ptr<int32_t>();
    const float* cp = packed->scales.data_ptr<float>();
    const float* bp = packed->bias ? packed->bias->data_ptr<float>() : nullptr;
    float* op = out.data_ptr<float>();
    static const bool avx512 = has_avx512f();
    if (fuse && avx512) {
      const float* rp = res ? res->data_ptr<float>() : nullptr;
      at::parallel_for(0, m, kRowGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          dequantize_row_epilogue_avx512(ap + i * n, sp[i], cp, bp,
                                         rp != nullptr ? rp + i * n : nullptr, epilogue,
                                         op + i * n, n);
        }
      });
      return new at::Tensor(out.view(out_sizes));
    }
    at::parallel_for(0, m, kRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        dequantize_row(ap + i * n, sp[i], cp, bp, op + i * n, n);
      }
    });
    if (epilogue == kEpilogueGelu) {
      out = at::gelu(out);
    } else if (epilogue == kEpilogueRelu) {
      out = at::relu(out);
    }
    if (res) {
      out = out + res->view({m, n});
    }
    return new at::Tensor(out.view(out_sizes));
  } catch (const std::exception& e) {
    report(e, err, err_len);
    return nullptr;
  }
}

// One row through one version of the row quantiser (0 plain, 1 AVX2, 2 AVX-512F), for
// the tests that check the versions agree byte for byte. Returns false where this CPU
// lacks the version's instructions.
bool lase_int8_quantize_row(const float* x, int8_t* q, int64_t n, float* scale, int version) {
  __builtin_cpu_init();
  switch (version) {
    case 0:
      quantize_row_plain(x, q, n, scale);
      return true;
    case 1:
      if (!__builtin_cpu_supports("avx2")) return false;
      quantize_row_avx2(x, q, n, scale);
      return true;
    case 2:
      if (!__builtin_cpu_supports("avx512f")) return false;
      quantize_row_avx512(x, q, n, scale);
      return true;
    default:
      return false;
  }
}

void lase_int8_linear_free(void* handle) { delete static_cast<Int8Weights*>(handle); }

}  // extern "C"
