// Loading models by file type: ".xnn" (our FlatBuffers format, mmap'ed), protected ".xnn"
// (the AES-256-GCM "XNNP" container, engine/format/xnn_protect.h; needs the key) or ONNX
// (".onnx" or any file that is not .xnn: detected by content, not only the extension).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "engine/core/graph.h"
#include "engine/format/xnn_protect.h"

namespace xnn {

enum class ModelFileKind { kXnn, kOnnx, kProtectedXnn };
ModelFileKind detect_model_kind(const std::string& path);  // throws if the file cannot be read

struct LoadOptions {
  // Key of a protected model (read_key_file / generate_key_file). Ignored for plain files.
  std::optional<ModelKey> key;
};

// Loads and validates a model. Errors name the file. A protected model without
// options.key is an error ("PATH is protected: pass --key-file ..."); a wrong key or a
// modified file is "PATH: authentication failed: wrong key or the file was modified".
std::shared_ptr<Model> load_model(const std::string& path, const LoadOptions& options = {});

}  // namespace xnn
