// What csrc/int8_linear.cpp and csrc/packed_linear.cpp share: reporting a C++ exception
// into the caller's error buffer, and finding a libtorch operator registered with the
// dispatcher by name.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstring>
#include <exception>

namespace lase_ops {

inline void report(const std::exception& e, char* err, size_t err_len) {
  if (err != nullptr && err_len > 0) {
    std::strncpy(err, e.what(), err_len - 1);
    err[err_len - 1] = '\0';
  }
}

inline c10::OperatorHandle op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
}

}  // namespace lase_ops
