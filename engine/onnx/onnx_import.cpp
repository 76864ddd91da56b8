// TEMPORARY stub, replaced by the importer.
#include "engine/onnx/onnx_import.h"
namespace xnn {
Model import_onnx_file(const std::string& p, const OnnxImportOptions&) { throw Error(p + ": ONNX import not built yet"); }
Model import_onnx_bytes(const void*, size_t, const std::string& p, const std::string&, const OnnxImportOptions&) { throw Error(p + ": ONNX import not built yet"); }
}  // namespace xnn
