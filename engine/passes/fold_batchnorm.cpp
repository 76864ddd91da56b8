#include "engine/passes/fold_batchnorm.h"

#include <cmath>
#include <optional>
#include <unordered_set>

#include "engine/passes/pass_utils.h"

namespace xnn {
namespace {

using passes::constant_input;
using passes::input_at;

// Per-feature affine form of the BN: y = x * scale[c] + shift[c].
struct BnAffine {
  std::vector<double> scale, shift;
};

// The BN's parameters as an affine map, when it is an inference BN over `channels` features
// with constant parameters of `dtype`.
std::optional<BnAffine> bn_affine(const Graph& g, const Node& bn, DType dtype) {
  if (bn.attr_int("training_mode", 0) != 0 || !passes::single_output(bn) || bn.inputs.size() != 5) return std::nullopt;
  const Tensor* p[4];
  for (size_t i = 0; i < 4; ++i) {
    p[i] = constant_input(g, bn, i + 1);
    if (!p[i] || p[i]->dtype() != dtype || p[i]->rank() != 1 || p[i]->shape() != p[0]->shape()) return std::nullopt;
  }
  const double eps = bn.attr_float("epsilon", 1e-5f);
  const int64_t c = p[0]->numel();
  BnAffine a;
  a.scale.resize(static_cast<size_t>(c));
  a.shift.resize(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k) {
    const double gamma = p[0]->scalar_as_double(k), beta = p[1]->scalar_as_double(k);
    const double mean = p[2]->scalar_as_double(k), var = p[3]->scalar_as_double(k);
    const double s = gamma / std::sqrt(var + eps);
    a.scale[static_cast<size_t>(k)] = s;
    a.shift[static_cast<size_t>(k)] = beta - mean * s;
  }
  return a;
}

// A new tensor of `dtype` and `shape` filled by f(flat index) (computed in double).
template <typename F>
Tensor make_tensor(DType dtype, const Shape& shape, F&& f) {
  Tensor t(dtype, shape);
  const int64_t n = t.numel();
  if (dtype == DType::kF32) {
    float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(f(i));
  } else {
    double* p = t.data<double>();
    for (int64_t i = 0; i < n; ++i) p[i] = f(i);
  }
  return t;
}

class BatchNormFolder {
 public:
  explicit BatchNormFolder(Graph& g) : g_(g), uses_(g), names_(passes::value_names(g)) {}

  int run() {
    std::vector<char> remove(g_.nodes.size(), 0);
    int folded = 0;
    for (size_t k = 0; k < g_.nodes.size(); ++k) {
      const Node& bn = g_.nodes[k];
      if (!passes::is_op(bn, "BatchNormalization")) continue;
      const int x = input_at(bn, 0);
      if (x < 0 || !uses_.single_private_use(x) || uses_.producer[static_cast<size_t>(x)] < 0) continue;
      Node& p = g_.nodes[static_cast<size_t>(uses_.producer[static_cast<size_t>(x)])];
      if (!passes::single_output(p) || p.outputs[0] != x) continue;
      bool ok = false;
      if (passes::is_conv_like(p) && !passes::has_activation(p) && !passes::has_residual(p)) ok = fold_into_conv(p, bn);
      else if (passes::is_gemm_like(p) && !passes::has_activation(p)) ok = fold_into_gemm(p, bn);
      if (!ok) continue;
      // The producer now writes the BN's output; x is left unused (dead-code elimination).
      const int y = bn.outputs[0];
      p.outputs[0] = y;
      uses_.producer[static_cast<size_t>(y)] = uses_.producer[static_cast<size_t>(x)];
      uses_.producer[static_cast<size_t>(x)] = -1;
      uses_.consumers[static_cast<size_t>(x)].clear();
      remove[k] = 1;
      ++folded;
    }
    if (folded) passes::erase_nodes(g_, remove);
    return folded;
  }

 private:
  int add_constant(const std::string& base, Tensor t) {
    const int v = g_.add_constant(passes::fresh_name(base, names_), std::move(t));
    // Keep the use tables in step with the value list.
    uses_.producer.push_back(-1);
    uses_.consumers.emplace_back();
    uses_.graph_output.push_back(0);
    uses_.pinned.push_back(0);
    return v;
  }

  bool fold_into_conv(Node& conv, const Node& bn) {
    const Tensor* w = constant_input(g_, conv, 1);
    if (!w || (w->dtype() != DType::kF32 && w->dtype() != DType::kF64) || w->rank() < 3) return false;
    const int64_t m = w->dim(0);
    const Tensor* b = constant_input(g_, conv, 2);
    if (input_at(conv, 2) >= 0 && (!b || b->dtype() != w->dtype() || b->shape() != Shape{m})) return false;
    const std::optional<BnAffine> a = bn_affine(g_, bn, w->dtype());
    if (!a || static_cast<int64_t>(a->scale.size()) != m) return false;
    const int64_t per_channel = m == 0 ? 0 : w->numel() / m;
    Tensor w2 = make_tensor(w->dtype(), w->shape(), [&](int64_t i) {
      return w->scalar_as_double(i) * a->scale[static_cast<size_t>(i / per_channel)];
    });
    Tensor b2 = make_tensor(w->dtype(), {m}, [&](int64_t c) {
      const double bias = b ? b->scalar_as_double(c) : 0.0;
      return bias * a->scale[static_cast<size_t>(c)] + a->shift[static_cast<size_t>(c)];
    });
    // A copy: add_constant grows g_.values, which would leave a reference dangling.
    const std::string wname = g_.value(conv.inputs[1]).name;
    const int w_new = add_constant(wname + "_bn", std::move(w2));
    const int b_new = add_constant(wname + "_bn_bias", std::move(b2));
    conv.inputs[1] = w_new;
    if (conv.inputs.size() < 3) conv.inputs.resize(3, -1);
    conv.inputs[2] = b_new;
    return true;
  }

  bool fold_into_gemm(Node& gemm, const Node& bn) {
    const Tensor* w = constant_input(g_, gemm, 1);
    if (!w || (w->dtype() != DType::kF32 && w->dtype() != DType::kF64) || w->rank() != 2) return false;
    const bool trans_b = gemm.attr_int("transB", 0) != 0;
    const int64_t n = trans_b ? w->dim(0) : w->dim(1);
    const std::optional<BnAffine> a = bn_affine(g_, bn, w->dtype());
    if (!a || static_cast<int64_t>(a->scale.size()) != n) return false;
    // The BN reads the Gemm's [M, N] output with features on axis 1.
    const Value& y = g_.value(gemm.outputs[0]);
    if (y.has_shape && y.shape.size() != 2) return false;
    const float beta = gemm.attr_float("beta", 1.0f);
    const Tensor* c = constant_input(g_, gemm, 2);
    const bool has_c = input_at(gemm, 2) >= 0 && beta != 0.0f;
    if (input_at(gemm, 2) >= 0 && !c) return false;
    // C broadcasts to [M, N]; C' keeps its row dimension when it has one, else is [N].
    Shape c_shape{n};
    int64_t c_row_stride = 0, c_col_stride = 0;
    if (has_c) {
      if (c->dtype() != w->dtype() || c->rank() > 2) return false;
      const Shape& cs = c->shape();
      const int64_t cols = cs.empty() ? 1 : cs.back();
      if (cols != 1 && cols != n) return false;
      c_col_stride = cols == 1 ? 0 : 1;
      if (cs.size() == 2 && cs[0] != 1) {
        c_shape = {cs[0], n};
        c_row_stride = cols;
      }
    }
    Tensor w2 = make_tensor(w->dtype(), w->shape(), [&](int64_t i) {
      const int64_t col = trans_b ? i / w->dim(1) : i % w->dim(1);
      return w->scalar_as_double(i) * a->scale[static_cast<size_t>(col)];
    });
    Tensor c2 = make_tensor(w->dtype(), c_shape, [&](int64_t i) {
      const int64_t row = i / n, col = i % n;
      const double cv = has_c ? beta * c->scalar_as_double(row * c_row_stride + col * c_col_stride) : 0.0;
      return cv * a->scale[static_cast<size_t>(col)] + a->shift[static_cast<size_t>(col)];
    });
    // A copy: add_constant grows g_.values, which would leave a reference dangling.
    const std::string wname = g_.value(gemm.inputs[1]).name;
    gemm.inputs[1] = add_constant(wname + "_bn", std::move(w2));
    if (gemm.inputs.size() < 3) gemm.inputs.resize(3, -1);
    gemm.inputs[2] = add_constant(wname + "_bn_bias", std::move(c2));
    gemm.attrs["beta"] = 1.0f;
    return true;
  }

  Graph& g_;
  passes::UseInfo uses_;
  std::unordered_set<std::string> names_;
};

}  // namespace

int fold_batchnorm(Graph& g) { return BatchNormFolder(g).run(); }

}  // namespace xnn
