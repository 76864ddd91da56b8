// IR -> ONNX ModelProto. One pass over the graph (and, recursively, its subgraphs) builds the
// protobuf; libonnx's checker then sees exactly what other tools will read. See the header for
// what is (and is not) carried over.
#include "engine/onnx/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <unordered_set>

#include "engine/kernels/activation.h"
#include "engine/ops/fused_activation.h"

namespace xnn {
namespace {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little endian; a big-endian host would need byte swapping here");

constexpr const char* kFusedDomain = "ai.xnn";
// ONNX Runtime's contrib ops (QGemm, QLinearAdd, ... of engine/ops/quantized_contrib.cpp) are
// written as they are, in their domain, with an opset import for it (version 1, the only one).
constexpr const char* kContribDomain = "com.microsoft";
constexpr int64_t kContribOpset = 1;
// The op set the kernels' semantics are written against (engine/core/op_registry.h).
constexpr int64_t kMinExportOpset = 13;
// HardSwish joined the default domain in opset 14.
constexpr int64_t kHardSwishOpset = 14;

int32_t onnx_elem_type(DType t) {
  switch (t) {
    case DType::kF32: return onnx::TensorProto::FLOAT;
    case DType::kF16: return onnx::TensorProto::FLOAT16;
    case DType::kF64: return onnx::TensorProto::DOUBLE;
    case DType::kI8: return onnx::TensorProto::INT8;
    case DType::kU8: return onnx::TensorProto::UINT8;
    case DType::kI32: return onnx::TensorProto::INT32;
    case DType::kI64: return onnx::TensorProto::INT64;
    case DType::kBool: return onnx::TensorProto::BOOL;
    default: return onnx::TensorProto::UNDEFINED;
  }
}

// The IR version that introduced each opset range: readers check both, and the oldest IR
// version that can carry the opset is the one the most readers accept.
int64_t ir_version_for(int64_t opset) {
  if (opset <= 14) return 7;
  return 8;
}

void fill_tensor(const Tensor& t, onnx::TensorProto& out, const std::string& what) {
  if (!t.defined()) throw Error(what + ": has no data");
  const int32_t type = onnx_elem_type(t.dtype());
  if (type == onnx::TensorProto::UNDEFINED) {
    throw Error(what + ": dtype " + std::string(dtype_name(t.dtype())) + " has no ONNX element type");
  }
  out.set_data_type(type);
  for (int64_t d : t.shape()) out.add_dims(d);
  // Our bool is one byte holding 0 or 1, as ONNX's raw layout wants; Half is the IEEE bits.
  const size_t n = t.nbytes();
  out.set_raw_data(n == 0 ? std::string() : std::string(static_cast<const char*>(t.raw()), n));
}

// A constant input added by the exporter (Clip bounds, axes moved from an attribute).
template <typename T>
Tensor vector_tensor(const std::vector<T>& v) {
  Tensor t(dtype_of<T>(), {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<T>());
  return t;
}

class Exporter {
 public:
  Exporter(const Model& model, std::string where)
      : model_(model), where_(std::move(where)), opset_(std::max(model.opset, kMinExportOpset)) {}

  onnx::ModelProto build() {
    collect_names(model_.graph);
    onnx::ModelProto proto;
    proto.set_ir_version(ir_version_for(opset_));
    auto* imp = proto.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset_);
    export_graph(model_.graph, *proto.mutable_graph(), where_, /*is_main=*/true, "main_graph");
    if (uses_contrib_domain_) {
      auto* contrib = proto.add_opset_import();
      contrib->set_domain(kContribDomain);
      contrib->set_version(kContribOpset);
    }
    return proto;
  }

 private:
  // The graph being written: fresh constants (Clip bounds, promoted axes) become its
  // initializers, so a subgraph's helpers stay inside the subgraph.
  struct Scope {
    const Graph& graph;
    onnx::GraphProto& proto;
    std::string where;
  };

  // Fresh names must not collide with any value or node anywhere in the model: ONNX wants one
  // definition per name across a graph and all its nested scopes.
  void collect_names(const Graph& g) {
    for (const Value& v : g.values) taken_values_.insert(v.name);
    for (const Node& n : g.nodes) {
      taken_nodes_.insert(n.name);
      for (const auto& [key, attr] : n.attrs) {
        if (auto sub = attr.get_if<std::shared_ptr<Graph>>()) {
          if (*sub) collect_names(**sub);
        } else if (auto subs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
          for (const auto& s : *subs) {
            if (s) collect_names(*s);
          }
        }
      }
    }
  }

  static std::string fresh(const std::string& base, std::unordered_set<std::string>& taken) {
    std::string name = base;
    for (int k = 1; !taken.insert(name).second; ++k) name = base + "_" + std::to_string(k);
    return name;
  }
  std::string fresh_value(const std::string& base) { return fresh(base, taken_values_); }
  std::string fresh_node(const std::string& base) { return fresh(base, taken_nodes_); }

  // A value's type for a ValueInfoProto; a value of unknown dtype gets no type (legal for
  // intermediates and subgraph interfaces, which readers infer).
  static void fill_value_info(const Value& v, onnx::ValueInfoProto& out) {
    out.set_name(v.name);
    const DType dtype = v.is_constant() && v.data->defined() ? v.data->dtype() : v.dtype;
    const int32_t type = onnx_elem_type(dtype);
    if (type == onnx::TensorProto::UNDEFINED) return;
    auto* tensor_type = out.mutable_type()->mutable_tensor_type();
    tensor_type->set_elem_type(type);
    if (v.is_constant() && v.data->defined()) {
      auto* shape = tensor_type->mutable_shape();
      for (int64_t d : v.data->shape()) shape->add_dim()->set_dim_value(d);
      return;
    }
    if (!v.has_shape) return;
    auto* shape = tensor_type->mutable_shape();
    for (const Dim& d : v.shape) {
      auto* dim = shape->add_dim();
      if (d.known()) dim->set_dim_value(d.value);
      else if (!d.symbol.empty()) dim->set_dim_param(d.symbol);
    }
  }

  // The main graph's inputs and outputs must carry an element type and a shape (whose dims may
  // be unknown); subgraph interfaces may leave both to inference.
  static void require_main_io_type(const Value& v, const char* role, const std::string& where) {
    if (v.is_constant() && v.data->defined()) return;  // typed by its data
    if (onnx_elem_type(v.dtype) == onnx::TensorProto::UNDEFINED) {
      throw Error(where + ": graph " + role + " '" + v.name + "' has dtype " + std::string(dtype_name(v.dtype)) +
                  "; ONNX needs a known element type for the main graph's inputs and outputs");
    }
    if (!v.has_shape) {
      throw Error(where + ": graph " + role + " '" + v.name +
                  "' has no known rank; ONNX needs a shape (its dims may be unknown) for the main graph's inputs "
                  "and outputs");
    }
  }

  void export_graph(const Graph& g, onnx::GraphProto& out, const std::string& where, bool is_main,
                    const std::string& fallback_name) {
    g.validate(where);
    out.set_name(g.name.empty() ? fallback_name : g.name);
    Scope scope{g, out, where};

    // One definition per name (inputs, initializers, node outputs); the checker would catch a
    // duplicate too, but only when it runs, and without saying which IR values collide.
    std::unordered_set<std::string> defined;
    auto define = [&](const Value& v, const char* role) {
      if (v.name.empty()) throw Error(where + ": a " + std::string(role) + " value has no name");
      if (!defined.insert(v.name).second) {
        throw Error(where + ": value name '" + v.name + "' is defined twice (names must be unique in ONNX)");
      }
    };

    for (int i : g.inputs) {
      const Value& v = g.value(i);
      define(v, "graph input");
      if (is_main) require_main_io_type(v, "input", where);
      fill_value_info(v, *out.add_input());
    }
    for (const Value& v : g.values) {
      if (!v.is_constant() || v.outer_scope) continue;
      define(v, "constant");
      onnx::TensorProto& t = *out.add_initializer();
      t.set_name(v.name);
      fill_tensor(*v.data, t, where + ": constant '" + v.name + "'");
    }
    for (const Node& n : g.nodes) {
      for (int o : n.outputs) {
        if (o >= 0) define(g.value(o), "node output");
      }
      export_node(n, scope);
    }

    std::vector<char> is_output(g.values.size(), 0);
    for (int o : g.outputs) {
      const Value& v = g.value(o);
      if (is_main) require_main_io_type(v, "output", where);
      fill_value_info(v, *out.add_output());
      is_output[static_cast<size_t>(o)] = 1;
    }
    // Known types of intermediates: cheap to keep, and readers without shape inference of
    // their own (or with weaker inference) get them for free.
    for (const Node& n : g.nodes) {
      for (int o : n.outputs) {
        if (o < 0 || is_output[static_cast<size_t>(o)]) continue;
        const Value& v = g.value(o);
        if (onnx_elem_type(v.dtype) != onnx::TensorProto::UNDEFINED) fill_value_info(v, *out.add_value_info());
      }
    }
  }

  static const std::string& value_name(const Graph& g, int i) {
    static const std::string kAbsent;
    return i < 0 ? kAbsent : g.value(i).name;
  }

  onnx::NodeProto& add_node(Scope& s, const std::string& op_type, const std::string& name,
                            const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
    onnx::NodeProto& np = *s.proto.add_node();
    np.set_op_type(op_type);
    np.set_name(name);
    for (const std::string& i : inputs) np.add_input(i);
    for (const std::string& o : outputs) np.add_output(o);
    return np;
  }

  std::string add_constant(Scope& s, const std::string& base, const Tensor& t) {
    const std::string name = fresh_value(base);
    onnx::TensorProto& tp = *s.proto.add_initializer();
    tp.set_name(name);
    fill_tensor(t, tp, s.where + ": constant '" + name + "'");
    return name;
  }

  void export_node(const Node& n, Scope& s) {
    if (n.domain == kFusedDomain) {
      decompose_fused(n, s);
      return;
    }
    const bool contrib = n.domain == kContribDomain;
    if (!n.domain.empty() && n.domain != "ai.onnx" && !contrib) {
      throw Error(s.where + ": " + n.describe() + ": domain '" + n.domain +
                  "' has no ONNX equivalent (expected a default-domain op, a com.microsoft contrib op, or an ai.xnn "
                  "fused op, which is decomposed on export)");
    }
    std::vector<std::string> ins, outs;
    for (int i : n.inputs) ins.push_back(value_name(s.graph, i));
    for (int o : n.outputs) outs.push_back(value_name(s.graph, o));
    if (n.domain.empty() && n.op_type == "HardSwish" && opset_ < kHardSwishOpset && ins.size() == 1 && outs.size() == 1) {
      // A model that declares an older opset but uses HardSwish (our builders do): write the
      // opset-13 form, x * HardSigmoid(x), as the fused epilogues do.
      emit_activation(kernels::Activation{kernels::ActKind::kHardSwish}, ins[0], outs[0], n, s);
      return;
    }
    onnx::NodeProto& np = add_node(s, n.op_type, n.name, ins, outs);
    if (contrib) {
      np.set_domain(kContribDomain);
      uses_contrib_domain_ = true;
    }
    for (const auto& [key, attr] : n.attrs) fill_attribute(key, attr, n, *np.add_attribute(), s);
    promote_attributes_to_inputs(n, np, s);
  }

  void fill_attribute(const std::string& key, const Attribute& a, const Node& n, onnx::AttributeProto& out, Scope& s) {
    out.set_name(key);
    const std::string what = s.where + ": " + n.describe() + ": attribute '" + key + "'";
    switch (a.kind()) {
      case Attribute::Kind::kInt:
        out.set_type(onnx::AttributeProto::INT);
        out.set_i(*a.get_if<int64_t>());
        return;
      case Attribute::Kind::kFloat:
        out.set_type(onnx::AttributeProto::FLOAT);
        out.set_f(*a.get_if<float>());
        return;
      case Attribute::Kind::kString:
        out.set_type(onnx::AttributeProto::STRING);
        out.set_s(*a.get_if<std::string>());
        return;
      case Attribute::Kind::kInts:
        out.set_type(onnx::AttributeProto::INTS);
        for (int64_t v : *a.get_if<std::vector<int64_t>>()) out.add_ints(v);
        return;
      case Attribute::Kind::kFloats:
        out.set_type(onnx::AttributeProto::FLOATS);
        for (float v : *a.get_if<std::vector<float>>()) out.add_floats(v);
        return;
      case Attribute::Kind::kStrings:
        out.set_type(onnx::AttributeProto::STRINGS);
        for (const std::string& v : *a.get_if<std::vector<std::string>>()) out.add_strings(v);
        return;
      case Attribute::Kind::kTensor:
        out.set_type(onnx::AttributeProto::TENSOR);
        fill_tensor(*a.get_if<Tensor>(), *out.mutable_t(), what);
        return;
      case Attribute::Kind::kGraph: {
        out.set_type(onnx::AttributeProto::GRAPH);
        const auto& g = *a.get_if<std::shared_ptr<Graph>>();
        if (!g) throw Error(what + ": graph attribute without a graph");
        export_graph(*g, *out.mutable_g(), s.where + ": subgraph '" + key + "' of " + n.describe(),
                     /*is_main=*/false, n.name + "_" + key);
        return;
      }
      case Attribute::Kind::kGraphs: {
        out.set_type(onnx::AttributeProto::GRAPHS);
        const auto& graphs = *a.get_if<std::vector<std::shared_ptr<Graph>>>();
        for (size_t k = 0; k < graphs.size(); ++k) {
          if (!graphs[k]) throw Error(what + ": graph " + std::to_string(k) + " of the list is missing");
          const std::string suffix = key + "_" + std::to_string(k);
          export_graph(*graphs[k], *out.add_graphs(), s.where + ": subgraph '" + suffix + "' of " + n.describe(),
                       /*is_main=*/false, n.name + "_" + suffix);
        }
        return;
      }
    }
    throw Error(what + ": unknown attribute kind");
  }

  // Opset 13 made some attributes inputs; the kernels take either form, and graphs imported
  // from older opsets keep the attribute. Written here as the input form the opset requires.
  void promote_attributes_to_inputs(const Node& n, onnx::NodeProto& np, Scope& s) {
    const std::string& op = n.op_type;
    const char* attr = op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum" ? "axes"
                       : op == "Split"                                       ? "split"
                       : op == "Dropout"                                     ? "ratio"
                                                                             : nullptr;
    if (!attr || !n.has_attr(attr)) return;
    if (np.input_size() > 1 && !np.input(1).empty()) {
      throw Error(s.where + ": " + n.describe() + ": has both a '" + attr +
                  "' attribute and a second input; opset " + std::to_string(opset_) + " only has the input");
    }
    const Tensor value = op == "Dropout" ? Tensor::scalar<float>(n.attr_float(attr, 0.5f))
                                         : vector_tensor<int64_t>(n.attr_ints(attr));
    const std::string name = add_constant(s, n.name + "_" + attr, value);
    if (np.input_size() > 1) np.set_input(1, name);
    else np.add_input(name);
    auto* attrs = np.mutable_attribute();
    attrs->erase(std::remove_if(attrs->begin(), attrs->end(),
                                [&](const onnx::AttributeProto& a) { return a.name() == attr; }),
                 attrs->end());
  }

  // FusedConv(X, W, B?, Z?) -> Conv(X, W, B) [-> Add(., Z)] [-> activation];
  // FusedGemm(A, B, C?) -> Gemm(A, B, C) [-> activation]. The first node keeps the fused node's
  // name (the name the producer had before fusion), the last writes the fused node's output.
  void decompose_fused(const Node& n, Scope& s) {
    const bool conv = n.op_type == "FusedConv";
    if (!conv && n.op_type != "FusedGemm") {
      throw Error(s.where + ": " + n.describe() + ": not an op ONNX can express (the ai.xnn ops that can be "
                  "exported are FusedConv and FusedGemm)");
    }
    if (n.outputs.size() != 1 || n.outputs[0] < 0) {
      throw Error(s.where + ": " + n.describe() + ": expected exactly one output, got " + std::to_string(n.outputs.size()));
    }
    const kernels::Activation act = fused_activation(n);
    const int z = conv && n.inputs.size() > 3 ? n.inputs[3] : -1;
    const std::string& y = value_name(s.graph, n.outputs[0]);
    const int stages = (z >= 0 ? 1 : 0) + (act.kind != kernels::ActKind::kNone ? 1 : 0);

    // Each stage writes a fresh value, except the last, which writes y.
    int remaining = stages;
    auto stage_output = [&](const char* suffix) { return remaining-- == 0 ? y : fresh_value(y + "_" + suffix); };

    std::vector<std::string> base_inputs;
    for (size_t k = 0; k < n.inputs.size() && k < 3; ++k) base_inputs.push_back(value_name(s.graph, n.inputs[k]));
    while (!base_inputs.empty() && base_inputs.back().empty()) base_inputs.pop_back();
    std::string x = stage_output(conv ? "conv" : "gemm");
    onnx::NodeProto& base = add_node(s, conv ? "Conv" : "Gemm", n.name, base_inputs, {x});
    for (const auto& [key, attr] : n.attrs) {
      if (key != "activation" && key != "activation_params") fill_attribute(key, attr, n, *base.add_attribute(), s);
    }
    if (z >= 0) {
      const std::string sum = stage_output("add");
      add_node(s, "Add", fresh_node(n.name + "_add"), {x, value_name(s.graph, z)}, {sum});
      x = sum;
    }
    if (act.kind != kernels::ActKind::kNone) emit_activation(act, x, stage_output("act"), n, s);
  }

  void emit_activation(const kernels::Activation& act, const std::string& x, const std::string& y, const Node& n,
                       Scope& s) {
    const std::string base = n.name + "_" + kernels::act_kind_name(act.kind);
    auto float_attr = [](onnx::NodeProto& np, const char* key, float v) {
      auto* a = np.add_attribute();
      a->set_name(key);
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(v);
    };
    switch (act.kind) {
      case kernels::ActKind::kNone: return;
      case kernels::ActKind::kRelu: add_node(s, "Relu", fresh_node(base), {x}, {y}); return;
      case kernels::ActKind::kSigmoid: add_node(s, "Sigmoid", fresh_node(base), {x}, {y}); return;
      case kernels::ActKind::kClip: {
        const std::string lo = add_constant(s, base + "_min", Tensor::scalar<float>(act.alpha));
        const std::string hi = add_constant(s, base + "_max", Tensor::scalar<float>(act.beta));
        add_node(s, "Clip", fresh_node(base), {x, lo, hi}, {y});
        return;
      }
      case kernels::ActKind::kLeakyRelu:
        float_attr(add_node(s, "LeakyRelu", fresh_node(base), {x}, {y}), "alpha", act.alpha);
        return;
      case kernels::ActKind::kHardSigmoid: {
        onnx::NodeProto& np = add_node(s, "HardSigmoid", fresh_node(base), {x}, {y});
        float_attr(np, "alpha", act.alpha);
        float_attr(np, "beta", act.beta);
        return;
      }
      case kernels::ActKind::kHardSwish: {
        if (opset_ >= kHardSwishOpset) {
          add_node(s, "HardSwish", fresh_node(base), {x}, {y});
          return;
        }
        // HardSwish(x) = x * HardSigmoid(x) with alpha 1/6, beta 1/2 (ONNX's own definition).
        const std::string gate = fresh_value(y + "_gate");
        onnx::NodeProto& np = add_node(s, "HardSigmoid", fresh_node(base + "_gate"), {x}, {gate});
        float_attr(np, "alpha", 1.0f / 6.0f);
        float_attr(np, "beta", 0.5f);
        add_node(s, "Mul", fresh_node(base), {x, gate}, {y});
        return;
      }
      case kernels::ActKind::kSilu: {
        // No SiLU op in ONNX (up to opset 17): x * Sigmoid(x).
        const std::string gate = fresh_value(y + "_sigmoid");
        add_node(s, "Sigmoid", fresh_node(base + "_sigmoid"), {x}, {gate});
        add_node(s, "Mul", fresh_node(base), {x, gate}, {y});
        return;
      }
    }
    throw Error(s.where + ": " + n.describe() + ": activation " + kernels::act_kind_name(act.kind) +
                " has no ONNX decomposition");
  }

  const Model& model_;
  std::string where_;
  int64_t opset_;
  std::unordered_set<std::string> taken_values_, taken_nodes_;
  bool uses_contrib_domain_ = false;
};

void run_checker(const onnx::ModelProto& proto, const std::string& where) {
  try {
    onnx::checker::check_model(proto);
  } catch (const onnx::checker::ValidationError& e) {
    throw Error(where + ": the ONNX checker rejects the exported model: " + e.what());
  } catch (const std::exception& e) {
    throw Error(where + ": the ONNX checker failed on the exported model: " + e.what());
  }
}

}  // namespace

std::string export_onnx_bytes(const Model& model, const OnnxExportOptions& options) {
  const std::string where =
      "ONNX export of model '" + (model.graph.name.empty() ? std::string("main_graph") : model.graph.name) + "'";
  try {
    onnx::ModelProto proto = Exporter(model, where).build();
    proto.set_producer_name(options.producer_name);
    if (options.run_checker) run_checker(proto, where);
    const size_t size = proto.ByteSizeLong();
    if (size > static_cast<size_t>(INT_MAX)) {
      throw Error(where + ": " + std::to_string(size) +
                  " bytes exceed protobuf's 2 GiB limit (weights in external data files are not written yet)");
    }
    std::string bytes;
    if (!proto.SerializeToString(&bytes)) throw Error(where + ": protobuf serialization failed");
    return bytes;
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(where + ": out of memory");
  } catch (const std::exception& e) {
    throw Error(where + ": " + e.what());
  }
}

void export_onnx_file(const Model& model, const std::string& path, const OnnxExportOptions& options) {
  const std::string bytes = export_onnx_bytes(model, options);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(path + ": cannot open for writing: " + std::strerror(errno));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) throw Error(path + ": writing " + std::to_string(bytes.size()) + " bytes failed");
}

}  // namespace xnn
