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
  return has_xnn_magic(head, static_cast<size_t>(f.gcount())) ? ModelFileKind::kXnn : ModelFileKind::kOnnx;
}

std::shared_ptr<Model> load_model(const std::string& path) {
  const ModelFileKind kind = detect_model_kind(path);
  auto model = std::make_shared<Model>(kind == ModelFileKind::kXnn ? load_xnn(path) : import_onnx_file(path));
  model->graph.validate(path);
  return model;
}

}  // namespace xnn
