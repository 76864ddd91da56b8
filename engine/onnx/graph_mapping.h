// Internal to engine/onnx: ONNX GraphProto -> IR Graph. Protobuf types are only
// forward-declared so this header stays cheap to include.
#pragma once
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace xnn {

struct OnnxMappingContext {
  std::string model_name;  // the file (or name) errors start with
  std::string base_dir;    // folder for external data ("" forbids it)
  // Legal ONNX the engine does not support (a string initialiser, a sequence-typed input, ...).
  // Collected rather than thrown so the importer reports them together with unsupported ops.
  std::vector<std::string> unsupported;
};

// Maps the main graph `proto`: initialisers become constant values (float ones trainable), graph inputs that
// are not initialisers become inputs, value_info/outputs give dtypes and shapes, Constant
// nodes become constant values, and GRAPH attributes map recursively with references to
// enclosing graphs as outer_scope values. `where` prefixes error messages. Nodes are kept in
// file order (not sorted); unnamed nodes get unique "<op_type>_<index>" names.
Graph map_onnx_graph(const onnx::GraphProto& proto, OnnxMappingContext& ctx, const std::string& where);

}  // namespace xnn
