#include "engine/core/dtype.h"

namespace xnn {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kI8: return 1;
    case DType::kU8: return 1;
    case DType::kI32: return 4;
    case DType::kI64: return 8;
    case DType::kBool: return 1;
    case DType::kF64: return 8;
    default: return 0;
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kBool: return "bool";
    case DType::kF64: return "f64";
    default: return "unknown";
  }
}

DType dtype_from_name(std::string_view n) {
  for (DType t : {DType::kF32, DType::kF16, DType::kI8, DType::kU8, DType::kI32, DType::kI64,
                  DType::kBool, DType::kF64}) {
    if (dtype_name(t) == n) return t;
  }
  return DType::kUnknown;
}

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kF64; }
bool is_integer(DType t) {
  return t == DType::kI8 || t == DType::kU8 || t == DType::kI32 || t == DType::kI64;
}

}  // namespace xnn
