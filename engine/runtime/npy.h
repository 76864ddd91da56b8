// NumPy .npy (format 1.0/2.0/3.0) reading and writing, little-endian, C order.
#pragma once
#include <string>

#include "engine/core/tensor.h"

namespace xnn {

// Throws an Error naming the file and what is wrong (bad magic, unsupported dtype, Fortran
// order, truncated data, ...).
Tensor read_npy(const std::string& path);
Tensor parse_npy(const void* data, size_t size, const std::string& name_for_errors);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace xnn
