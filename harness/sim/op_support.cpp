#include "harness/sim/op_support.h"

#include <algorithm>
#include <set>

namespace xnn::sim {
namespace {

const std::set<std::string> kFreeOps{"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout",
                                     "Constant", "Shape", "Size"};
const std::set<std::string> kPoolOps{"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"};
const std::set<std::string> kElementwiseOps{
    "Relu", "LeakyRelu", "PRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Selu",
    "Softplus", "Softsign", "Erf", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Abs", "Neg",
    "Reciprocal", "Floor", "Ceil", "Min", "Max", "Sum", "Mean", "BatchNormalization", "Cast", "Where",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Sign", "Round"};

std::string dims_text(const std::vector<int64_t>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += sep;
    s += std::to_string(v[i]);
  }
  return s;
}

std::string list_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  s += dims_text(v, ", ");
  return s + "]";
}

std::string dtype_word(DType t) {
  switch (t) {
    case DType::kF32: return "fp32";
    case DType::kF16: return "fp16";
    case DType::kI8:
    case DType::kU8: return "int8";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kBool: return "bool";
    case DType::kF64: return "fp64";
    default: return "";
  }
}

bool is_conv_like(const std::string& op) {
  return op == "Conv" || op == "ConvTranspose" || op == "QLinearConv" || op == "ConvInteger";
}

// Spatial kernel dims of a conv-like or pooling node (QLinearConv's weights are input 3).
std::vector<int64_t> kernel_dims(const Node& node, const NodeCost& cost, const std::string& op) {
  if (is_conv_like(op)) {
    const size_t w = op == "QLinearConv" ? 3 : 1;
    if (cost.input_shapes.size() > w && cost.input_shapes[w].size() > 2) {
      return std::vector<int64_t>(cost.input_shapes[w].begin() + 2, cost.input_shapes[w].end());
    }
    return node.attr_ints("kernel_shape");
  }
  if (op == "MaxPool" || op == "AveragePool" || op == "LpPool") return node.attr_ints("kernel_shape");
  return {};
}

bool has_spatial_window(const std::string& op) {
  return is_conv_like(op) || op == "MaxPool" || op == "AveragePool" || op == "LpPool";
}

std::string check_constraint(const OpConstraint& c, const Node& node, const NodeCost& cost, const std::string& op) {
  if (has_spatial_window(op)) {
    const std::vector<int64_t> k = kernel_dims(node, cost, op);
    if (c.max_kernel > 0 && std::any_of(k.begin(), k.end(), [&](int64_t d) { return d > c.max_kernel; })) {
      return op + " kernel " + dims_text(k, "x") + " > max " + std::to_string(c.max_kernel);
    }
    const size_t spatial = k.size();
    std::vector<int64_t> strides = node.attr_ints("strides");
    if (strides.empty()) strides.assign(spatial, 1);
    for (int64_t s : strides) {
      if (!c.strides.empty() && std::find(c.strides.begin(), c.strides.end(), s) == c.strides.end()) {
        return op + " stride " + std::to_string(s) + " not in allowed strides " + list_text(c.strides);
      }
    }
    std::vector<int64_t> dil = node.attr_ints("dilations");
    if (dil.empty()) dil.assign(spatial, 1);
    for (int64_t d : dil) {
      if (!c.dilations.empty() && std::find(c.dilations.begin(), c.dilations.end(), d) == c.dilations.end()) {
        return op + " dilation " + std::to_string(d) + " not in allowed dilations " + list_text(c.dilations);
      }
    }
  }
  auto check_channels = [&](const Shape& s, const char* which) -> std::string {
    if (s.size() < 2) return "";
    const int64_t ch = s[1];
    if (c.channel_multiple > 0 && ch % c.channel_multiple != 0) {
      return op + " " + which + " channels " + std::to_string(ch) + " not a multiple of " +
             std::to_string(c.channel_multiple);
    }
    if (c.max_channels > 0 && ch > c.max_channels) {
      return op + " " + which + " channels " + std::to_string(ch) + " > max " + std::to_string(c.max_channels);
    }
    return "";
  };
  if (!cost.input_shapes.empty()) {
    if (std::string r = check_channels(cost.input_shapes[0], "input"); !r.empty()) return r;
  }
  if (!cost.output_shapes.empty()) {
    if (std::string r = check_channels(cost.output_shapes[0], "output"); !r.empty()) return r;
  }
  if (c.max_batch > 0 && !cost.input_shapes.empty() && !cost.input_shapes[0].empty() &&
      cost.input_shapes[0][0] > c.max_batch) {
    return op + " batch " + std::to_string(cost.input_shapes[0][0]) + " > max " + std::to_string(c.max_batch);
  }
  auto check_tensor = [&](const Shape& s) -> std::string {
    if (c.max_rank > 0 && static_cast<int64_t>(s.size()) > c.max_rank) {
      return op + " tensor rank " + std::to_string(s.size()) + " > max " + std::to_string(c.max_rank);
    }
    for (int64_t d : s) {
      if (c.max_dim > 0 && d > c.max_dim) {
        return op + " dimension " + std::to_string(d) + " > max " + std::to_string(c.max_dim);
      }
    }
    if (c.max_elements > 0 && shape_numel(s) > c.max_elements) {
      return op + " tensor of " + std::to_string(shape_numel(s)) + " elements > max " + std::to_string(c.max_elements);
    }
    return "";
  };
  for (const Shape& s : cost.input_shapes) {
    if (std::string r = check_tensor(s); !r.empty()) return r;
  }
  for (const Shape& s : cost.output_shapes) {
    if (std::string r = check_tensor(s); !r.empty()) return r;
  }
  return "";
}

}  // namespace

std::string base_op_type(const Node& node) {
  if (node.domain == "ai.xnn" && node.op_type == "FusedConv") return "Conv";
  if (node.domain == "ai.xnn" && node.op_type == "FusedGemm") return "Gemm";
  return node.op_type;
}

bool is_free_op(const Node& node) { return node.domain.empty() && kFreeOps.count(node.op_type) != 0; }

OpClass classify_op(const Node& node, const NodeCost& cost) {
  const std::string op = base_op_type(node);
  if (is_conv_like(op)) {
    const int64_t group = node.attr_int("group", 1);
    const bool depthwise = group > 1 && !cost.input_shapes.empty() && cost.input_shapes[0].size() > 1 &&
                           cost.input_shapes[0][1] == group;
    return depthwise ? OpClass::kDepthwise : OpClass::kConv;
  }
  if (op == "Gemm" || op == "MatMul" || op == "QLinearMatMul" || op == "MatMulInteger") return OpClass::kGemm;
  if (kPoolOps.count(op)) return OpClass::kPool;
  if (kElementwiseOps.count(op)) return OpClass::kElementwise;
  return OpClass::kOther;
}

std::string node_dtype(const Graph& graph, const Node& node) {
  for (int o : node.outputs) {
    if (o >= 0) {
      const std::string w = dtype_word(graph.value(o).dtype);
      if (!w.empty()) return w;
      break;
    }
  }
  for (int i : node.inputs) {
    if (i >= 0) {
      const std::string w = dtype_word(graph.value(i).dtype);
      if (!w.empty()) return w;
      break;
    }
  }
  return "fp32";
}

std::string unsupported_reason(const DeviceProfile& device, const Graph& graph, const Node& node, const NodeCost& cost) {
  const std::string dtype = node_dtype(graph, node);
  if (!device.accepts_dtype(dtype)) {
    std::string accepted;
    for (const std::string& t : device.dtypes) accepted += (accepted.empty() ? "" : ", ") + t;
    return "dtype " + dtype + " unsupported: " + accepted + " only";
  }
  if (device.all_ops) return "";
  const std::string op = base_op_type(node);
  auto it = device.ops.find(op);
  if (it == device.ops.end()) return "op " + op + " not supported";
  if (std::string r = check_constraint(it->second, node, cost, op); !r.empty()) return r;
  // An engine-fused node also needs its epilogue: the residual Add and the activation.
  if (node.domain == "ai.xnn") {
    if (op == "Conv" && node.inputs.size() > 3 && node.inputs[3] >= 0 && !device.ops.count("Add")) {
      return "fused residual Add not supported";
    }
    const std::string act = node.attr_string("activation", "");
    if (!act.empty() && !device.ops.count(act)) return "fused activation " + act + " not supported";
  }
  return "";
}

}  // namespace xnn::sim
