#include "compress/quantize/qat.h"

#include <set>
#include <unordered_set>

#include "engine/core/error.h"
#include "engine/passes/eliminate_dead_code.h"
#include "engine/passes/pass_utils.h"

namespace xnn::quantize {
namespace {

constexpr const char* kFakeQuantize = "FakeQuantize";
constexpr const char* kXnnDomain = "ai.xnn";

bool is_fake_quantize(const Node& n) { return n.op_type == kFakeQuantize && n.domain == kXnnDomain; }

// The per-channel axis of a layer's weight (input 1) in the int8 rewrite, or -2: not a weighted layer.
int weight_axis(const Node& n) {
  if (n.op_type == "Conv") return 0;
  if (n.op_type == "Gemm") return n.attr_int("transB", 0) != 0 ? 0 : 1;
  if (n.op_type == "MatMul") return 1;
  return -2;
}

}  // namespace

QatGraph insert_fake_quantization(const Model& float_model, const std::map<std::string, Range>& ranges,
                                  const QuantizeOptions& options) {
  QuantizeReport report;
  const Model int8 = quantize_model_graph(float_model, ranges, options, &report);
  const Graph& src = float_model.graph;
  const Graph& q = int8.graph;

  QatGraph out;
  out.model = std::make_shared<Model>(float_model);
  Graph& g = out.model->graph;
  std::unordered_set<std::string> taken = passes::value_names(g);
  std::unordered_set<std::string> node_names;
  for (const Node& n : g.nodes) node_names.insert(n.name);

  // Activations: float value -> its fake-quantised replacement, with the uint8 tensor's parameters.
  std::map<int, int> replaced;
  std::map<int, Node> activation_fq;  // by the float value it reads
  for (size_t v = 0; v < src.values.size(); ++v) {
    const Value& f = src.values[v];
    if (f.is_constant()) continue;
    const int qv = q.find_value(f.name + "_quantized");
    if (qv < 0) continue;
    const Value& u = q.value(qv);
    if (u.is_constant() || u.dtype != DType::kU8 || !u.quant || u.quant->scale.size() != 1) continue;
    Value fq_value;
    fq_value.name = passes::fresh_name(f.name + "_fake_quantized", taken);
    fq_value.dtype = DType::kF32;
    fq_value.has_shape = f.has_shape;
    fq_value.shape = f.shape;
    const int fv = g.add_value(std::move(fq_value));
    const int scale = g.add_constant(passes::fresh_name(f.name + "_qat_scale", taken), Tensor::scalar<float>(u.quant->scale[0]));
    const int zp = g.add_constant(passes::fresh_name(f.name + "_qat_zero_point", taken),
                                  Tensor::scalar<uint8_t>(static_cast<uint8_t>(u.quant->zero_point.at(0))));
    Node n;
    n.op_type = kFakeQuantize;
    n.domain = kXnnDomain;
    n.name = passes::fresh_name(f.name + "_fake_quantize", node_names);
    n.inputs = {static_cast<int>(v), scale, zp};
    n.outputs = {fv};
    replaced[static_cast<int>(v)] = fv;
    activation_fq.emplace(static_cast<int>(v), std::move(n));
  }

  // Weights of the layers that run in int8.
  const std::set<std::string> int8_layers(report.int8_layers.begin(), report.int8_layers.end());
  std::vector<Node> nodes;
  auto emit_activation_fq = [&](int v) {
    auto it = activation_fq.find(v);
    if (it == activation_fq.end()) return;
    nodes.push_back(std::move(it->second));
    activation_fq.erase(it);
    ++out.activation_fake_quants;
  };
  for (int v : g.inputs) emit_activation_fq(v);
  for (Node n : g.nodes) {
    for (int& v : n.inputs) {
      auto it = replaced.find(v);
      if (it != replaced.end()) v = it->second;
    }
    const int axis = weight_axis(n);
    if (axis >= -1 && int8_layers.count(n.name) && n.inputs.size() > 1 && n.inputs[1] >= 0 && g.value(n.inputs[1]).is_constant()) {
      const Value& w = g.value(n.inputs[1]);
      Value fq_value;
      fq_value.name = passes::fresh_name(w.name + "_fake_quantized", taken);
      fq_value.dtype = DType::kF32;
      fq_value.has_shape = true;
      for (int64_t d : w.data->shape()) fq_value.shape.push_back(Dim::fixed(d));
      const int weight = n.inputs[1];
      const int fv = g.add_value(std::move(fq_value));
      Node fq;
      fq.op_type = kFakeQuantize;
      fq.domain = kXnnDomain;
      fq.name = passes::fresh_name(n.name + "_weight_fake_quantize", node_names);
      fq.inputs = {weight};
      fq.outputs = {fv};
      fq.attrs["axis"] = Attribute(static_cast<int64_t>(options.per_channel ? axis : -1));
      const int qmax = weight_qmax(options, n, *w.data);
      if (qmax != kWeightQmax) fq.attrs["qmax"] = Attribute(static_cast<int64_t>(qmax));
      nodes.push_back(std::move(fq));
      n.inputs[1] = fv;
      ++out.weight_fake_quants;
    }
    const std::vector<int> produced = n.outputs;
    nodes.push_back(std::move(n));
    for (int v : produced) emit_activation_fq(v);
  }
  g.nodes = std::move(nodes);
  for (int& v : g.outputs) {
    auto it = replaced.find(v);
    if (it != replaced.end()) v = it->second;
  }
  if (out.activation_fake_quants + out.weight_fake_quants == 0) {
    throw Error("QAT: the int8 rewrite quantises nothing in this model (no layer with calibrated ranges), so there is "
                "nothing to fake-quantise");
  }
  g.validate("QAT fake quantisation");
  return out;
}

Model strip_fake_quantization(const Model& qat_model) {
  Model m = qat_model;
  Graph& g = m.graph;
  std::map<int, int> source;  // FakeQuantize output -> its input
  std::vector<Node> kept;
  for (Node& n : g.nodes) {
    if (is_fake_quantize(n)) {
      source[n.outputs.at(0)] = n.inputs.at(0);
      continue;
    }
    kept.push_back(std::move(n));
  }
  auto original = [&](int v) {
    auto it = source.find(v);
    return it == source.end() ? v : it->second;
  };
  for (Node& n : kept)
    for (int& v : n.inputs) v = original(v);
  for (int& v : g.outputs) v = original(v);
  g.nodes = std::move(kept);
  eliminate_dead_code(g);
  g.validate("QAT strip fake quantisation");
  return m;
}

Model convert_qat_model(const Model& qat_model, const std::map<std::string, Range>& ranges, const QuantizeOptions& options,
                        QuantizeReport* report) {
  Model int8 = quantize_model_graph(strip_fake_quantization(qat_model), ranges, options, report);
  int8.metadata.options["quantization"] = std::string("int8 qat, ") + (options.per_channel ? "per-channel weights" : "per-tensor weights") +
                                           (options.reduce_range ? ", reduced-range weights" : "");
  return int8;
}

}  // namespace xnn::quantize
