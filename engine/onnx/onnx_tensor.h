// Serialized ONNX TensorProto files (the test_data_set_*/input_N.pb files of the ONNX
// conformance suites) read into Tensors. No protobuf types here: protobuf headers stay inside
// engine/onnx/*.cpp.
#pragma once
#include <cstddef>
#include <string>

#include "engine/core/tensor.h"

namespace xnn {

// Reads a serialized TensorProto. External data is resolved relative to the file's folder.
// Stores the tensor's name in `*name_out` when given. Throws Error naming the file for an
// unreadable or malformed file, UnsupportedError for a dtype the engine has no type for
// (string, int16, uint16, uint32, uint64, bfloat16, complex).
Tensor load_onnx_tensor_file(const std::string& path, std::string* name_out = nullptr);

// Same from bytes; `name_for_errors` names the source in messages.
Tensor parse_onnx_tensor(const void* data, size_t size, const std::string& name_for_errors,
                         std::string* name_out = nullptr);

}  // namespace xnn
