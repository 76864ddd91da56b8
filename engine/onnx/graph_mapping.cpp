#include "engine/onnx/graph_mapping.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/onnx/tensor_proto.h"

namespace xnn {
namespace {

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// A 1-D tensor holding `v`. (Tensor::from_vector would memcpy from a null pointer when `v` is
// empty, which is undefined behaviour.)
template <typename T, typename Range>
Tensor vector_tensor(const Range& v) {
  Tensor t(dtype_of<T>(), {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), static_cast<T*>(t.raw()));
  return t;
}

// Old files (IR < 0.0.2 style) leave AttributeProto.type unset; the filled field says it.
onnx::AttributeProto::AttributeType attribute_type(const onnx::AttributeProto& a) {
  if (a.type() != onnx::AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return onnx::AttributeProto::FLOAT;
  if (a.has_i()) return onnx::AttributeProto::INT;
  if (a.has_s()) return onnx::AttributeProto::STRING;
  if (a.has_t()) return onnx::AttributeProto::TENSOR;
  if (a.has_g()) return onnx::AttributeProto::GRAPH;
  if (a.floats_size()) return onnx::AttributeProto::FLOATS;
  if (a.ints_size()) return onnx::AttributeProto::INTS;
  if (a.strings_size()) return onnx::AttributeProto::STRINGS;
  if (a.graphs_size()) return onnx::AttributeProto::GRAPHS;
  if (a.tensors_size()) return onnx::AttributeProto::TENSORS;
  return onnx::AttributeProto::UNDEFINED;
}

class GraphMapper {
 public:
  GraphMapper(OnnxMappingContext& ctx, const std::unordered_set<std::string>& outer_names, std::string where,
              bool is_main_graph)
      : ctx_(ctx), outer_names_(outer_names), where_(std::move(where)), is_main_graph_(is_main_graph) {}

  Graph map(const onnx::GraphProto& proto) {
    graph_.name = proto.name();
    if (proto.sparse_initializer_size() > 0) {
      ctx_.unsupported.push_back(where_ + ": sparse initializers (e.g. '" + proto.sparse_initializer(0).values().name() +
                                 "') are not supported");
    }
    for (const auto& info : proto.value_info()) declared_types_[info.name()] = &info;
    for (const auto& info : proto.output()) declared_types_[info.name()] = &info;
    map_initializers(proto);
    map_inputs(proto);
    collect_visible_names(proto);
    for (int k = 0; k < proto.node_size(); ++k) map_node(proto.node(k), k);
    map_outputs(proto);
    return std::move(graph_);
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { throw Error(where_ + ": " + msg); }

  int find(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? -1 : it->second;
  }

  int add_value(Value v) {
    const std::string name = v.name;
    const int i = graph_.add_value(std::move(v));
    index_.emplace(name, i);
    return i;
  }

  // Fills dtype/shape from a ValueInfoProto. Returns a description of what the engine cannot
  // represent (a non-tensor type, an unsupported element type), or "" when all is well.
  std::string apply_type(const onnx::ValueInfoProto& info, Value& v) const {
    if (!info.has_type() || info.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) return "";
    const onnx::TypeProto& type = info.type();
    if (!type.has_tensor_type()) {
      const char* kind = type.has_sequence_type() ? "a sequence"
                         : type.has_map_type()    ? "a map"
                         : type.has_optional_type() ? "an optional"
                         : type.has_sparse_tensor_type() ? "a sparse tensor"
                                                         : "a non-tensor";
      return std::string("has ") + kind + " type";
    }
    const auto& tensor_type = type.tensor_type();
    std::string problem;
    if (tensor_type.has_elem_type()) {
      v.dtype = dtype_from_onnx(tensor_type.elem_type());
      if (v.dtype == DType::kUnknown) problem = "has dtype " + onnx_type_name(tensor_type.elem_type());
    }
    if (tensor_type.has_shape()) {
      v.has_shape = true;
      v.shape.clear();
      for (const auto& d : tensor_type.shape().dim()) {
        if (d.has_dim_value() && d.dim_value() >= 0) v.shape.push_back(Dim::fixed(d.dim_value()));
        else if (d.has_dim_param() && !d.dim_param().empty()) v.shape.push_back(Dim::named(d.dim_param()));
        else v.shape.push_back(Dim{});  // unknown (negative sizes are treated as unknown too)
      }
    }
    return problem;
  }

  void map_initializers(const onnx::GraphProto& proto) {
    for (const auto& t : proto.initializer()) {
      if (t.name().empty()) fail("an initializer has no name");
      if (!initializer_names_.insert(t.name()).second) fail("initializer '" + t.name() + "' is defined twice");
      Value v;
      v.name = t.name();
      try {
        Tensor data = tensor_from_proto(t, where_ + ": initializer '" + t.name() + "'", ctx_.base_dir);
        v.dtype = data.dtype();
        v.has_shape = true;
        for (int64_t d : data.shape()) v.shape.push_back(Dim::fixed(d));
        v.trainable = is_float(data.dtype());
        v.data = std::move(data);
      } catch (const UnsupportedError& e) {
        ctx_.unsupported.push_back(e.what());  // left as a data-less placeholder
      }
      add_value(std::move(v));
    }
  }

  void map_inputs(const onnx::GraphProto& proto) {
    for (const auto& info : proto.input()) {
      if (initializer_names_.count(info.name())) continue;  // an initialiser, i.e. a constant
      if (info.name().empty()) fail("a graph input has no name");
      if (find(info.name()) >= 0) fail("graph input '" + info.name() + "' is declared twice");
      if (is_main_graph_ && !info.has_type()) fail("graph input '" + info.name() + "' has no type");
      Value v;
      v.name = info.name();
      const std::string problem = apply_type(info, v);
      if (!problem.empty()) ctx_.unsupported.push_back(where_ + ": graph input '" + info.name() + "' " + problem);
      graph_.inputs.push_back(add_value(std::move(v)));
    }
  }

  // Names a subgraph may read from this graph or any enclosing one, and the names nodes
  // produce (so inputs can refer to values produced later in an unsorted node list).
  void collect_visible_names(const onnx::GraphProto& proto) {
    for (const auto& n : proto.node()) {
      for (const auto& o : n.output()) {
        if (!o.empty()) produced_.insert(o);
      }
      if (!n.name().empty()) node_names_.insert(n.name());
    }
    bool has_subgraphs = false;
    for (const auto& n : proto.node()) {
      for (const auto& a : n.attribute()) has_subgraphs |= a.has_g() || a.graphs_size() > 0;
    }
    if (!has_subgraphs) return;
    visible_ = outer_names_;
    for (const auto& [name, i] : index_) visible_.insert(name);
    visible_.insert(produced_.begin(), produced_.end());
  }

  // The value for `name` used as a node input: defined here, produced by some node here, or
  // (in a subgraph) defined by an enclosing graph.
  int input_value(const std::string& name, const Node& node) {
    const int i = find(name);
    if (i >= 0) return i;
    if (produced_.count(name)) return new_value(name);
    if (outer_names_.count(name)) {
      Value v;
      v.name = name;
      v.outer_scope = true;
      return add_value(std::move(v));
    }
    fail(node.describe() + ": input '" + name +
         "' is not produced by any node, and is neither a graph input nor an initializer");
  }

  // A fresh value, typed from value_info / graph output declarations when present.
  int new_value(const std::string& name) {
    Value v;
    v.name = name;
    auto it = declared_types_.find(name);
    if (it != declared_types_.end()) apply_type(*it->second, v);  // problems surface at op level
    return add_value(std::move(v));
  }

  std::string node_name(const onnx::NodeProto& n, int index) {
    if (!n.name().empty()) return n.name();
    std::string name = n.op_type() + "_" + std::to_string(index);
    for (int k = 2; node_names_.count(name); ++k) name = n.op_type() + "_" + std::to_string(index) + "_" + std::to_string(k);
    node_names_.insert(name);
    return name;
  }

  void map_node(const onnx::NodeProto& np, int index) {
    Node node;
    node.op_type = np.op_type();
    node.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    node.name = node_name(np, index);
    if (node.op_type.empty()) fail("node " + std::to_string(index) + " ('" + node.name + "') has no op_type");
    if (is_default_domain(node.domain) && node.op_type == "Constant") {
      map_constant_node(np, node);
      return;
    }
    for (const auto& in : np.input()) node.inputs.push_back(in.empty() ? -1 : input_value(in, node));
    for (const auto& a : np.attribute()) map_attribute(a, node);
    for (const auto& out : np.output()) {
      if (out.empty()) {
        node.outputs.push_back(-1);
        continue;
      }
      const int existing = find(out);
      // A duplicate producer is reported by Graph::validate, naming both.
      node.outputs.push_back(existing >= 0 ? existing : new_value(out));
    }
    graph_.nodes.push_back(std::move(node));
  }

  // Constant nodes become constant values: folding and every later pass see the data directly.
  void map_constant_node(const onnx::NodeProto& np, const Node& node) {
    if (np.input_size() != 0) fail(node.describe() + ": takes no inputs");
    if (np.output_size() != 1 || np.output(0).empty()) fail(node.describe() + ": must have exactly one output");
    int out = find(np.output(0));  // may exist already when a consumer came first in the file
    if (out >= 0 && (graph_.value(out).is_constant() || initializer_names_.count(np.output(0)) ||
                     std::find(graph_.inputs.begin(), graph_.inputs.end(), out) != graph_.inputs.end())) {
      fail(node.describe() + ": output '" + np.output(0) + "' is already defined");
    }
    if (np.attribute_size() != 1) {
      fail(node.describe() + ": needs exactly one value attribute (value, value_float(s), value_int(s), ...), got " +
           std::to_string(np.attribute_size()));
    }
    const onnx::AttributeProto& a = np.attribute(0);
    const std::string what = where_ + ": " + node.describe() + ": attribute '" + a.name() + "'";
    const auto type = attribute_type(a);
    std::optional<Tensor> data;
    if (a.name() == "value" && type == onnx::AttributeProto::TENSOR) {
      try {
        data = tensor_from_proto(a.t(), what, ctx_.base_dir);
      } catch (const UnsupportedError& e) {
        ctx_.unsupported.push_back(e.what());
      }
    } else if (a.name() == "value_float" && type == onnx::AttributeProto::FLOAT) {
      data = Tensor::scalar<float>(a.f());
    } else if (a.name() == "value_floats" && type == onnx::AttributeProto::FLOATS) {
      data = vector_tensor<float>(a.floats());
    } else if (a.name() == "value_int" && type == onnx::AttributeProto::INT) {
      data = Tensor::scalar<int64_t>(a.i());
    } else if (a.name() == "value_ints" && type == onnx::AttributeProto::INTS) {
      data = vector_tensor<int64_t>(a.ints());
    } else if (a.name() == "value_string" || a.name() == "value_strings" || a.name() == "sparse_value") {
      ctx_.unsupported.push_back(what + ": string and sparse constants are not supported");
    } else {
      throw Error(what + ": not a valid Constant value (expected value, value_float(s) or value_int(s) "
                  "of the matching attribute type)");
    }
    if (out < 0) {
      Value v;
      v.name = np.output(0);
      out = add_value(std::move(v));
    }
    if (data) {  // otherwise a data-less placeholder; the unsupported note is thrown before use
      Value& v = graph_.value(out);
      v.dtype = data->dtype();
      v.has_shape = true;
      v.shape.clear();
      for (int64_t d : data->shape()) v.shape.push_back(Dim::fixed(d));
      v.data = std::move(*data);
    }
  }

  void map_attribute(const onnx::AttributeProto& a, Node& node) {
    const std::string what = where_ + ": " + node.describe() + ": attribute '" + a.name() + "'";
    if (a.name().empty()) fail(node.describe() + ": has an attribute without a name");
    if (node.attrs.count(a.name())) fail(node.describe() + ": attribute '" + a.name() + "' is given twice");
    if (!a.ref_attr_name().empty()) {
      throw Error(what + " refers to a function attribute ('" + a.ref_attr_name() + "') outside a function");
    }
    Attribute value;
    switch (attribute_type(a)) {
      case onnx::AttributeProto::INT: value = Attribute(static_cast<int64_t>(a.i())); break;
      case onnx::AttributeProto::FLOAT: value = Attribute(a.f()); break;
      case onnx::AttributeProto::STRING: value = Attribute(a.s()); break;
      case onnx::AttributeProto::INTS: value = Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end())); break;
      case onnx::AttributeProto::FLOATS: value = Attribute(std::vector<float>(a.floats().begin(), a.floats().end())); break;
      case onnx::AttributeProto::STRINGS:
        value = Attribute(std::vector<std::string>(a.strings().begin(), a.strings().end()));
        break;
      case onnx::AttributeProto::TENSOR:
        try {
          value = Attribute(tensor_from_proto(a.t(), what, ctx_.base_dir));
        } catch (const UnsupportedError& e) {
          ctx_.unsupported.push_back(e.what());
          return;
        }
        break;
      case onnx::AttributeProto::GRAPH: value = Attribute(map_subgraph(a.g(), node, a.name())); break;
      case onnx::AttributeProto::GRAPHS: {
        std::vector<std::shared_ptr<Graph>> graphs;
        for (const auto& g : a.graphs()) graphs.push_back(map_subgraph(g, node, a.name()));
        value = Attribute(std::move(graphs));
        break;
      }
      case onnx::AttributeProto::UNDEFINED: throw Error(what + " has no value");
      default:
        ctx_.unsupported.push_back(what + ": attribute type " +
                                   onnx::AttributeProto_AttributeType_Name(attribute_type(a)) + " is not supported");
        return;
    }
    node.attrs.emplace(a.name(), std::move(value));
  }

  std::shared_ptr<Graph> map_subgraph(const onnx::GraphProto& g, const Node& node, const std::string& attr) {
    const std::string where =
        where_ + ": subgraph '" + (g.name().empty() ? attr : g.name()) + "' of " + node.describe();
    GraphMapper child(ctx_, visible_, where, /*is_main_graph=*/false);
    return std::make_shared<Graph>(child.map(g));
  }

  void map_outputs(const onnx::GraphProto& proto) {
    for (const auto& info : proto.output()) {
      if (info.name().empty()) fail("a graph output has no name");
      int i = find(info.name());
      if (i < 0 && outer_names_.count(info.name())) {
        Value v;
        v.name = info.name();
        v.outer_scope = true;
        i = add_value(std::move(v));
      }
      if (i < 0) {
        fail("graph output '" + info.name() +
             "' is not produced by any node, and is neither a graph input nor an initializer");
      }
      Value& v = graph_.value(i);
      if (!v.is_constant()) {
        const DType before = v.dtype;
        const std::string problem = apply_type(info, v);
        if (!problem.empty()) ctx_.unsupported.push_back(where_ + ": graph output '" + info.name() + "' " + problem);
        if (v.dtype == DType::kUnknown) v.dtype = before;
      }
      graph_.outputs.push_back(i);
    }
  }

  OnnxMappingContext& ctx_;
  const std::unordered_set<std::string>& outer_names_;
  std::string where_;
  bool is_main_graph_;
  Graph graph_;
  std::unordered_set<std::string> initializer_names_;
  std::unordered_map<std::string, int> index_;
  std::unordered_map<std::string, const onnx::ValueInfoProto*> declared_types_;
  std::unordered_set<std::string> produced_;
  std::unordered_set<std::string> node_names_;
  std::unordered_set<std::string> visible_;  // for subgraphs: outer names plus ours
};

}  // namespace

Graph map_onnx_graph(const onnx::GraphProto& proto, OnnxMappingContext& ctx, const std::string& where) {
  const std::unordered_set<std::string> no_outer_names;
  GraphMapper mapper(ctx, no_outer_names, where, /*is_main_graph=*/true);
  return mapper.map(proto);
}

}  // namespace xnn
