// Dynamic int8 linear layers through libtorch's own quantized kernels (FBGEMM on x86,
// the kernels behind torch.ao.quantization.quantize_dynamic), for src/model/int8.rs.
// tch binds ATen's native functions only; the quantized linear operators are registered
// with the dispatcher (quantized::linear_prepack, quantized::linear_dynamic), so they are
// called here, boxed, by name. Every function catches C++ exceptions and reports them
// through `err` (a caller-owned buffer); none lets an exception cross into Rust.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include "torch_ops.h"

#include <cstring>
#include <exception>

using lase_ops::op;
using lase_ops::report;

extern "C" {

// Quantises a float [out, in] weight to int8 storage, symmetric per output channel with
// 7-bit values (scale = max |w_row| / 63, zero point 0, so |q| <= 63), and packs it with
// its optional float bias for the CPU's quantized engine. Why 63 and not 127: x86's int8
// kernels (AVX2 / AVX-512 vpmaddubsw) add two u8 x s8 products into a saturating int16;
// with 8-bit inputs (up to 255) and 7-bit weights the pair is at most 2 x 255 x 63 =
// 32130 < 32767, so no sum can saturate on any CPU. Returns an owned handle, or null with
// `err` set.
void* lase_int8_linear_pack(const at::Tensor* weight, const at::Tensor* bias, char* err,
                            size_t err_len) {
  try {
    at::Tensor w = weight->to(at::kFloat).contiguous();
    at::Tensor scales = w.abs().amax({1}).clamp_min(1e-12).div(63.0).to(at::kDouble);
    at::Tensor zero_points = at::zeros({w.size(0)}, at::kLong);
    at::Tensor qw = at::quantize_per_channel(w, scales, zero_points, 0, at::kQInt8);
    torch::jit::Stack stack;
    stack.emplace_back(qw);
    if (bias != nullptr) {
      stack.emplace_back(bias->to(at::kFloat).contiguous());
    } else {
      stack.emplace_back(c10::IValue());
    }
    static const c10::OperatorHandle prepack = op("quantized::linear_prepack");
    prepack.callBoxed(&stack);
    return new c10::IValue(std::move(stack.at(0)));
  } catch (const std::exception& e) {
    report(e, err, err_len);
    return nullptr;
  }
}

// x W^T + b for a float input [..., in]: the input is quantised to uint8 per call from
// its own range (all 8 bits: reduce_range = false), multiplied in int8 with int32 sums,
// and returned as float [..., out]. PyTorch's dynamic Linear instead keeps 8-bit weights
// and passes reduce_range = true on x86 (7-bit inputs) to avoid the same saturation; the
// activations carry the outliers, so their bit is worth more: all-MiniLM-L6-v2 on 400
// FLORES sentences, cosine to float32 (AVX2-only EPYC): 7-bit inputs / 8-bit weights
// worst 0.929 mean 0.977; 8-bit inputs / 7-bit weights worst 0.984 mean 0.992 (both
// 8-bit: 0.981 / 0.992 there, but 11% relative error on Gaussian inputs, whose pair sums
// do saturate). Returns an owned tensor, or null with `err` set.
at::Tensor* lase_int8_linear_forward(const at::Tensor* input, const void* packed,
                                     char* err, size_t err_len) {
  try {
    torch::jit::Stack stack;
    stack.emplace_back(input->contiguous());
    stack.emplace_back(*static_cast<const c10::IValue*>(packed));
    stack.emplace_back(false);
    static const c10::OperatorHandle linear_dynamic = op("quantized::linear_dynamic");
    linear_dynamic.callBoxed(&stack);
    return new at::Tensor(stack.at(0).toTensor());
  } catch (const std::exception& e) {
    report(e, err, err_len);
    return nullptr;
  }
}

void lase_int8_linear_free(void* packed) { delete static_cast<c10::IValue*>(packed); }

}  // extern "C"
