// ONNX -> IR. The stages, in order: parse the ModelProto; run libonnx's checker (and its shape
// inference when asked); map to the IR (graph_mapping.cpp); sort; rewrite older opset forms
// (legacy_rewrites.cpp); report every unsupported op at once; validate; fold constants.
// Everything a corrupt file can make libonnx or protobuf throw becomes an xnn::Error naming
// the file.
#include "engine/onnx/onnx_import.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <climits>
#include <map>

#include "engine/core/op_registry.h"
#include "engine/core/sha256.h"
#include "engine/onnx/graph_mapping.h"
#include "engine/onnx/legacy_rewrites.h"
#include "engine/onnx/tensor_proto.h"
#include "engine/runtime/fold_constants.h"

namespace xnn {
namespace {

// The graphs hanging off a node's attributes (If branches, Loop bodies), with their attribute names.
std::vector<std::pair<std::string, Graph*>> subgraphs_of(const Node& n) {
  std::vector<std::pair<std::string, Graph*>> out;
  for (const auto& [key, attr] : n.attrs) {
    if (auto sub = attr.get_if<std::shared_ptr<Graph>>()) {
      if (*sub) out.emplace_back(key, sub->get());
    } else if (auto subs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
      for (const auto& s : *subs) {
        if (s) out.emplace_back(key, s.get());
      }
    }
  }
  return out;
}

// Calls fn(node) for every node of `g` and of its subgraphs, at any depth.
template <typename Fn>
void for_each_node(const Graph& g, Fn&& fn) {
  for (const Node& n : g.nodes) {
    fn(n);
    for (const auto& [key, sub] : subgraphs_of(n)) for_each_node(*sub, fn);
  }
}

// Calls fn(graph, where) for `g` and every subgraph, `where` naming it for error messages.
template <typename Fn>
void for_each_graph(Graph& g, const std::string& where, Fn&& fn) {
  fn(g, where);
  for (const Node& n : g.nodes) {
    for (const auto& [key, sub] : subgraphs_of(n)) {
      for_each_graph(*sub, where + ": subgraph '" + key + "' of " + n.describe(), fn);
    }
  }
}

int64_t default_domain_opset(const onnx::ModelProto& proto) {
  for (const auto& imp : proto.opset_import()) {
    if (imp.domain().empty() || imp.domain() == "ai.onnx") return imp.version();
  }
  return 1;  // IR version 1 and 2 files had no opset_import: the first op set
}

// libonnx 1.12's checker looks for external data files relative to the process's working
// directory (an in-memory ModelProto has no folder), which is wrong for us and would let a file
// make it open arbitrary paths. The importer resolves and bounds-checks external data itself,
// so while the checker runs, each external tensor is disguised as one with a placeholder
// raw_data (the checker needs a non-empty data field, and does not compare its size).
class ExternalDataHidden {
 public:
  explicit ExternalDataHidden(onnx::ModelProto& m) {
    hide_in_graph(*m.mutable_graph());
    for (auto& f : *m.mutable_functions()) {
      for (auto& n : *f.mutable_node()) hide_in_node(n);
    }
  }
  ~ExternalDataHidden() {
    for (Hidden& h : hidden_) {
      h.tensor->clear_raw_data();
      h.tensor->set_data_location(onnx::TensorProto::EXTERNAL);
      h.tensor->mutable_external_data()->Swap(&h.entries);
    }
  }
  ExternalDataHidden(const ExternalDataHidden&) = delete;
  ExternalDataHidden& operator=(const ExternalDataHidden&) = delete;

 private:
  struct Hidden {
    onnx::TensorProto* tensor;
    google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto> entries;
  };

  void hide(onnx::TensorProto& t) {
    // A tensor that also carries data is malformed: leave it for the checker to reject.
    const bool has_data = t.has_raw_data() || t.float_data_size() || t.int32_data_size() || t.int64_data_size() ||
                          t.double_data_size() || t.uint64_data_size() || t.string_data_size();
    if (t.data_location() != onnx::TensorProto::EXTERNAL || has_data) return;
    Hidden h{&t, {}};
    h.entries.Swap(t.mutable_external_data());
    t.set_data_location(onnx::TensorProto::DEFAULT);
    const bool empty = std::find(t.dims().begin(), t.dims().end(), 0) != t.dims().end();
    t.set_raw_data(empty ? std::string() : std::string(1, '\0'));
    hidden_.push_back(std::move(h));
  }

  void hide_in_node(onnx::NodeProto& n) {
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) hide(*a.mutable_t());
      for (auto& t : *a.mutable_tensors()) hide(t);
      if (a.has_g()) hide_in_graph(*a.mutable_g());
      for (auto& g : *a.mutable_graphs()) hide_in_graph(g);
    }
  }

  void hide_in_graph(onnx::GraphProto& g) {
    for (auto& t : *g.mutable_initializer()) hide(t);
    for (auto& s : *g.mutable_sparse_initializer()) {
      hide(*s.mutable_values());
      hide(*s.mutable_indices());
    }
    for (auto& n : *g.mutable_node()) hide_in_node(n);
  }

  std::vector<Hidden> hidden_;
};

void run_checker(onnx::ModelProto& proto, const std::string& name) {
  ExternalDataHidden hidden(proto);
  try {
    onnx::checker::check_model(proto);
  } catch (const onnx::checker::ValidationError& e) {
    throw Error(name + ": the ONNX checker rejects the model: " + e.what());
  } catch (const std::exception& e) {
    throw Error(name + ": the ONNX checker failed: " + e.what());
  } catch (...) {
    throw Error(name + ": the ONNX checker failed with an unknown exception");
  }
}

// Shape inference only adds value_info; when it fails, the import goes on without it.
void run_shape_inference(onnx::ModelProto& proto) {
  try {
    onnx::shape_inference::InferShapes(proto);
  } catch (...) {
  }
}

std::string strip_prefix(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0 ? s.substr(prefix.size()) : s;
}

// One UnsupportedError listing every op type the registry lacks (with its node names) and
// every other unsupported feature found while mapping.
void report_unsupported(const Graph& g, int64_t opset, const std::string& name, const std::vector<std::string>& notes) {
  const OpRegistry& registry = OpRegistry::builtin();
  std::map<std::string, std::vector<std::string>> missing;  // "domain.Op" -> node names
  int count = 0;
  for_each_node(g, [&](const Node& n) {
    if (registry.find(n.op_type, n.domain)) return;
    missing[n.domain.empty() ? n.op_type : n.domain + "." + n.op_type].push_back(n.name);
    ++count;
  });
  if (missing.empty() && notes.empty()) return;
  std::string msg = name + ": ";
  if (!missing.empty()) {
    msg += std::to_string(count) + " unsupported op" + (count == 1 ? "" : "s") + " (opset " + std::to_string(opset) + "):";
    constexpr size_t kMaxNamesPerOp = 20;
    for (const auto& [op, nodes] : missing) {
      msg += "\n  " + op + ": node" + (nodes.size() == 1 ? "" : "s") + " ";
      for (size_t i = 0; i < nodes.size() && i < kMaxNamesPerOp; ++i) msg += (i ? ", '" : "'") + nodes[i] + "'";
      if (nodes.size() > kMaxNamesPerOp) {
        msg += " and ";
        msg += std::to_string(nodes.size() - kMaxNamesPerOp) + " more";
      }
    }
    if (!notes.empty()) msg += "\nalso unsupported:";
  } else {
    msg += "unsupported model features:";
  }
  for (const std::string& note : notes) {
    msg += "\n  ";
    msg += strip_prefix(note, name + ": ");
  }
  throw UnsupportedError(msg);
}

void sort_graphs(Graph& main, const std::string& name) {
  for_each_graph(main, name, [](Graph& g, const std::string& where) {
    try {
      g.topological_sort();
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
  });
}

void sort_and_validate(Graph& main, const std::string& name) {
  sort_graphs(main, name);
  for_each_graph(main, name, [](Graph& g, const std::string& where) { g.validate(where); });
}

Model import_model(const void* data, size_t size, const std::string& name, const std::string& base_dir,
                   const OnnxImportOptions& options) {
  if (size > static_cast<size_t>(INT_MAX)) {
    throw Error(name + ": not a valid ONNX model (" + std::to_string(size) +
                " bytes exceed protobuf's 2 GiB limit; large weights belong in external data)");
  }
  onnx::ModelProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) {
    throw Error(name + ": not a valid ONNX model (protobuf parsing failed: truncated or not an ONNX file)");
  }
  if (!proto.has_graph()) throw Error(name + ": not a valid ONNX model (it has no graph)");
  if (options.run_checker) run_checker(proto, name);
  if (options.run_shape_inference) run_shape_inference(proto);  // trusted files only: see the header

  Model model;
  model.opset = default_domain_opset(proto);
  model.metadata.producer = proto.producer_name();
  if (!proto.producer_version().empty()) model.metadata.producer += " " + proto.producer_version();
  model.metadata.source_sha256 = sha256_hex(data, size);

  OnnxMappingContext ctx{name, base_dir, {}};
  model.graph = map_onnx_graph(proto.graph(), ctx, name);
  sort_graphs(model.graph, name);
  rewrite_legacy_ops(model.graph, model.opset, name, ctx.unsupported);
  report_unsupported(model.graph, model.opset, name, ctx.unsupported);
  sort_and_validate(model.graph, name);
  if (options.fold_constants) {
    fold_constants(model.graph);
    sort_and_validate(model.graph, name);
  }
  return model;
}

}  // namespace

Model import_onnx_bytes(const void* data, size_t size, const std::string& name, const std::string& base_dir,
                        const OnnxImportOptions& options) {
  try {
    return import_model(data, size, name, base_dir, options);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(name + ": out of memory while importing the model");
  } catch (const std::exception& e) {
    throw Error(name + ": import failed: " + e.what());
  }
}

Model import_onnx_file(const std::string& path, const OnnxImportOptions& options) {
  const std::string bytes = read_file_bytes(path);
  return import_onnx_bytes(bytes.data(), bytes.size(), path, folder_of(path), options);
}

}  // namespace xnn
