#include "compress/quantize/weight_only.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <span>

#include "engine/core/error.h"
#include "engine/core/half.h"
#include "compress/encode/kmeans.h"
#include "engine/kernels/codebook.h"
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
    WeightOnlyTensorReport r;
    r.node = n.name, r.op_type = n.op_type, r.tensor = weight_name, r.rows = c.n_rows, r.cols = c.cols;
    r.bytes_before = c.n_rows * c.cols * 4;

    // The table's inputs (before the Gather indices / after the Gemm's A) and the op names.
    std::vector<int> table;
    std::string gather_op, gemm_op;
    std::vector<float> decoded(static_cast<size_t>(c.n_rows * c.cols));
    if (o_.scheme == WeightOnlyScheme::kCodebook) {
      const CodebookQuantized q = quantize_codebook(c.rows.data(), c.n_rows, c.cols, o_.bits);
      const int64_t row_bytes = kernels::codebook_row_bytes(c.cols, o_.bits);
      for (int64_t i = 0; i < c.n_rows; ++i) {
        kernels::decode_codebook_row(q.codes.data() + i * row_bytes, o_.bits, c.cols, q.centroids.data(),
                                     decoded.data() + i * c.cols);
      }
      r.centroids = static_cast<int64_t>(q.centroids.size());
      r.bytes_after = static_cast<int64_t>(q.codes.size()) + r.centroids * 4;
      Tensor codes(DType::kU8, {c.n_rows, row_bytes});
      std::copy(q.codes.begin(), q.codes.end(), codes.data<uint8_t>());
      table = {g_.add_constant(unique_name(weight_name + "_cb" + std::to_string(o_.bits)), codes),
               g_.add_constant(unique_name(weight_name + "_cb_centroids"),
                               Tensor::from_vector<float>(q.centroids, {r.centroids}))};
      gather_op = "CodebookGather", gemm_op = "CodebookGemm";
    } else {
      const RowQuantized q = quantize_rows(c.rows.data(), c.n_rows, c.cols, o_.bits, o_.float16_params);
      const int64_t row_bytes = kernels::row_quantized_bytes(c.cols, o_.bits);
      for (int64_t i = 0; i < c.n_rows; ++i) {
        kernels::dequantize_row(q.codes.data() + i * row_bytes, o_.bits, c.cols, q.scale[static_cast<size_t>(i)],
                                q.offset[static_cast<size_t>(i)], decoded.data() + i * c.cols);
      }
      const int64_t param_bytes = o_.float16_params ? 2 : 4;
      r.bytes_after = static_cast<int64_t>(q.codes.size()) + 2 * c.n_rows * param_bytes;
      Tensor codes(DType::kU8, {c.n_rows, row_bytes});
      std::copy(q.codes.begin(), q.codes.end(), codes.data<uint8_t>());
      table = {g_.add_constant(unique_name(weight_name + "_rowq" + std::to_string(o_.bits)), codes),
               g_.add_constant(unique_name(weight_name + "_rowq_scale"), params(q.scale)),
               g_.add_constant(unique_name(weight_name + "_rowq_offset"), params(q.offset))};
      gather_op = "RowQuantizedGather", gemm_op = "RowQuantizedGemm";
    }
    measure_error(c, decoded, r);

    Node& node = g_.nodes[c.node_index];  // add_constant may have moved nothing, but stay safe
    std::vector<int> inputs;
    if (node.op_type == "Gather") {
      inputs = table;
      inputs.push_back(node.inputs[1]);
      node.op_type = gather_op;
    } else {
      inputs = {node.inputs[0]};
      inputs.insert(inputs.end(), table.begin(), table.end());
      if (c.bias_value >= 0) {
        const Tensor& b = *g_.value(c.bias_value).data;
        inputs.push_back(g_.value(c.bias_value).data->rank() == 1
                             ? c.bias_value
                             : g_.add_constant(unique_name(g_.value(c.bias_value).name + "_flat"), b.clone().reshaped({c.n_rows})));
      }
      node.op_type = gemm_op;
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

  // Reconstruction error of the decoded weights (rows x cols, as c.rows).
  static void measure_error(const Candidate& c, const std::vector<float>& decoded, WeightOnlyTensorReport& r) {
    double err2 = 0, sig2 = 0, max_abs = 0;
    for (size_t i = 0; i < decoded.size(); ++i) {
      const double w = c.rows[i], e = w - decoded[i];
      err2 += e * e, sig2 += w * w, max_abs = std::max(max_abs, std::abs(e));
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

CodebookQuantized quantize_codebook(const float* w, int64_t rows, int64_t cols, int bits) {
  if (bits < 1 || bits > 8) throw Error("codebook quantisation: bits must be in 1..8, got " + std::to_string(bits));
  const std::span<const float> values(w, static_cast<size_t>(rows * cols));
  // A pruned tensor (at least 1% exact zeros) keeps zero exact, as Deep Compression's pipeline
  // does after pruning; a dense one spends every centroid on its values.
  const int64_t zeros = std::count(values.begin(), values.end(), 0.0f);
  const bool keep_zero = zeros * 100 >= static_cast<int64_t>(values.size()) && (1 << bits) > 1;
  const encode::Clustering k = encode::kmeans_1d(values, 1 << bits, keep_zero);
  CodebookQuantized q;
  q.centroids = k.centroids;
  const int64_t row_bytes = kernels::codebook_row_bytes(cols, bits);
  q.codes.assign(static_cast<size_t>(rows * row_bytes), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      kernels::set_codebook_code(q.codes.data() + r * row_bytes, bits, c,
                                 static_cast<uint8_t>(k.assignment[static_cast<size_t>(r * cols + c)]));
    }
  }
  return q;
}

WeightOnlyReport quantize_weights_only(Model& model, const WeightOnlyOptions& options) {
  if (options.scheme == WeightOnlyScheme::kCodebook) {
    if (options.bits < 1 || options.bits > 8) {
      throw Error("weight-only codebook quantisation: bits must be in 1..8, got " + std::to_string(options.bits));
    }
  } else if (options.bits != 4 && options.bits != 8) {
    throw Error("weight-only row-wise quantisation: bits must be 4 or 8, got " + std::to_string(options.bits) +
                " (the codebook scheme takes 1..8)");
  }
  WeightOnlyReport report = Rewriter(model, options).run();
  report.scheme = options.scheme;
  return report;
}

}  // namespace xnn::quantize
