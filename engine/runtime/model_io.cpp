#include "engine/runtime/model_io.h"

#include <fstream>

#include "engine/format/xnn_format.h"
#include "engine/onnx/onnx_import.h"

namespace xnn {

ModelFileKind detect_model_kind(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open model file (does it exist?)");
  char head[16] = {};
  f.read(head, sizeof(head));
  const auto n = static_cast<size_t>(f.gcount());
  if (has_xnn_magic(head, n)) return ModelFileKind::kXnn;
  if (has_protected_magic(head, n)) return ModelFileKind::kProtectedXnn;
  return ModelFileKind::kOnnx;
}

std::shared_ptr<Model> load_model(const std::string& path, const LoadOptions& options) {
  const ModelFileKind kind = detect_model_kind(path);
  std::shared_ptr<Model> model;
  switch (kind) {
    case ModelFileKind::kXnn: model = std::make_shared<Model>(load_xnn(path)); break;
    case ModelFileKind::kOnnx: model = std::make_shared<Model>(import_onnx_file(path)); break;
    case ModelFileKind::kProtectedXnn:
      if (!options.key) {
        throw Error(path + " is protected: pass --key-file KEY (API: LoadOptions::key)");
      }
      model = std::make_shared<Model>(load_protected_xnn(path, *options.key));
      break;
  }
  model->graph.validate(path);
  return model;
}

}  // namespace xnn
