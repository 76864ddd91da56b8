// ONNX -> IR import through Debian's libonnx: parse ModelProto (external data files resolved
// relative to the model), run the ONNX checker (and, when asked, libonnx shape inference), map
// to the IR, rewrite older opset forms into the opset-13 semantics the kernels implement, fold
// constant sub-graphs (PyTorch's Shape->Gather->Concat->Reshape chains) with the reference
// kernels. Unsupported ops are reported all at once: every op type with node names and opset.
// Corrupt or hostile files end in an Error naming the file, never a crash or a hang.
#pragma once
#include <string>

#include "engine/core/graph.h"

namespace xnn {

struct OnnxImportOptions {
  bool run_checker = true;
  bool fold_constants = true;
  // libonnx's shape inference (adds value_info, e.g. symbolic shapes of intermediates). Off by
  // default: libonnx 1.12's inference functions crash (ConvTranspose with a rank-0 weight) and
  // hang (Conv/Pool with extreme attributes) on models its own checker accepts, so it must only
  // see trusted files. The importer does not need it: static shapes are propagated with the
  // engine's own per-op inference (see fold_constants.h).
  bool run_shape_inference = false;
};

Model import_onnx_file(const std::string& path, const OnnxImportOptions& options = {});
// `base_dir` is the folder external data locations are relative to ("" rejects external data);
// `name` is used in error messages. import_onnx_file passes the model file's folder.
Model import_onnx_bytes(const void* data, size_t size, const std::string& name, const std::string& base_dir,
                        const OnnxImportOptions& options = {});

}  // namespace xnn
