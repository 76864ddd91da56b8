#include "engine/onnx/legacy_rewrites.h"

#include <algorithm>
#include <map>
#include <unordered_set>
#include <utility>

#include "engine/runtime/fold_constants.h"

namespace xnn {
namespace {

// A 1-D tensor holding `v`. (Tensor::from_vector would memcpy from a null pointer when `v` is
// empty, which is undefined behaviour.)
template <typename T, typename Range>
Tensor vector_tensor(const Range& v) {
  Tensor t(dtype_of<T>(), {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), static_cast<T*>(t.raw()));
  return t;
}

// Adds values and nodes while the rewriter walks the graph. Helper nodes are emitted right
// before or after the node being rewritten, so the node list stays topologically sorted and
// static shapes can be propagated as the walk goes.
class GraphEditor {
 public:
  explicit GraphEditor(Graph& g) : g_(g) {
    for (const Value& v : g.values) names_.insert(v.name);
  }

  std::string fresh_name(const std::string& base) {
    std::string name = base;
    for (int k = 2; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  int add_value(const std::string& base, DType dtype) {
    Value v;
    v.name = fresh_name(base);
    v.dtype = dtype;
    return g_.add_value(std::move(v));
  }

  int add_constant(const std::string& base, Tensor t) { return g_.add_constant(fresh_name(base), std::move(t)); }

  int add_ints(const std::string& base, const std::vector<int64_t>& v) {
    return add_constant(base, vector_tensor<int64_t>(v));
  }

  // A scalar of `dtype` (f32 when unknown) holding `v`, for inputs that must match X's type.
  int add_scalar_like(const std::string& base, DType dtype, float v) {
    Tensor f = Tensor::scalar<float>(v);
    if (dtype == DType::kUnknown || dtype == DType::kF32) return add_constant(base, std::move(f));
    Tensor t(dtype, {});
    convert_tensor(f, t);
    return add_constant(base, std::move(t));
  }

  void add_node_before(Node n) { before_.push_back(std::move(n)); }
  void add_node_after(Node n) { after_.push_back(std::move(n)); }

  std::vector<Node> take_before() { return std::exchange(before_, {}); }
  std::vector<Node> take_after() { return std::exchange(after_, {}); }

 private:
  Graph& g_;
  std::unordered_set<std::string> names_;
  std::vector<Node> before_, after_;
};

class LegacyRewriter {
 public:
  LegacyRewriter(Graph& g, int64_t opset, std::string where, std::vector<std::string>& unsupported)
      : g_(g), opset_(opset), where_(std::move(where)), unsupported_(unsupported), edit_(g) {}

  // Expects `g_` topologically sorted. Rank-dependent rewrites (Softmax, legacy broadcast,
  // PRelu) read input shapes, which are propagated node by node as the walk goes: the file's
  // value_info rarely covers intermediates.
  void run() {
    std::vector<Node> nodes = std::move(g_.nodes);
    g_.nodes.clear();
    g_.nodes.reserve(nodes.size());
    for (Node& n : nodes) {
      if (n.domain.empty()) rewrite(n);
      for (Node& before : edit_.take_before()) emit(std::move(before));
      std::vector<Node> after = edit_.take_after();
      emit(std::move(n));
      for (Node& a : after) emit(std::move(a));
    }
  }

  void emit(Node n) {
    if (opset_ < 13) propagate_static_shapes(g_, n);
    g_.nodes.push_back(std::move(n));
  }

 private:
  [[noreturn]] void fail(const Node& n, const std::string& msg) const {
    throw Error(where_ + ": " + n.describe() + ": " + msg);
  }

  void require_inputs(const Node& n, size_t count) const {
    if (n.inputs.size() < count || n.inputs[0] < 0) {
      fail(n, "expected at least " + std::to_string(count) + " input(s), got " + std::to_string(n.inputs.size()));
    }
    if (n.outputs.empty() || n.outputs[0] < 0) fail(n, "has no output");
  }

  void rewrite(Node& n) {
    const std::string& op = n.op_type;
    if (opset_ < 7) {
      n.attrs.erase("consumed_inputs");  // opset 1-5 memory-planning hint, meaningless now
      if (op == "Gemm") n.attrs.erase("broadcast");  // Gemm 7 always broadcasts C
      if (op == "Dropout" || op == "BatchNormalization") n.attrs.erase("is_test");
      if (is_legacy_broadcast_op(op)) rewrite_legacy_broadcast(n);
      if (op == "PRelu") rewrite_prelu6(n);
    }
    if (op == "Reshape" && opset_ < 5) rewrite_reshape1(n);
    if (op == "Concat" && opset_ < 4 && !n.has_attr("axis")) n.attrs["axis"] = int64_t{1};  // Concat-1 default
    if (op == "Cast" && opset_ < 6) rewrite_cast1(n);
    if (opset_ < 13 && (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax")) rewrite_softmax(n);
    else if (op == "Upsample") rewrite_upsample(n);
    else if (op == "Resize" && opset_ < 11) rewrite_resize10(n);
    else if (op == "Pad" && opset_ < 11) rewrite_pad(n);
    else if (op == "Slice" && opset_ < 10) rewrite_slice(n);
    else if (op == "Clip" && opset_ < 11) rewrite_clip(n);
    else if (op == "BatchNormalization" && opset_ < 9) rewrite_batchnorm(n);
  }

  // Before opset 13 these ops coerced X to 2-D [prod(d<axis), prod(d>=axis)] and normalised
  // each row; opset 13 normalises along one axis. Equal when `axis` is the last axis.
  void rewrite_softmax(Node& n) {
    require_inputs(n, 1);
    const int64_t axis = n.attr_int("axis", 1);
    const Value& x = g_.value(n.inputs[0]);
    const int rank = x.has_shape ? static_cast<int>(x.shape.size()) : -1;
    if (rank >= 1) {
      if (axis < -rank || axis >= rank) {
        fail(n, "axis " + std::to_string(axis) + " is out of range for input '" + x.name + "' of rank " +
                    std::to_string(rank));
      }
      if ((axis < 0 ? axis + rank : axis) == rank - 1) {
        n.attrs["axis"] = int64_t{-1};
        return;
      }
    }
    // `x` refers into g_.values, which grows below: copy what is needed first.
    const int x_index = n.inputs[0];
    const DType dtype = x.dtype;
    const std::string x_name = x.name;
    // X's shape, to restore after the 2-D op. Computed by Shape even when X's shape is
    // declared static: constant folding turns it into a constant when that shape is exact.
    const int shape_index = edit_.add_value(x_name + "_shape", DType::kI64);
    Node shape;
    shape.op_type = "Shape";
    shape.name = n.name + "_shape";
    shape.inputs = {x_index};
    shape.outputs = {shape_index};
    edit_.add_node_before(std::move(shape));
    const int y_index = n.outputs[0];
    const std::string y_name = g_.value(y_index).name;
    const int flat_index = edit_.add_value(y_name + "_2d_input", dtype);
    const int op_2d_index = edit_.add_value(y_name + "_2d", g_.value(y_index).dtype);

    Node flatten;
    flatten.op_type = "Flatten";
    flatten.name = n.name + "_flatten";
    flatten.inputs = {x_index};
    flatten.outputs = {flat_index};
    flatten.attrs["axis"] = axis;
    edit_.add_node_before(std::move(flatten));

    Node reshape;
    reshape.op_type = "Reshape";
    reshape.name = n.name + "_reshape";
    reshape.inputs = {op_2d_index, shape_index};
    reshape.outputs = {y_index};
    edit_.add_node_after(std::move(reshape));

    n.inputs[0] = flat_index;
    n.outputs[0] = op_2d_index;
    n.attrs["axis"] = int64_t{-1};
  }

  // Reshape-1: the target shape was an attribute; an input since opset 5.
  void rewrite_reshape1(Node& n) {
    require_inputs(n, 1);
    if (n.inputs.size() >= 2 || !n.has_attr("shape")) return;
    n.inputs.push_back(edit_.add_ints(n.name + "_shape", n.attr_ints("shape")));
    n.attrs.erase("shape");
  }

  // Cast-1 named the target type as a string ("FLOAT"); an enum code since opset 6.
  void rewrite_cast1(Node& n) {
    const auto it = n.attrs.find("to");
    if (it == n.attrs.end() || !it->second.get_if<std::string>()) return;
    static const std::map<std::string, int64_t> codes = {
        {"FLOAT", 1},   {"UINT8", 2},  {"INT8", 3},    {"UINT16", 4},  {"INT16", 5},   {"INT32", 6},  {"INT64", 7},
        {"STRING", 8},  {"BOOL", 9},   {"FLOAT16", 10}, {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}};
    const auto code = codes.find(*it->second.get_if<std::string>());
    if (code == codes.end()) fail(n, "unknown target type '" + *it->second.get_if<std::string>() + "'");
    it->second = code->second;
  }

  // Upsample (opsets 7-9; deprecated in 10) is Resize with asymmetric coordinates and floor
  // rounding for nearest. Scales were an attribute before opset 9, an input since.
  void rewrite_upsample(Node& n) {
    require_inputs(n, 1);
    std::string mode = n.attr_string("mode", "nearest");
    if (mode == "bilinear") mode = "linear";  // Upsample-1 spelling
    int scales;
    if (n.inputs.size() >= 2 && n.inputs[1] >= 0) {
      scales = n.inputs[1];
    } else if (n.has_attr("scales")) {
      const std::vector<float> s = n.attr_floats("scales");
      scales = edit_.add_constant(n.name + "_scales", vector_tensor<float>(s));
    } else if (n.has_attr("height_scale") && n.has_attr("width_scale")) {  // Upsample-1, 4-D only
      const std::vector<float> s = {1.0f, 1.0f, n.attr_float("height_scale", 1.0f), n.attr_float("width_scale", 1.0f)};
      scales = edit_.add_constant(n.name + "_scales", vector_tensor<float>(s));
    } else {
      fail(n, "needs scales (an input since opset 9, an attribute before)");
    }
    n.op_type = "Resize";
    n.inputs = {n.inputs[0], -1, scales};
    set_resize10_attrs(n, mode);
  }

  // Resize-10 (X, scales) had Upsample's coordinate rules; opset 11 added roi and sizes.
  void rewrite_resize10(Node& n) {
    require_inputs(n, 2);
    const std::string mode = n.attr_string("mode", "nearest");
    n.inputs = {n.inputs[0], -1, n.inputs[1]};
    set_resize10_attrs(n, mode);
  }

  static void set_resize10_attrs(Node& n, const std::string& mode) {
    n.attrs.clear();
    n.attrs["mode"] = mode;
    n.attrs["coordinate_transformation_mode"] = "asymmetric";
    if (mode == "nearest") n.attrs["nearest_mode"] = "floor";
  }

  // Pad-2 (and Pad-1's `paddings`): pads and value were attributes; inputs since opset 11.
  void rewrite_pad(Node& n) {
    require_inputs(n, 1);
    const char* pads_attr = n.has_attr("pads") ? "pads" : "paddings";
    if (!n.has_attr(pads_attr)) fail(n, "required attribute 'pads' is missing");
    const std::vector<int64_t> pads = n.attr_ints(pads_attr);
    const float value = n.attr_float("value", 0.0f);
    const DType dtype = g_.value(n.inputs[0]).dtype;
    const int pads_index = edit_.add_ints(n.name + "_pads", pads);
    const int value_index = value != 0.0f ? edit_.add_scalar_like(n.name + "_value", dtype, value) : -1;
    n.inputs = {n.inputs[0], pads_index};
    if (value_index >= 0) n.inputs.push_back(value_index);
    n.attrs.erase("pads");
    n.attrs.erase("paddings");
    n.attrs.erase("value");
  }

  // Slice-1: starts/ends/axes attributes; inputs since opset 10.
  void rewrite_slice(Node& n) {
    require_inputs(n, 1);
    if (!n.has_attr("starts") || !n.has_attr("ends")) fail(n, "required attributes 'starts' and 'ends' are missing");
    std::vector<int> inputs = {n.inputs[0], edit_.add_ints(n.name + "_starts", n.attr_ints("starts")),
                               edit_.add_ints(n.name + "_ends", n.attr_ints("ends"))};
    if (n.has_attr("axes")) inputs.push_back(edit_.add_ints(n.name + "_axes", n.attr_ints("axes")));
    n.inputs = std::move(inputs);
    n.attrs.erase("starts");
    n.attrs.erase("ends");
    n.attrs.erase("axes");
  }

  // Clip-6: min/max attributes (defaults: the float range); optional inputs since opset 11.
  void rewrite_clip(Node& n) {
    require_inputs(n, 1);
    const DType dtype = g_.value(n.inputs[0]).dtype;
    const int min_index = n.has_attr("min") ? edit_.add_scalar_like(n.name + "_min", dtype, n.attr_float("min", 0)) : -1;
    const int max_index = n.has_attr("max") ? edit_.add_scalar_like(n.name + "_max", dtype, n.attr_float("max", 0)) : -1;
    n.inputs = {n.inputs[0]};
    if (min_index >= 0 || max_index >= 0) n.inputs.push_back(min_index);
    if (max_index >= 0) n.inputs.push_back(max_index);
    n.attrs.erase("min");
    n.attrs.erase("max");
  }

  // BatchNormalization < 9: `spatial` = 1 (the default) is today's behaviour; 0 normalised
  // per activation with [C, D1, ...] statistics, which no kernel implements.
  void rewrite_batchnorm(Node& n) {
    if (n.attr_int("spatial", 1) != 1) {
      unsupported_.push_back(where_ + ": " + n.describe() + ": spatial=0 (per-activation statistics) is not supported");
    }
    n.attrs.erase("spatial");
  }

  static bool is_legacy_broadcast_op(const std::string& op) {
    static const std::unordered_set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or",
                                                        "Xor", "Equal", "Greater", "Less"};
    return ops.count(op) != 0;
  }

  // Before opset 7 binary ops broadcast only with broadcast=1, matching B's dims to A's
  // starting at `axis` (default: trailing, which is numpy's rule).
  void rewrite_legacy_broadcast(Node& n) {
    const bool broadcast = n.attr_int("broadcast", 0) != 0;
    const bool has_axis = n.has_attr("axis");
    const int64_t axis = n.attr_int("axis", 0);
    n.attrs.erase("broadcast");
    n.attrs.erase("axis");
    if (broadcast && has_axis) align_second_input(n, axis, "legacy broadcast with 'axis'");
  }

  // PRelu before opset 7 applied a 1-D slope of C values along the channel axis (1); since
  // opset 7 the slope broadcasts numpy-style (from the right).
  void rewrite_prelu6(Node& n) {
    if (n.inputs.size() < 2 || n.inputs[1] < 0) return;
    const Value& slope = g_.value(n.inputs[1]);
    const bool per_channel = slope.has_shape && slope.shape.size() == 1 &&
                             !(slope.shape[0].known() && slope.shape[0].value == 1);
    if (per_channel) align_second_input(n, 1, "a per-channel PRelu slope");
  }

  // Makes numpy broadcasting line input B up with input A's dims starting at `axis`, by giving
  // B trailing 1-dims: a reshaped constant, or an Unsqueeze when B is computed.
  void align_second_input(Node& n, int64_t axis, const char* what) {
    if (n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0) return;
    const Value& a = g_.value(n.inputs[0]);
    const Value& b = g_.value(n.inputs[1]);
    if (!a.has_shape || !b.has_shape) {
      unsupported_.push_back(where_ + ": " + n.describe() + ": " + what +
                             " needs the ranks of both inputs, which are unknown");
      return;
    }
    const int64_t rank_a = static_cast<int64_t>(a.shape.size());
    const int64_t rank_b = static_cast<int64_t>(b.shape.size());
    const int64_t start = axis < 0 ? axis + rank_a : axis;
    if (start < 0 || start + rank_b > rank_a) {
      fail(n, std::string(what) + ": axis " + std::to_string(axis) + " does not fit input B of rank " +
                  std::to_string(rank_b) + " into input A of rank " + std::to_string(rank_a));
    }
    const int64_t trailing = rank_a - start - rank_b;
    if (trailing == 0) return;
    if (b.is_constant()) {
      Shape shape = b.data->shape();
      shape.insert(shape.end(), static_cast<size_t>(trailing), 1);
      n.inputs[1] = edit_.add_constant(b.name + "_aligned", b.data->reshaped(shape));
      return;
    }
    std::vector<int64_t> axes;
    for (int64_t i = 0; i < trailing; ++i) axes.push_back(rank_b + i);
    const DType dtype = b.dtype;
    const int b_index = n.inputs[1];
    const std::string b_name = b.name;
    const int axes_index = edit_.add_ints(n.name + "_unsqueeze_axes", axes);
    const int aligned = edit_.add_value(b_name + "_aligned", dtype);
    Node unsqueeze;
    unsqueeze.op_type = "Unsqueeze";
    unsqueeze.name = n.name + "_align_b";
    unsqueeze.inputs = {b_index, axes_index};
    unsqueeze.outputs = {aligned};
    edit_.add_node_before(std::move(unsqueeze));
    n.inputs[1] = aligned;
  }

  Graph& g_;
  int64_t opset_;
  std::string where_;
  std::vector<std::string>& unsupported_;
  GraphEditor edit_;
};

}  // namespace

void rewrite_legacy_ops(Graph& graph, int64_t opset, const std::string& where, std::vector<std::string>& unsupported) {
  LegacyRewriter(graph, opset, where, unsupported).run();
  for (Node& n : graph.nodes) {
    for (auto& [key, attr] : n.attrs) {
      const std::string sub_where = where + ": subgraph '" + key + "' of " + n.describe();
      if (auto g = attr.get_if<std::shared_ptr<Graph>>()) {
        if (*g) rewrite_legacy_ops(**g, opset, sub_where, unsupported);
      } else if (auto gs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
        for (const auto& sg : *gs) {
          if (sg) rewrite_legacy_ops(*sg, opset, sub_where, unsupported);
        }
      }
    }
  }
}

}  // namespace xnn
