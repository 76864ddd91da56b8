#include "compress/quantize/quantize_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "engine/core/error.h"
#include "engine/passes/eliminate_dead_code.h"
#include "engine/passes/pass_utils.h"

namespace xnn::quantize {
namespace {

constexpr const char* kContribDomain = "com.microsoft";

// What the rewrite does with one node of the float graph.
enum class Role {
  kFloat,        // stays as it is (float inputs, float outputs)
  kRequantize,   // becomes an int8 op with its own output parameters
  kPassThrough,  // the same op on uint8, output parameters = input parameters
  kFused,        // an activation absorbed by its producer's requantisation
};

bool is_default_domain(const Node& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

bool is_pass_through_op(const Node& n) {
  static const char* const kOps[] = {"MaxPool", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Identity"};
  if (!is_default_domain(n)) return false;
  if (n.op_type == "MaxPool") {
    for (size_t i = 1; i < n.outputs.size(); ++i) {
      if (n.outputs[i] >= 0) return false;  // Indices: not for uint8 consumers to care about, keep float
    }
  }
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char* op) { return n.op_type == op; });
}

const Tensor* constant_of(const Graph& g, int v) {
  if (v < 0) return nullptr;
  const Value& value = g.value(v);
  return value.is_constant() ? &*value.data : nullptr;
}

bool is_activation(const Graph& g, int v) {
  return v >= 0 && !g.value(v).is_constant() && (g.value(v).dtype == DType::kF32 || g.value(v).dtype == DType::kUnknown);
}

int input(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; }

// The float weight / bias constants a layer needs, or why it cannot be quantised.
bool conv_quantizable(const Graph& g, const Node& n) {
  const Tensor* w = constant_of(g, input(n, 1));
  if (!is_activation(g, input(n, 0)) || !w || w->dtype() != DType::kF32 || w->rank() < 3) return false;
  const int b = input(n, 2);
  if (b < 0) return true;
  const Tensor* bias = constant_of(g, b);
  return bias && bias->dtype() == DType::kF32 && bias->numel() == w->dim(0);
}

// Gemm's C as a per-column vector of N values, or nullopt when it varies by row (or is not a
// constant) and cannot become QGemm's int32 C in units of a_scale·b_scale[n].
std::optional<std::vector<float>> gemm_bias_columns(const Graph& g, const Node& n, int64_t columns) {
  const int c = input(n, 2);
  if (c < 0) return std::vector<float>{};
  const Tensor* t = constant_of(g, c);
  if (!t || t->dtype() != DType::kF32) return std::nullopt;
  const Shape& s = t->shape();
  const bool per_column = (s.empty() || (s.size() == 1 && (s[0] == 1 || s[0] == columns)) ||
                           (s.size() == 2 && s[0] == 1 && (s[1] == 1 || s[1] == columns)));
  if (!per_column) return std::nullopt;
  std::vector<float> out(static_cast<size_t>(columns));
  for (int64_t j = 0; j < columns; ++j) out[static_cast<size_t>(j)] = t->data<float>()[t->numel() == 1 ? 0 : j];
  return out;
}

bool gemm_quantizable(const Graph& g, const Node& n) {
  const Tensor* b = constant_of(g, input(n, 1));
  if (!is_activation(g, input(n, 0)) || !b || b->dtype() != DType::kF32 || b->rank() != 2) return false;
  const int64_t columns = n.attr_int("transB", 0) != 0 ? b->dim(0) : b->dim(1);
  return gemm_bias_columns(g, n, columns).has_value();
}

bool matmul_quantizable(const Graph& g, const Node& n) {
  const Tensor* b = constant_of(g, input(n, 1));
  return is_activation(g, input(n, 0)) && b && b->dtype() == DType::kF32 && b->rank() == 2;
}

bool all_inputs_activations(const Graph& g, const Node& n) {
  if (n.inputs.empty()) return false;
  return std::all_of(n.inputs.begin(), n.inputs.end(), [&](int v) { return is_activation(g, v); });
}

// Whether the node can become an int8 op with its own output parameters.
bool requantizable(const Graph& g, const Node& n) {
  if (!is_default_domain(n) || n.outputs.empty() || n.outputs[0] < 0) return false;
  for (size_t i = 1; i < n.outputs.size(); ++i) {
    if (n.outputs[i] >= 0) return false;
  }
  const std::string& op = n.op_type;
  if (op == "Conv") return conv_quantizable(g, n);
  if (op == "Gemm") return gemm_quantizable(g, n);
  if (op == "MatMul") return matmul_quantizable(g, n);
  if (op == "Add") return n.inputs.size() == 2 && all_inputs_activations(g, n);
  if (op == "Concat") return all_inputs_activations(g, n);
  if (op == "AveragePool" || op == "GlobalAveragePool") return is_activation(g, input(n, 0));
  return false;
}

// Relu, or Clip whose bounds (constants or absent) bracket 0: a clamp that the requantisation of
// a range inside [min, max] and containing 0 already applies.
bool is_fusable_activation(const Graph& g, const Node& n) {
  if (!is_default_domain(n) || n.outputs.size() != 1) return false;
  if (n.op_type == "Relu") return true;
  if (n.op_type != "Clip") return false;
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  for (size_t i = 1; i < 3; ++i) {
    const int v = input(n, i);
    if (v < 0) continue;
    const Tensor* t = constant_of(g, v);
    if (!t || t->numel() != 1 || t->dtype() != DType::kF32) return false;
    (i == 1 ? lo : hi) = t->data<float>()[0];
  }
  return lo <= 0 && hi >= 0;
}

Tensor scalar_u8(int32_t v) { return Tensor::scalar<uint8_t>(static_cast<uint8_t>(v)); }

class Rewriter {
 public:
  Rewriter(const Model& model, const std::map<std::string, Range>& ranges, const QuantizeOptions& options)
      : model_(model), src_(model.graph), ranges_(ranges), options_(options), uses_(src_) {}

  Model run(QuantizeReport* report) {
    check_exclusions();
    assign_roles();
    out_ = model_;
    Graph& g = out_.graph;
    g.nodes.clear();
    taken_values_ = passes::value_names(g);
    int8_of_.assign(src_.values.size(), -1);
    params_of_.assign(src_.values.size(), ActivationParams{});
    float_ready_.assign(src_.values.size(), 0);
    for (int i : src_.inputs) float_ready_[static_cast<size_t>(i)] = 1;
    for (size_t v = 0; v < src_.values.size(); ++v) {
      if (src_.values[v].is_constant()) float_ready_[v] = 1;
    }

    for (size_t k = 0; k < src_.nodes.size(); ++k) {
      switch (roles_[k]) {
        case Role::kFloat: emit_float(src_.nodes[k]); break;
        case Role::kRequantize: emit_requantized(k); break;
        case Role::kPassThrough: emit_pass_through(src_.nodes[k]); break;
        case Role::kFused: break;  // emitted by its producer
      }
    }
    for (int o : src_.outputs) ensure_float(o);
    eliminate_dead_code(g);
    g.validate("int8 rewrite");
    if (report) fill_report(*report);
    return std::move(out_);
  }

 private:
  void check_exclusions() const {
    std::unordered_set<std::string> names;
    for (const Node& n : src_.nodes) names.insert(n.name);
    for (const std::string& e : options_.exclude) {
      if (names.count(e)) continue;
      std::string known;
      for (const QuantizableLayer& l : quantizable_layers(src_)) known += (known.empty() ? "" : ", ") + l.name;
      throw Error("--exclude '" + e + "': no node of that name in the model (quantisable layers: " +
                  (known.empty() ? std::string("none") : known) + ")");
    }
  }

  bool has_range(int v) const { return v >= 0 && ranges_.count(src_.value(v).name) != 0; }
  const Range& range_of(int v) const { return ranges_.at(src_.value(v).name); }

  void assign_roles() {
    roles_.assign(src_.nodes.size(), Role::kFloat);
    fused_into_.assign(src_.nodes.size(), -1);
    std::vector<char> int8_out(src_.values.size(), 0);  // value will exist as uint8
    for (size_t k = 0; k < src_.nodes.size(); ++k) {
      const Node& n = src_.nodes[k];
      if (options_.exclude.count(n.name) || !passes::node_outer_names(n).empty()) continue;
      if (roles_[k] == Role::kFused) continue;
      if (requantizable(src_, n)) {
        // Every activation input needs parameters: its own uint8 form, or a range to quantise it.
        bool ok = true;
        for (int v : n.inputs) {
          if (is_activation(src_, v) && !int8_out[static_cast<size_t>(v)] && !has_range(v)) ok = false;
        }
        int out = n.outputs[0];
        const int act = fusable_reader(out);
        const int final_out = act >= 0 ? src_.nodes[static_cast<size_t>(act)].outputs[0] : out;
        if (!ok || !has_range(final_out)) continue;
        roles_[k] = Role::kRequantize;
        if (act >= 0) {
          roles_[static_cast<size_t>(act)] = Role::kFused;
          fused_into_[k] = act;
        }
        int8_out[static_cast<size_t>(final_out)] = 1;
        continue;
      }
      if (is_pass_through_op(n) && !n.inputs.empty() && n.inputs[0] >= 0 && int8_out[static_cast<size_t>(n.inputs[0])]) {
        roles_[k] = Role::kPassThrough;
        int8_out[static_cast<size_t>(n.outputs[0])] = 1;
      }
    }
  }

  // The Relu/Clip node that is the only reader of v (and may be fused), or -1.
  int fusable_reader(int v) const {
    if (!uses_.single_private_use(v)) return -1;
    const int reader = uses_.consumers[static_cast<size_t>(v)][0];
    const Node& r = src_.nodes[static_cast<size_t>(reader)];
    if (options_.exclude.count(r.name) || r.inputs.empty() || r.inputs[0] != v) return -1;
    return is_fusable_activation(src_, r) ? reader : -1;
  }

  // ---- values and constants ------------------------------------------------------------------

  Graph& g() { return out_.graph; }
  std::string fresh(const std::string& base) { return passes::fresh_name(base, taken_values_); }

  int add_constant(const std::string& base, Tensor t, std::optional<QuantParams> quant = std::nullopt) {
    const int v = g().add_constant(fresh(base), std::move(t));
    g().value(v).quant = std::move(quant);
    return v;
  }

  // A uint8 value with v's shape, annotated with its parameters.
  int add_uint8_value(int v, const ActivationParams& p) {
    Value u;
    const Value& f = src_.value(v);
    u.name = fresh(f.name + "_quantized");
    u.dtype = DType::kU8;
    u.has_shape = f.has_shape;
    u.shape = f.shape;
    u.quant = QuantParams{{p.scale}, {p.zero_point}, -1};
    return g().add_value(std::move(u));
  }

  // Scale and zero-point constants of v's uint8 form, shared by all its readers.
  std::pair<int, int> param_constants(int v) {
    auto it = param_consts_.find(v);
    if (it != param_consts_.end()) return it->second;
    const ActivationParams& p = params_of_[static_cast<size_t>(v)];
    const std::string& name = src_.value(v).name;
    const std::pair<int, int> c{add_constant(name + "_scale", Tensor::scalar<float>(p.scale)),
                                add_constant(name + "_zero_point", scalar_u8(p.zero_point))};
    param_consts_.emplace(v, c);
    return c;
  }

  // v's uint8 form, quantising the float tensor once if it only exists in float.
  int ensure_int8(int v) {
    if (int8_of_[static_cast<size_t>(v)] >= 0) return int8_of_[static_cast<size_t>(v)];
    params_of_[static_cast<size_t>(v)] = uint8_params(range_of(v));
    const auto [scale, zp] = param_constants(v);
    const int q = add_uint8_value(v, params_of_[static_cast<size_t>(v)]);
    add_node("QuantizeLinear", src_.value(v).name + "_QuantizeLinear", "", {v, scale, zp}, {q});
    ++quantize_nodes_;
    int8_of_[static_cast<size_t>(v)] = q;
    return q;
  }

  // v as a float tensor under its own name, dequantising its uint8 form once if needed.
  void ensure_float(int v) {
    if (v < 0 || float_ready_[static_cast<size_t>(v)]) return;
    const int q = int8_of_[static_cast<size_t>(v)];
    if (q < 0) throw Error("int8 rewrite: value '" + src_.value(v).name + "' is used before it is produced");
    const auto [scale, zp] = param_constants(v);
    add_node("DequantizeLinear", src_.value(v).name + "_DequantizeLinear", "", {q, scale, zp}, {v});
    ++dequantize_nodes_;
    float_ready_[static_cast<size_t>(v)] = 1;
  }

  Node& add_node(const std::string& op, const std::string& name, const std::string& domain, std::vector<int> inputs,
                 std::vector<int> outputs) {
    Node n;
    n.op_type = op;
    n.name = name;
    n.domain = domain;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    g().nodes.push_back(std::move(n));
    return g().nodes.back();
  }

  // ---- nodes ---------------------------------------------------------------------------------

  void emit_float(const Node& n) {
    for (int v : n.inputs) ensure_float(v);
    for (const std::string& name : passes::node_outer_names(n)) {
      const int v = src_.find_value(name);
      if (v >= 0) ensure_float(v);
    }
    g().nodes.push_back(n);
    for (int o : n.outputs) {
      if (o >= 0) float_ready_[static_cast<size_t>(o)] = 1;
    }
    ++fp32_nodes_;
  }

  void emit_pass_through(const Node& n) {
    const int in = n.inputs[0], out = n.outputs[0];
    Node copy = n;
    copy.inputs[0] = int8_of_[static_cast<size_t>(in)];
    params_of_[static_cast<size_t>(out)] = params_of_[static_cast<size_t>(in)];
    const int q = add_uint8_value(out, params_of_[static_cast<size_t>(out)]);
    copy.outputs = {q};
    g().nodes.push_back(std::move(copy));
    int8_of_[static_cast<size_t>(out)] = q;
    ++int8_nodes_;
  }

  // Whether every reader of v stays float (so a QGemm may write float directly).
  bool only_float_readers(int v) const {
    for (int reader : uses_.consumers[static_cast<size_t>(v)]) {
      if (roles_[static_cast<size_t>(reader)] != Role::kFloat) return false;
    }
    return !uses_.pinned[static_cast<size_t>(v)];
  }

  void emit_requantized(size_t k) {
    const Node& n = src_.nodes[k];
    const int act = fused_into_[k];
    const int out = act >= 0 ? src_.nodes[static_cast<size_t>(act)].outputs[0] : n.outputs[0];
    if (act >= 0) ++fused_activations_;
    const bool float_out = n.op_type == "Gemm" && act < 0 && only_float_readers(out);
    int q_out = -1;
    if (!float_out) {
      params_of_[static_cast<size_t>(out)] = uint8_params(range_of(out));
      q_out = add_uint8_value(out, params_of_[static_cast<size_t>(out)]);
      int8_of_[static_cast<size_t>(out)] = q_out;
    } else {
      float_ready_[static_cast<size_t>(out)] = 1;
    }
    const std::string& op = n.op_type;
    if (op == "Conv") emit_conv(n, q_out, out);
    else if (op == "Gemm") emit_gemm(n, q_out, out);
    else if (op == "MatMul") emit_matmul(n, q_out, out);
    else if (op == "Add") emit_binary(n, "QLinearAdd", q_out, out);
    else if (op == "Concat") emit_concat(n, q_out, out);
    else emit_pool(n, q_out, out);
    ++int8_nodes_;
  }

  // Appends x's uint8 form, scale and zero point to `inputs`.
  void append_activation(std::vector<int>& inputs, int x) {
    const int q = ensure_int8(x);
    const auto [scale, zp] = param_constants(x);
    inputs.insert(inputs.end(), {q, scale, zp});
  }

  void append_output_params(std::vector<int>& inputs, int out) {
    const auto [scale, zp] = param_constants(out);
    inputs.insert(inputs.end(), {scale, zp});
  }

  // int8 weights (per channel along `axis` unless per tensor) with their scale and zero-point
  // constants; returns the scales.
  std::vector<float> append_weights(std::vector<int>& inputs, const Node& n, int w, int axis,
                                   QuantizedWeights* quantized = nullptr) {
    const Tensor& wt = *constant_of(src_, w);
    const QuantizedWeights q = quantize_weights_symmetric(wt, options_.per_channel ? axis : -1, weight_qmax(options_, n, wt));
    if (quantized) *quantized = q;
    const int64_t count = static_cast<int64_t>(q.scales.size());
    const std::vector<int32_t> zeros(q.scales.size(), 0);
    const QuantParams qp{q.scales, zeros, q.axis};
    const std::string& name = src_.value(w).name;
    const int values = add_constant(name + "_quantized", q.values, qp);
    Tensor scale = options_.per_channel ? Tensor::from_vector<float>(q.scales, {count}) : Tensor::scalar<float>(q.scales[0]);
    Tensor zp = options_.per_channel ? Tensor(DType::kI8, {count}) : Tensor::scalar<int8_t>(0);
    inputs.insert(inputs.end(), {values, add_constant(name + "_scale", std::move(scale)),
                                 add_constant(name + "_zero_point", std::move(zp))});
    return q.scales;
  }

  static void copy_attrs(const Node& from, Node& to, std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      auto it = from.attrs.find(k);
      if (it != from.attrs.end()) to.attrs[k] = it->second;
    }
  }

  // The input channel means bias correction needs for x, or null (off, or none recorded).
  const std::vector<double>* correction_means(int x, int64_t channels) const {
    if (!options_.bias_correction || !options_.channel_means) return nullptr;
    const auto it = options_.channel_means->find(src_.value(x).name);
    if (it == options_.channel_means->end() || static_cast<int64_t>(it->second.size()) != channels) return nullptr;
    return &it->second;
  }

  // Conv: bias[o] − Σ_{c, taps} (W_q − W)[o][c][taps] · mean[group(o)·C/G + c] (the float bias,
  // zeros where the node has none).
  static std::vector<float> corrected_conv_bias(const Tensor* bias, const Tensor& w, const QuantizedWeights& q,
                                                const std::vector<double>& means, int64_t groups) {
    const Tensor wq = dequantize_weights(q);
    const int64_t cout = w.dim(0), cin_g = w.dim(1), taps = w.numel() / (cout * cin_g);
    const float* wf = w.data<float>();
    const float* wd = wq.data<float>();
    std::vector<float> out(static_cast<size_t>(cout), 0.0f);
    for (int64_t o = 0; o < cout; ++o) {
      const int64_t c0 = o / (cout / groups) * cin_g;
      double shift = 0;
      for (int64_t c = 0; c < cin_g; ++c) {
        double dw = 0;
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t i = (o * cin_g + c) * taps + t;
          dw += static_cast<double>(wd[i]) - static_cast<double>(wf[i]);
        }
        shift += dw * means[static_cast<size_t>(c0 + c)];
      }
      out[static_cast<size_t>(o)] = static_cast<float>((bias ? bias->data<float>()[o] : 0.0) - shift);
    }
    return out;
  }

  void emit_conv(const Node& n, int q_out, int out) {
    const int x = n.inputs[0];
    std::vector<int> ins;
    append_activation(ins, x);
    QuantizedWeights qw;
    const std::vector<float> w_scales = append_weights(ins, n, n.inputs[1], 0, &qw);
    append_output_params(ins, out);
    const int b = input(n, 2);
    const Tensor& w = *constant_of(src_, n.inputs[1]);
    const int64_t groups = n.attr_int("group", 1);
    const std::vector<double>* means = correction_means(x, w.dim(1) * groups);
    if (means) {
      const std::vector<float> corrected = corrected_conv_bias(b >= 0 ? constant_of(src_, b) : nullptr, w, qw, *means,
                                                               groups);
      const Tensor bias = quantize_bias(Tensor::from_vector<float>(corrected, {w.dim(0)}),
                                        params_of_[static_cast<size_t>(x)].scale, w_scales);
      if (b < 0) {
        ins.push_back(add_constant(n.name + "_corrected_bias_quantized", bias));
      } else {
        ins.push_back(add_constant(src_.value(b).name + "_quantized", bias));
      }
    } else if (b >= 0) {
      const Tensor bias = quantize_bias(*constant_of(src_, b), params_of_[static_cast<size_t>(x)].scale, w_scales);
      ins.push_back(add_constant(src_.value(b).name + "_quantized", bias));
    }
    Node& q = add_node("QLinearConv", n.name, "", std::move(ins), {q_out});
    q.attrs = n.attrs;
  }

  void emit_gemm(const Node& n, int q_out, int out) {
    const int a = n.inputs[0], b = n.inputs[1];
    const bool trans_b = n.attr_int("transB", 0) != 0;
    const Tensor& w = *constant_of(src_, b);
    const int64_t columns = trans_b ? w.dim(0) : w.dim(1);
    const float alpha = n.attr_float("alpha", 1.0f), beta = n.attr_float("beta", 1.0f);
    std::vector<int> ins;
    append_activation(ins, a);
    QuantizedWeights qw;
    const std::vector<float> w_scales = append_weights(ins, n, b, trans_b ? 0 : 1, &qw);
    std::vector<float> bias = *gemm_bias_columns(src_, n, columns);
    const int64_t depth = trans_b ? w.dim(1) : w.dim(0);
    const std::vector<double>* means =
        n.attr_int("transA", 0) == 0 && beta != 0.0f ? correction_means(a, depth) : nullptr;
    if (means) {
      // Y = alpha·A·op(W) + beta·C: column j shifts by alpha·Σ_k (W_q − W)[k][j]·mean[k]; C is
      // scaled by beta below, so the shift is divided by it here.
      const Tensor wq = dequantize_weights(qw);
      const float* wd = wq.data<float>();
      const float* wf = w.data<float>();
      if (bias.empty()) bias.assign(static_cast<size_t>(columns), 0.0f);
      for (int64_t j = 0; j < columns; ++j) {
        double shift = 0;
        for (int64_t k = 0; k < depth; ++k) {
          const int64_t i = trans_b ? j * depth + k : k * columns + j;
          shift += (static_cast<double>(wd[i]) - static_cast<double>(wf[i])) * (*means)[static_cast<size_t>(k)];
        }
        bias[static_cast<size_t>(j)] -= static_cast<float>(alpha * shift / beta);
      }
    }
    if (!bias.empty()) {
      std::vector<float> scaled(bias);
      for (float& v : scaled) v *= beta;
      const Tensor c = quantize_bias(Tensor::from_vector<float>(scaled, {columns}),
                                     alpha * params_of_[static_cast<size_t>(a)].scale, w_scales);
      ins.push_back(add_constant((input(n, 2) >= 0 ? src_.value(input(n, 2)).name : n.name + "_corrected_bias") +
                                     "_quantized",
                                 c));
    } else if (q_out >= 0) {
      ins.push_back(-1);
    }
    if (q_out >= 0) append_output_params(ins, out);
    Node& q = add_node("QGemm", n.name, kContribDomain, std::move(ins), {q_out >= 0 ? q_out : out});
    copy_attrs(n, q, {"transA", "transB", "alpha"});
  }

  void emit_matmul(const Node& n, int q_out, int out) {
    std::vector<int> ins;
    append_activation(ins, n.inputs[0]);
    append_weights(ins, n, n.inputs[1], 1);
    append_output_params(ins, out);
    add_node("QLinearMatMul", n.name, "", std::move(ins), {q_out});
  }

  void emit_binary(const Node& n, const char* op, int q_out, int out) {
    std::vector<int> ins;
    append_activation(ins, n.inputs[0]);
    append_activation(ins, n.inputs[1]);
    append_output_params(ins, out);
    add_node(op, n.name, kContribDomain, std::move(ins), {q_out});
  }

  void emit_concat(const Node& n, int q_out, int out) {
    std::vector<int> ins;
    append_output_params(ins, out);
    for (int x : n.inputs) append_activation(ins, x);
    Node& q = add_node("QLinearConcat", n.name, kContribDomain, std::move(ins), {q_out});
    copy_attrs(n, q, {"axis"});
  }

  void emit_pool(const Node& n, int q_out, int out) {
    std::vector<int> ins;
    append_activation(ins, n.inputs[0]);
    append_output_params(ins, out);
    const bool global = n.op_type == "GlobalAveragePool";
    Node& q = add_node(global ? "QLinearGlobalAveragePool" : "QLinearAveragePool", n.name, kContribDomain, std::move(ins),
                       {q_out});
    q.attrs = n.attrs;
  }

  void fill_report(QuantizeReport& r) const {
    r.int8_nodes = int8_nodes_;
    r.fp32_nodes = fp32_nodes_;
    r.quantize_nodes = quantize_nodes_;
    r.dequantize_nodes = dequantize_nodes_;
    r.fused_activations = fused_activations_;
    r.int8_layers.clear();
    r.fp32_layers.clear();
    std::unordered_map<std::string, size_t> index;
    for (size_t k = 0; k < src_.nodes.size(); ++k) index.emplace(src_.nodes[k].name, k);
    for (const QuantizableLayer& l : quantizable_layers(src_)) {
      (roles_[index.at(l.name)] == Role::kRequantize ? r.int8_layers : r.fp32_layers).push_back(l.name);
    }
  }

  const Model& model_;
  const Graph& src_;
  const std::map<std::string, Range>& ranges_;
  const QuantizeOptions& options_;
  const passes::UseInfo uses_;
  Model out_;
  std::vector<Role> roles_;
  std::vector<int> fused_into_;            // per node: the activation node it absorbs, or -1
  std::vector<int> int8_of_;               // per source value: its uint8 value in out_, or -1
  std::vector<ActivationParams> params_of_;
  std::vector<char> float_ready_;          // per source value: exists as float in out_
  std::map<int, std::pair<int, int>> param_consts_;
  std::unordered_set<std::string> taken_values_;
  int int8_nodes_ = 0, fp32_nodes_ = 0, quantize_nodes_ = 0, dequantize_nodes_ = 0, fused_activations_ = 0;
};

}  // namespace

std::vector<QuantizableLayer> quantizable_layers(const Graph& g) {
  std::vector<QuantizableLayer> out;
  for (const Node& n : g.nodes) {
    if (requantizable(g, n)) out.push_back({n.name, n.op_type});
  }
  return out;
}

int weight_qmax(const QuantizeOptions& options, const Node& n, const Tensor& w) {
  const bool depthwise = n.op_type == "Conv" && n.attr_int("group", 1) > 1 && w.rank() >= 2 && w.dim(1) == 1;
  return options.reduce_range && !depthwise ? kReducedWeightQmax : kWeightQmax;
}

Model quantize_model_graph(const Model& float_model, const std::map<std::string, Range>& ranges,
                           const QuantizeOptions& options, QuantizeReport* report) {
  return Rewriter(float_model, ranges, options).run(report);
}

}  // namespace xnn::quantize
