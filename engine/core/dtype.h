// Element types of tensors. The set follows the ONNX TensorProto types the engine supports;
// kF64 exists so files that carry doubles load and report a clear "unsupported dtype" at
// kernel time instead of failing to parse.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "engine/core/half.h"

namespace xnn {

enum class DType : uint8_t {
  kUnknown = 0,
  kF32 = 1,
  kF16 = 2,
  kI8 = 3,
  kU8 = 4,
  kI32 = 5,
  kI64 = 6,
  kBool = 7,
  kF64 = 8,
};

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);            // "f32", "i64", ...
DType dtype_from_name(std::string_view name);    // kUnknown if not a name
bool is_float(DType t);                          // f16, f32, f64
bool is_integer(DType t);                        // i8, u8, i32, i64

// Calls fn.template operator()<T>() with T the C++ type for `t`. Types: float, Half, int8_t,
// uint8_t, int32_t, int64_t, bool, double. Throws for kUnknown.
template <typename Fn>
decltype(auto) dispatch_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32: return fn.template operator()<float>();
    case DType::kF16: return fn.template operator()<Half>();
    case DType::kI8: return fn.template operator()<int8_t>();
    case DType::kU8: return fn.template operator()<uint8_t>();
    case DType::kI32: return fn.template operator()<int32_t>();
    case DType::kI64: return fn.template operator()<int64_t>();
    case DType::kBool: return fn.template operator()<bool>();
    case DType::kF64: return fn.template operator()<double>();
    default: break;
  }
  throw Error("unsupported dtype " + std::string(dtype_name(t)));
}

template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kF32; }
template <> constexpr DType dtype_of<Half>() { return DType::kF16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::kI8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kU8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kI32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kI64; }
template <> constexpr DType dtype_of<bool>() { return DType::kBool; }
template <> constexpr DType dtype_of<double>() { return DType::kF64; }

}  // namespace xnn
