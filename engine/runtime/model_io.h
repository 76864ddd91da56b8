// Loading models by file type: ".xnn" (our FlatBuffers format, mmap'ed) or ONNX
// (".onnx" or any file that is not .xnn: detected by content, not only the extension).
#pragma once
#include <memory>
#include <string>

#include "engine/core/graph.h"

namespace xnn {

enum class ModelFileKind { kXnn, kOnnx };
ModelFileKind detect_model_kind(const std::string& path);  // throws if the file cannot be read

// Loads and validates a model. Errors name the file.
std::shared_ptr<Model> load_model(const std::string& path);

}  // namespace xnn
