// Internal to engine/onnx: TensorProto -> Tensor conversion shared by the model importer and
// load_onnx_tensor_file. Protobuf types are only forward-declared so this header stays cheap.
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/tensor.h"

namespace onnx {
class TensorProto;
}  // namespace onnx

namespace xnn {

// Our dtype for an ONNX TensorProto.DataType code; kUnknown for types the engine lacks.
DType dtype_from_onnx(int32_t onnx_type);
// "FLOAT", "STRING", "BFLOAT16", ... (or "type code N" for codes ONNX does not define).
std::string onnx_type_name(int32_t onnx_type);

// Converts `proto` (raw_data, typed fields, or external data) into a Tensor.
//   what:     how errors name the tensor, e.g. "model.onnx: initializer 'fc.weight'"
//   base_dir: folder that external data locations are relative to ("" forbids external data)
// Throws Error for malformed data (sizes that do not match the shape, bad external data),
// UnsupportedError for a dtype the engine lacks.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& what, const std::string& base_dir);

// Reads a whole file. Errors start with `path`; only regular files are read (a FIFO would hang).
std::string read_file_bytes(const std::string& path);
// The folder holding `path` ("." for a bare file name): where its external data lives.
std::string folder_of(const std::string& path);

}  // namespace xnn
