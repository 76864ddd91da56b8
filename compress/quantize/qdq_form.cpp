#include "compress/quantize/qdq_form.h"

#include <map>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace xnn::quantize {
namespace {

class QdqRewriter {
 public:
  QdqRewriter(Model& m, QdqStats& stats) : g_(m.graph), stats_(stats) {}

  void run() {
    std::vector<Node> old = std::move(g_.nodes);
    g_.nodes.clear();
    for (Node& n : old) {
      const std::string& op = n.op_type;
      const bool contrib = n.domain == "com.microsoft";
      if (n.domain.empty() && op == "QLinearConv") conv(n);
      else if (n.domain.empty() && op == "QLinearMatMul") matmul(n);
      else if (contrib && op == "QGemm") gemm(n);
      else if (contrib && op == "QLinearAdd") add(n);
      else if (contrib && op == "QLinearConcat") concat(n);
      else if (contrib && (op == "QLinearAveragePool" || op == "QLinearGlobalAveragePool")) pool(n);
      else {
        g_.nodes.push_back(std::move(n));
        continue;
      }
      ++stats_.converted;
    }
  }

 private:
  int in(const Node& n, size_t i) const { return i < n.inputs.size() ? n.inputs[i] : -1; }

  const Tensor& constant(const Node& n, int v, const char* what) const {
    if (v < 0 || !g_.value(v).data) {
      throw Error(n.describe() + ": " + what + " must be a constant to write the QDQ form");
    }
    return *g_.value(v).data;
  }

  int new_value(const std::string& base, DType dtype) {
    std::string name = base;
    for (int k = 1; g_.find_value(name) >= 0; ++k) name = base + "_" + std::to_string(k);
    Value v;
    v.name = name;
    v.dtype = dtype;
    return g_.add_value(std::move(v));
  }

  void emit(const std::string& op, const std::string& name, std::vector<int> inputs, std::vector<int> outputs,
            std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.attrs = std::move(attrs);
    g_.nodes.push_back(std::move(n));
  }

  // DequantizeLinear(x, scale, zero_point) -> a new float value; axis only for per-axis scales.
  int dequantize(const Node& n, int x, int scale, int zero_point, int64_t axis = -1) {
    const int out = new_value(g_.value(x).name + "_dq", DType::kF32);
    std::map<std::string, Attribute> attrs;
    const Value& s = g_.value(scale);
    const bool per_axis = s.data ? s.data->numel() > 1 : false;
    if (per_axis) attrs["axis"] = Attribute(axis < 0 ? int64_t{1} : axis);
    std::vector<int> ins{x, scale};
    if (zero_point >= 0) ins.push_back(zero_point);
    emit("DequantizeLinear", n.name + "/dq_" + g_.value(x).name, std::move(ins), {out}, std::move(attrs));
    ++stats_.dequantize_nodes;
    return out;
  }

  void quantize(const Node& n, int x, int scale, int zero_point, int out) {
    std::vector<int> ins{x, scale};
    if (zero_point >= 0) ins.push_back(zero_point);
    emit("QuantizeLinear", n.name + "/q", std::move(ins), {out});
    ++stats_.quantize_nodes;
  }

  int float_out(const Node& n) { return new_value(g_.value(n.outputs[0]).name + "_f", DType::kF32); }

  // The int32 bias's DequantizeLinear: scale = multiplier · input_scale · weight_scale[c].
  int dequantize_bias(const Node& n, int bias, int x_scale, int w_scale, float multiplier) {
    const Tensor& xs = constant(n, x_scale, "the input scale");
    const Tensor& ws = constant(n, w_scale, "the weight scale");
    const int64_t count = constant(n, bias, "the bias").numel();
    if (ws.numel() != 1 && ws.numel() != count) {
      throw Error(n.describe() + ": weight scales (" + std::to_string(ws.numel()) + ") do not match the bias (" +
                  std::to_string(count) + ")");
    }
    std::vector<float> scale(static_cast<size_t>(count));
    for (int64_t c = 0; c < count; ++c) {
      scale[static_cast<size_t>(c)] = multiplier * xs.data<float>()[0] * ws.data<float>()[ws.numel() == 1 ? 0 : c];
    }
    const std::string base = g_.value(bias).name + "_scale";
    std::string name = base;
    for (int k = 1; g_.find_value(name) >= 0; ++k) name = base + "_" + std::to_string(k);
    const int scale_v = g_.add_constant(name, Tensor::from_vector<float>(scale, {count}));
    return dequantize(n, bias, scale_v, -1, 0);
  }

  void conv(const Node& n) {
    const int x = dequantize(n, n.inputs[0], n.inputs[1], in(n, 2));
    const int w = dequantize(n, n.inputs[3], n.inputs[4], in(n, 5), 0);
    std::vector<int> ins{x, w};
    if (in(n, 8) >= 0) ins.push_back(dequantize_bias(n, n.inputs[8], n.inputs[1], n.inputs[4], 1.0f));
    const int y = float_out(n);
    emit("Conv", n.name, std::move(ins), {y}, n.attrs);
    quantize(n, y, n.inputs[6], in(n, 7), n.outputs[0]);
  }

  void matmul(const Node& n) {
    const int a = dequantize(n, n.inputs[0], n.inputs[1], in(n, 2));
    const int b = dequantize(n, n.inputs[3], n.inputs[4], in(n, 5), 1);
    const int y = float_out(n);
    emit("MatMul", n.name, {a, b}, {y});
    quantize(n, y, n.inputs[6], in(n, 7), n.outputs[0]);
  }

  void gemm(const Node& n) {
    const bool trans_b = n.attr_int("transB", 0) != 0;
    const float alpha = n.attr_float("alpha", 1.0f);
    const int a = dequantize(n, n.inputs[0], n.inputs[1], in(n, 2));
    const int b = dequantize(n, n.inputs[3], n.inputs[4], in(n, 5), trans_b ? 0 : 1);
    std::vector<int> ins{a, b};
    if (in(n, 6) >= 0) ins.push_back(dequantize_bias(n, n.inputs[6], n.inputs[1], n.inputs[4], alpha));
    const bool quantized_out = in(n, 7) >= 0;
    const int y = quantized_out ? float_out(n) : n.outputs[0];
    std::map<std::string, Attribute> attrs;
    for (const char* k : {"transA", "transB", "alpha"}) {
      if (n.attrs.count(k)) attrs[k] = n.attrs.at(k);
    }
    emit("Gemm", n.name, std::move(ins), {y}, std::move(attrs));
    if (quantized_out) quantize(n, y, n.inputs[7], in(n, 8), n.outputs[0]);
  }

  void add(const Node& n) {
    const int a = dequantize(n, n.inputs[0], n.inputs[1], in(n, 2));
    const int b = dequantize(n, n.inputs[3], n.inputs[4], in(n, 5));
    const int y = float_out(n);
    emit("Add", n.name, {a, b}, {y});
    quantize(n, y, n.inputs[6], in(n, 7), n.outputs[0]);
  }

  void concat(const Node& n) {
    std::vector<int> ins;
    // (Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) triples; the op's schema checked the count)
    for (size_t i = 2; i + 1 < n.inputs.size(); i += 3) {
      ins.push_back(dequantize(n, n.inputs[i], n.inputs[i + 1], in(n, i + 2)));
    }
    const int y = float_out(n);
    emit("Concat", n.name, std::move(ins), {y}, {{"axis", Attribute(n.attr_int("axis"))}});
    quantize(n, y, n.inputs[0], in(n, 1), n.outputs[0]);
  }

  void pool(const Node& n) {
    if (n.attr_int("channels_last", 0) != 0) {
      throw Error(n.describe() + ": channels_last has no QDQ equivalent (ONNX pools are channels-first)");
    }
    const bool global = n.op_type == "QLinearGlobalAveragePool";
    const int x = dequantize(n, n.inputs[0], n.inputs[1], in(n, 2));
    const int y = float_out(n);
    std::map<std::string, Attribute> attrs = n.attrs;
    attrs.erase("channels_last");
    emit(global ? "GlobalAveragePool" : "AveragePool", n.name, {x}, {y}, std::move(attrs));
    quantize(n, y, n.inputs[3], in(n, 4), n.outputs[0]);
  }

  Graph& g_;
  QdqStats& stats_;
};

}  // namespace

Model to_qdq_form(const Model& model, QdqStats* stats) {
  Model out = model;
  QdqStats local;
  QdqRewriter(out, stats ? *stats : local).run();
  out.graph.validate("QDQ form");
  return out;
}

}  // namespace xnn::quantize
