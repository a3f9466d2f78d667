// bfloat16 linear layers with their weight packed once (oneDNN's blocked layout for the
// CPU's AMX / AVX-512 kernels) instead of on every call, for src/model/packed_linear.rs.
// libtorch's `linear` reorders the weight for oneDNN on each product; the packed path is
// the one torch.compile's CPU freezing uses: mkldnn::_reorder_linear_weight once, then
// mkldnn::_linear_pointwise per call. Both are registered with the dispatcher, not ATen
// native functions, so tch does not bind them: they are called here, boxed, by name.
// Every function catches C++ exceptions and reports them through `err` (a caller-owned
// buffer); none lets an exception cross into Rust.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include "torch_ops.h"

#include <cstring>
#include <exception>
#include <stdexcept>

using lase_ops::op;
using lase_ops::report;

extern "C" {

// Packs a bfloat16 [out, in] weight for products with about `rows` input rows (a hint
// for the blocking; any number of rows works). Returns an owned tensor, or null with
// `err` set (e.g. on a CPU without the bfloat16 instructions oneDNN needs).
at::Tensor* lase_packed_linear_pack(const at::Tensor* weight, int64_t rows, char* err,
                                    size_t err_len) {
  try {
    torch::jit::Stack stack;
    stack.emplace_back(weight->contiguous());
    stack.emplace_back(rows);
    static const c10::OperatorHandle reorder = op("mkldnn::_reorder_linear_weight");
    reorder.callBoxed(&stack);
    return new at::Tensor(stack.at(0).toTensor());
  } catch (const std::exception& e) {
    report(e, err, err_len);
    return nullptr;
  } catch (...) {
    report(std::runtime_error("unknown C++ exception"), err, err_len);
    return nullptr;
  }
}

// act(x W^T + b) for a bfloat16 input [..., in] with a weight packed above and an
// optional bfloat16 bias [out], the activation fused into the product: `attr` is "none",
// "gelu" (with `algorithm` "none" = exact or "tanh"), "relu" or "swish"; `algorithm` may
// be null. The rows are padded with zeros up to a multiple of `row_bucket` (1: none) and
// the padding's outputs dropped: oneDNN builds (JIT-compiles) a new primitive for every
// new row count, milliseconds each, and unpadded forward passes have as many row counts
// as passes. Returns an owned [..., out] tensor, or null with `err` set.
at::Tensor* lase_packed_linear_forward(const at::Tensor* input, const at::Tensor* packed,
                                       const at::Tensor* bias, int64_t out_features,
                                       const char* attr, const char* algorithm,
                                       int64_t row_bucket, char* err, size_t err_len) {
  try {
    const int64_t in_features = input->size(-1);
    std::vector<int64_t> shape = input->sizes().vec();
    shape.back() = out_features;
    at::Tensor rows = input->reshape({-1, in_features}).contiguous();
    const int64_t n = rows.size(0);
    const int64_t bucket = row_bucket > 1 ? row_bucket : 1;
    const int64_t padded = (n + bucket - 1) / bucket * bucket;
    if (padded != n) {
      rows = at::constant_pad_nd(rows, {0, 0, 0, padded - n});
    }
    torch::jit::Stack stack;
    stack.emplace_back(rows);
    stack.emplace_back(*packed);
    if (bias != nullptr) {
      stack.emplace_back(*bias);
    } else {
      stack.emplace_back(c10::IValue());
    }
    stack.emplace_back(std::string(attr));
    stack.emplace_back(c10::List<std::optional<at::Scalar>>());
    if (algorithm != nullptr) {
      stack.emplace_back(std::string(algorithm));
    } else {
      stack.emplace_back(c10::IValue());
    }
    static const c10::OperatorHandle linear = op("mkldnn::_linear_pointwise");
    linear.callBoxed(&stack);
    // The first n rows of a contiguous [padded, out] tensor: contiguous, no copy.
    return new at::Tensor(stack.at(0).toTensor().narrow(0, 0, n).view(shape));
  } catch (const std::exception& e) {
    report(e, err, err_len);
    return nullptr;
  } catch (...) {
    report(std::runtime_error("unknown C++ exception"), err, err_len);
    return nullptr;
  }
}

}  // extern "C"
