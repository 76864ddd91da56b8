#include "compress/quantize/weight_only.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "engine/core/error.h"
#include "engine/core/half.h"
#include "engine/kernels/row_quantized.h"
#include "engine/passes/eliminate_dead_code.h"

namespace xnn::quantize {
namespace {

float to_param(float v, bool float16) { return float16 ? static_cast<float>(Half(v)) : v; }

// A constant float32 2-D value, or null.
const Tensor* constant_matrix(const Graph& g, int value) {
  if (value < 0) return nullptr;
  const Value& v = g.value(value);
  if (!v.data || v.data->dtype() != DType::kF32 || v.data->rank() != 2) return nullptr;
  return &*v.data;
}

// The weight as rows (one per output / table entry) x cols, row-major.
std::vector<float> transposed(const Tensor& t) {
  const int64_t r = t.dim(0), c = t.dim(1);
  std::vector<float> out(static_cast<size_t>(r * c));
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) out[static_cast<size_t>(j * r + i)] = t.data<float>()[i * c + j];
  }
  return out;
}

struct Candidate {
  size_t node_index;
  std::vector<float> rows;  // rows x cols
  int64_t n_rows, cols;
  int weight_input;         // the input slot holding the float weight
  int bias_value = -1;      // Gemm's C as a [N] bias, or -1
};

class Rewriter {
 public:
  Rewriter(Model& m, const WeightOnlyOptions& o) : g_(m.graph), o_(o) {}

  WeightOnlyReport run() {
    WeightOnlyReport report;
    report.bits = o_.bits;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      std::optional<Candidate> c = candidate(i);
      if (!c || c->n_rows * c->cols < o_.min_elements) continue;
      report.tensors.push_back(rewrite(*c));
      report.bytes_before += report.tensors.back().bytes_before;
      report.bytes_after += report.tensors.back().bytes_after;
    }
    if (!report.tensors.empty()) eliminate_dead_code(g_);
    g_.validate("weight-only quantisation");
    return report;
  }

 private:
  std::optional<Candidate> candidate(size_t i) const {
    const Node& n = g_.nodes[i];
    if (!n.domain.empty() || o_.exclude.count(n.name)) return std::nullopt;
    if (o_.embeddings && n.op_type == "Gather" && n.attr_int("axis", 0) == 0 && n.inputs.size() == 2) {
      const Tensor* t = constant_matrix(g_, n.inputs[0]);
      if (!t) return std::nullopt;
      return Candidate{i, std::vector<float>(t->data<float>(), t->data<float>() + t->numel()), t->dim(0), t->dim(1), 0};
    }
    if (!o_.dense) return std::nullopt;
    if (n.op_type == "MatMul" && n.inputs.size() == 2) {
      const Tensor* b = constant_matrix(g_, n.inputs[1]);
      if (!b) return std::nullopt;
      return Candidate{i, transposed(*b), b->dim(1), b->dim(0), 1};
    }
    if (n.op_type == "Gemm" && n.inputs.size() >= 2) {
      if (n.attr_int("transA", 0) != 0 || n.attr_float("alpha", 1.0f) != 1.0f || n.attr_float("beta", 1.0f) != 1.0f) {
        return std::nullopt;
      }
      const Tensor* b = constant_matrix(g_, n.inputs[1]);
      if (!b) return std::nullopt;
      const bool trans_b = n.attr_int("transB", 0) != 0;
      Candidate c{i, trans_b ? std::vector<float>(b->data<float>(), b->data<float>() + b->numel()) : transposed(*b),
                  trans_b ? b->dim(0) : b->dim(1), trans_b ? b->dim(1) : b->dim(0), 1};
      if (n.inputs.size() > 2 && n.inputs[2] >= 0) {
        const Value& bias = g_.value(n.inputs[2]);
        if (!bias.data || bias.data->dtype() != DType::kF32 || bias.data->numel() != c.n_rows) return std::nullopt;
        const Shape& s = bias.data->shape();
        if (!(s == Shape{c.n_rows} || s == Shape{1, c.n_rows})) return std::nullopt;  // a true per-output bias only
        c.bias_value = n.inputs[2];
      }
      return c;
    }
    return std::nullopt;
  }

  WeightOnlyTensorReport rewrite(const Candidate& c) {
    Node& n = g_.nodes[c.node_index];
    const std::string weight_name = g_.value(n.inputs[static_cast<size_t>(c.weight_input)]).name;
    const RowQuantized q = quantize_rows(c.rows.data(), c.n_rows, c.cols, o_.bits, o_.float16_params);

    WeightOnlyTensorReport r;
    r.node = n.name, r.op_type = n.op_type, r.tensor = weight_name, r.rows = c.n_rows, r.cols = c.cols;
    measure_error(c, q, r);
    const int64_t param_bytes = o_.float16_params ? 2 : 4;
    r.bytes_before = c.n_rows * c.cols * 4;
    r.bytes_after = static_cast<int64_t>(q.codes.size()) + 2 * c.n_rows * param_bytes;

    const int64_t row_bytes = kernels::row_quantized_bytes(c.cols, o_.bits);
    Tensor codes(DType::kU8, {c.n_rows, row_bytes});
    std::copy(q.codes.begin(), q.codes.end(), codes.data<uint8_t>());
    const int codes_v = g_.add_constant(unique_name(weight_name + "_rowq" + std::to_string(o_.bits)), codes);
    const int scale_v = g_.add_constant(unique_name(weight_name + "_rowq_scale"), params(q.scale));
    const int offset_v = g_.add_constant(unique_name(weight_name + "_rowq_offset"), params(q.offset));

    Node& node = g_.nodes[c.node_index];  // add_constant may have moved nothing, but stay safe
    std::vector<int> inputs;
    if (node.op_type == "Gather") {
      inputs = {codes_v, scale_v, offset_v, node.inputs[1]};
      node.op_type = "RowQuantizedGather";
    } else {
      inputs = {node.inputs[0], codes_v, scale_v, offset_v};
      if (c.bias_value >= 0) {
        const Tensor& b = *g_.value(c.bias_value).data;
        inputs.push_back(g_.value(c.bias_value).data->rank() == 1
                             ? c.bias_value
                             : g_.add_constant(unique_name(g_.value(c.bias_value).name + "_flat"), b.clone().reshaped({c.n_rows})));
      }
      node.op_type = "RowQuantizedGemm";
    }
    node.domain = "ai.xnn";
    node.inputs = inputs;
    node.attrs.clear();
    node.attrs["bits"] = Attribute(int64_t{o_.bits});
    node.attrs["cols"] = Attribute(c.cols);
    return r;
  }

  Tensor params(const std::vector<float>& v) const {
    if (!o_.float16_params) return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
    std::vector<Half> h;
    h.reserve(v.size());
    for (float x : v) h.push_back(Half(x));
    return Tensor::from_vector<Half>(h, {static_cast<int64_t>(v.size())});
  }

  void measure_error(const Candidate& c, const RowQuantized& q, WeightOnlyTensorReport& r) const {
    const int64_t row_bytes = kernels::row_quantized_bytes(c.cols, o_.bits);
    std::vector<float> row(static_cast<size_t>(c.cols));
    double err2 = 0, sig2 = 0, max_abs = 0;
    for (int64_t i = 0; i < c.n_rows; ++i) {
      kernels::dequantize_row(q.codes.data() + i * row_bytes, o_.bits, c.cols, q.scale[static_cast<size_t>(i)],
                              q.offset[static_cast<size_t>(i)], row.data());
      for (int64_t j = 0; j < c.cols; ++j) {
        const double w = c.rows[static_cast<size_t>(i * c.cols + j)], e = w - row[static_cast<size_t>(j)];
        err2 += e * e, sig2 += w * w, max_abs = std::max(max_abs, std::abs(e));
      }
    }
    const double count = static_cast<double>(c.n_rows * c.cols);
    r.rmse = std::sqrt(err2 / count);
    r.max_abs_error = max_abs;
    r.sqnr_db = err2 > 0 ? 10 * std::log10(sig2 / err2) : std::numeric_limits<double>::infinity();
  }

  std::string unique_name(const std::string& base) const {
    std::string name = base;
    for (int k = 1; g_.find_value(name) >= 0; ++k) name = base + "_" + std::to_string(k);
    return name;
  }

  Graph& g_;
  const WeightOnlyOptions& o_;
};

}  // namespace

RowQuantized quantize_rows(const float* w, int64_t rows, int64_t cols, int bits, bool float16_params) {
  if (bits != 4 && bits != 8) throw Error("weight-only quantisation: bits must be 4 or 8, got " + std::to_string(bits));
  const int64_t row_bytes = kernels::row_quantized_bytes(cols, bits);
  const float levels = static_cast<float>((1 << bits) - 1);
  RowQuantized q;
  q.codes.assign(static_cast<size_t>(rows * row_bytes), 0);
  q.scale.resize(static_cast<size_t>(rows));
  q.offset.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    const auto [lo, hi] = std::minmax_element(row, row + cols);
    const float offset = to_param(*lo, float16_params);
    // The scale is rounded after the offset so that the largest value stays reachable.
    float scale = to_param((*hi - offset) / levels, float16_params);
    if (!(scale > 0) || !std::isfinite(scale)) scale = 0;
    q.offset[static_cast<size_t>(r)] = offset;
    q.scale[static_cast<size_t>(r)] = scale;
    uint8_t* out = q.codes.data() + r * row_bytes;
    for (int64_t c = 0; c < cols; ++c) {
      const float code = scale > 0 ? std::nearbyint((row[c] - offset) / scale) : 0.0f;
      const auto v = static_cast<uint8_t>(std::clamp(code, 0.0f, levels));
      if (bits == 8) {
        out[c] = v;
      } else {
        out[c >> 1] = static_cast<uint8_t>(out[c >> 1] | ((c & 1) ? (v << 4) : v));
      }
    }
  }
  return q;
}

WeightOnlyReport quantize_weights_only(Model& model, const WeightOnlyOptions& options) {
  if (options.bits != 4 && options.bits != 8) {
    throw Error("weight-only quantisation: bits must be 4 or 8, got " + std::to_string(options.bits));
  }
  return Rewriter(model, options).run();
}

}  // namespace xnn::quantize
