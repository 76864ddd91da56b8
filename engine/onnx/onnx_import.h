// ONNX -> IR import through Debian's libonnx: parse ModelProto (external data files resolved
// relative to the model), run the ONNX checker and shape inference, map to the IR, fold
// constant sub-graphs (PyTorch's Shape->Gather->Concat->Reshape chains) with the reference
// kernels. Unsupported ops are reported all at once: every op type with node names and opset.
#pragma once
#include <string>

#include "engine/core/graph.h"

namespace xnn {

struct OnnxImportOptions {
  bool run_checker = true;
  bool fold_constants = true;
};

Model import_onnx_file(const std::string& path, const OnnxImportOptions& options = {});
// `base_dir` resolves external data; `name` is used in error messages.
Model import_onnx_bytes(const void* data, size_t size, const std::string& name, const std::string& base_dir,
                        const OnnxImportOptions& options = {});

}  // namespace xnn
