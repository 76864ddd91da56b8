#include "engine/train/optimizer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "engine/core/error.h"

namespace xnn::train {
namespace {

// Shortest text that reads back as the same double ("0.0005", "1e-08").
std::string num(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general);
  return std::string(buf, r.ptr);
}

void check_finite_at_least_zero(const char* what, double v) {
  if (!std::isfinite(v) || v < 0.0)
    throw Error(std::string(what) + " must be a finite number >= 0, got " + num(v));
}

void check_unit_interval(const char* what, double v) {
  if (!(v >= 0.0 && v < 1.0)) throw Error(std::string(what) + " must be in [0, 1), got " + num(v));
}

bool overlaps(const Tensor& a, const Tensor& b) {
  auto* a0 = static_cast<const char*>(a.raw());
  auto* b0 = static_cast<const char*>(b.raw());
  return a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

// A parameter's value and (defined) grad are usable: f32, same shape, not sharing memory.
void check_parameter(const Parameter& p) {
  const std::string where = "parameter '" + p.name + "'";
  XNN_CHECK(p.value.defined(), where + " has no value");
  XNN_CHECK(p.value.dtype() == DType::kF32,
            where + " has dtype " + std::string(dtype_name(p.value.dtype())) + ", expected f32");
  if (!p.grad.defined()) return;
  XNN_CHECK(p.grad.dtype() == DType::kF32,
            "grad of " + where + " has dtype " + std::string(dtype_name(p.grad.dtype())) + ", expected f32");
  XNN_CHECK(p.grad.shape() == p.value.shape(), "grad of " + where + " has shape " + shape_str(p.grad.shape()) +
                                                   ", expected " + shape_str(p.value.shape()) + " (the value's)");
  XNN_CHECK(p.value.numel() == 0 || !overlaps(p.value, p.grad), "grad of " + where + " shares memory with its value");
}

void check_state_shape(const std::string& key, const Tensor& t, const Parameter& p) {
  if (t.shape() != p.value.shape())
    throw Error("optimizer state '" + key + "' has shape " + shape_str(t.shape()) + ", expected " +
                shape_str(p.value.shape()) + " (the shape of parameter '" + p.name + "')");
}

void check_lr(double lr) { check_finite_at_least_zero("learning rate (lr)", lr); }

Tensor i64_scalar(int64_t v) { return Tensor::scalar<int64_t>(v); }

int64_t read_count(const std::string& key, const Tensor& t) {
  XNN_CHECK(t.defined(), "optimizer state '" + key + "' is empty, expected an i64 scalar");
  XNN_CHECK(t.dtype() == DType::kI64 && t.rank() == 0,
            "optimizer state '" + key + "' has dtype " + std::string(dtype_name(t.dtype())) + " and shape " +
                shape_str(t.shape()) + ", expected an i64 scalar (shape [])");
  const int64_t v = t.data<int64_t>()[0];
  XNN_CHECK(v >= 0, "optimizer state '" + key + "' is " + std::to_string(v) + ", expected >= 0");
  return v;
}

Tensor read_f32(const std::string& key, const Tensor& t) {
  XNN_CHECK(t.defined(), "optimizer state '" + key + "' is empty, expected an f32 tensor");
  XNN_CHECK(t.dtype() == DType::kF32,
            "optimizer state '" + key + "' has dtype " + std::string(dtype_name(t.dtype())) + ", expected f32");
  return t.clone();
}

// "<param>/<what>" -> (param, what); the parameter name may itself contain '/'.
std::pair<std::string, std::string> split_key(const std::string& key) {
  const size_t slash = key.rfind('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

// Sum of squares in double, 8 independent partial sums (vectorisable without reassociation).
double sum_squares(const float* __restrict x, int64_t n) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += static_cast<double>(x[i + j]) * static_cast<double>(x[i + j]);
  double s = 0.0;
  for (; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  for (double a : acc) s += a;
  return s;
}

void scale(float* __restrict x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] * s;
}

// ---- Update kernels. One instantiation per configuration: no per-element branches. The order
// of operations is ATen's (add with alpha: a + alpha * b; addcmul: a + (v * b) * c;
// addcdiv: a + (v * b) / c).

// SGD without momentum: d = g + wd * p; p = p + (-lr) * d.
template <bool kDecay>
void sgd_plain(float* __restrict p, const float* __restrict g, int64_t n, float neg_lr, float wd) {
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if constexpr (kDecay) d = d + wd * p[i];
    p[i] = p[i] + neg_lr * d;
  }
}

// SGD with momentum: buf = d (first step) or buf * momentum + d; u = nesterov ? d + momentum * buf
// : buf; p = p + (-lr) * u.
template <bool kDecay, bool kFirst, bool kNesterov>
void sgd_momentum(float* __restrict p, const float* __restrict g, float* __restrict buf, int64_t n,
                  float neg_lr, float wd, float momentum) {
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if constexpr (kDecay) d = d + wd * p[i];
    float b;
    if constexpr (kFirst) {
      b = d;
    } else {
      b = buf[i] * momentum + d;
    }
    buf[i] = b;
    const float u = kNesterov ? d + momentum * b : b;
    p[i] = p[i] + neg_lr * u;
  }
}

struct AdamWCoefficients {
  float decay;           // 1 - lr * wd
  float beta1, one_minus_beta1;
  float beta2, one_minus_beta2;
  float bias_correction2_sqrt;
  float eps;
  float neg_step_size;   // -lr / (1 - beta1^t)
};

// p = p * (1 - lr*wd) (kDecay); m = m * beta1 + (1 - beta1) * g; v = v * beta2 + ((1 - beta2) * g) * g;
// p = p + (-step_size * m) / (sqrt(v) / sqrt(bias_correction2) + eps).
template <bool kDecay>
inline void adamw_element(float& p, float g, float& m, float& v, const AdamWCoefficients& c) {
  float pi = p;
  if constexpr (kDecay) pi = pi * c.decay;
  const float mi = m * c.beta1 + c.one_minus_beta1 * g;
  const float vi = v * c.beta2 + (c.one_minus_beta2 * g) * g;
  m = mi;
  v = vi;
  const float denom = std::sqrt(vi) / c.bias_correction2_sqrt + c.eps;
  p = pi + (c.neg_step_size * mi) / denom;
}

// The compiler does not vectorise std::sqrt under -fmath-errno (the default: a negative input
// sets errno, a branch per element), so on x86-64 the loop is written with SSE, 4 floats at a
// time; every operation is a correctly rounded IEEE one, as in the scalar tail (the engine is
// built for baseline x86-64: no FMA contraction), so an element gets the same bits either way.
template <bool kDecay>
void adamw_update(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                  int64_t n, const AdamWCoefficients& c) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 decay = _mm_set1_ps(c.decay);
  const __m128 beta1 = _mm_set1_ps(c.beta1), one_minus_beta1 = _mm_set1_ps(c.one_minus_beta1);
  const __m128 beta2 = _mm_set1_ps(c.beta2), one_minus_beta2 = _mm_set1_ps(c.one_minus_beta2);
  const __m128 bc2_sqrt = _mm_set1_ps(c.bias_correction2_sqrt), eps = _mm_set1_ps(c.eps);
  const __m128 neg_step = _mm_set1_ps(c.neg_step_size);
  for (; i + 4 <= n; i += 4) {
    __m128 pi = _mm_loadu_ps(p + i);
    if constexpr (kDecay) pi = _mm_mul_ps(pi, decay);
    const __m128 gi = _mm_loadu_ps(g + i);
    const __m128 mi = _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(m + i), beta1), _mm_mul_ps(one_minus_beta1, gi));
    const __m128 vi = _mm_add_ps(_mm_mul_ps(_mm_loadu_ps(v + i), beta2), _mm_mul_ps(_mm_mul_ps(one_minus_beta2, gi), gi));
    _mm_storeu_ps(m + i, mi);
    _mm_storeu_ps(v + i, vi);
    const __m128 denom = _mm_add_ps(_mm_div_ps(_mm_sqrt_ps(vi), bc2_sqrt), eps);
    _mm_storeu_ps(p + i, _mm_add_ps(pi, _mm_div_ps(_mm_mul_ps(neg_step, mi), denom)));
  }
#endif
  for (; i < n; ++i) adamw_element<kDecay>(p[i], g[i], m[i], v[i], c);
}

// ---- Shared bookkeeping: per-parameter state keyed by name, validated before any update.
template <typename PerParam>
class StatefulOptimizer : public Optimizer {
 public:
  int64_t steps_taken() const override { return steps_taken_; }

 protected:
  // Validates every parameter (and its existing state) and fills slots_[i] with the state of
  // params[i] (nullptr: none yet, or no grad). Throws before anything is modified.
  void prepare(std::span<Parameter> params, double lr) {
    check_lr(lr);
    names_.clear();
    slots_.assign(params.size(), nullptr);
    for (size_t i = 0; i < params.size(); ++i) {
      const Parameter& p = params[i];
      check_parameter(p);
      if (!p.grad.defined()) continue;
      names_.push_back(p.name);
      auto it = state_.find(p.name);
      if (it != state_.end()) {
        this->check_state(p, it->second);
        slots_[i] = &it->second;
      }
    }
    std::sort(names_.begin(), names_.end());
    auto dup = std::adjacent_find(names_.begin(), names_.end());
    if (dup != names_.end())
      throw Error("two parameters are named '" + std::string(*dup) + "' (optimizer state is keyed by name)");
  }

  virtual void check_state(const Parameter& p, const PerParam& s) const = 0;

  std::map<std::string, PerParam, std::less<>> state_;
  int64_t steps_taken_ = 0;
  std::vector<PerParam*> slots_;         // scratch, reused across steps
  std::vector<std::string_view> names_;  // scratch, reused across steps
};

// ---------------------------------------------------------------------------------------- SGD
struct SgdState {
  Tensor momentum_buffer;
};

class Sgd final : public StatefulOptimizer<SgdState> {
 public:
  Sgd(double momentum, bool nesterov, double weight_decay)
      : momentum_(momentum), nesterov_(nesterov), weight_decay_(weight_decay) {}

  void step(std::span<Parameter> params, double lr) override {
    prepare(params, lr);
    const float neg_lr = static_cast<float>(-lr);
    const float momentum = static_cast<float>(momentum_);
    for (size_t i = 0; i < params.size(); ++i) {
      Parameter& p = params[i];
      if (!p.grad.defined()) continue;
      const bool decay = p.weight_decay && weight_decay_ != 0.0;
      const float wd = static_cast<float>(weight_decay_);
      float* value = p.value.data<float>();
      const float* grad = p.grad.data<float>();
      const int64_t n = p.value.numel();
      if (momentum_ == 0.0) {
        if (decay) sgd_plain<true>(value, grad, n, neg_lr, wd);
        else sgd_plain<false>(value, grad, n, neg_lr, wd);
        continue;
      }
      SgdState* s = slots_[i];
      const bool first = s == nullptr;
      if (first) {
        s = &state_[p.name];
        s->momentum_buffer = Tensor(DType::kF32, p.value.shape());
      }
      float* buf = s->momentum_buffer.data<float>();
      // 8 instantiations: (decay, first, nesterov).
      const int variant = (decay ? 4 : 0) | (first ? 2 : 0) | (nesterov_ ? 1 : 0);
      switch (variant) {
        case 0: sgd_momentum<false, false, false>(value, grad, buf, n, neg_lr, wd, momentum); break;
        case 1: sgd_momentum<false, false, true>(value, grad, buf, n, neg_lr, wd, momentum); break;
        case 2: sgd_momentum<false, true, false>(value, grad, buf, n, neg_lr, wd, momentum); break;
        case 3: sgd_momentum<false, true, true>(value, grad, buf, n, neg_lr, wd, momentum); break;
        case 4: sgd_momentum<true, false, false>(value, grad, buf, n, neg_lr, wd, momentum); break;
        case 5: sgd_momentum<true, false, true>(value, grad, buf, n, neg_lr, wd, momentum); break;
        case 6: sgd_momentum<true, true, false>(value, grad, buf, n, neg_lr, wd, momentum); break;
        default: sgd_momentum<true, true, true>(value, grad, buf, n, neg_lr, wd, momentum); break;
      }
    }
    ++steps_taken_;
  }

  std::string describe() const override {
    return "sgd(momentum=" + num(momentum_) + ",nesterov=" + (nesterov_ ? "1" : "0") +
           ",weight_decay=" + num(weight_decay_) + ")";
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.emplace_back("steps_taken", i64_scalar(steps_taken_));
    for (const auto& [name, s] : state_) out.emplace_back(name + "/momentum_buffer", s.momentum_buffer.clone());
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
  }

  void load_state(const OptimizerState& state) override {
    std::map<std::string, SgdState, std::less<>> loaded;
    std::optional<int64_t> steps;
    const std::string expected = momentum_ == 0.0
        ? "expected only 'steps_taken': sgd without momentum keeps no per-parameter state"
        : "expected 'steps_taken' and '<param>/momentum_buffer'";
    for (const auto& [key, t] : state) {
      if (key == "steps_taken") {
        XNN_CHECK(!steps, "optimizer state key 'steps_taken' appears twice");
        steps = read_count(key, t);
        continue;
      }
      auto [name, what] = split_key(key);
      if (what != "momentum_buffer" || momentum_ == 0.0)
        throw Error("optimizer state key '" + key + "' is not used by " + describe() + " (" + expected + ")");
      XNN_CHECK(!loaded.count(name), "optimizer state key '" + key + "' appears twice");
      loaded[name].momentum_buffer = read_f32(key, t);
    }
    XNN_CHECK(steps.has_value(), "optimizer state has no 'steps_taken' (" + expected + ")");
    state_ = std::move(loaded);
    steps_taken_ = *steps;
  }

 protected:
  void check_state(const Parameter& p, const SgdState& s) const override {
    check_state_shape(p.name + "/momentum_buffer", s.momentum_buffer, p);
  }

 private:
  double momentum_;
  bool nesterov_;
  double weight_decay_;
};

// -------------------------------------------------------------------------------------- AdamW
struct AdamWState {
  Tensor exp_avg, exp_avg_sq;
  int64_t step = 0;
};

class AdamW final : public StatefulOptimizer<AdamWState> {
 public:
  AdamW(double beta1, double beta2, double eps, double weight_decay)
      : beta1_(beta1), beta2_(beta2), eps_(eps), weight_decay_(weight_decay) {}

  void step(std::span<Parameter> params, double lr) override {
    prepare(params, lr);
    for (size_t i = 0; i < params.size(); ++i) {
      Parameter& p = params[i];
      if (!p.grad.defined()) continue;
      AdamWState* s = slots_[i];
      if (s == nullptr) {
        s = &state_[p.name];
        s->exp_avg = Tensor(DType::kF32, p.value.shape());
        s->exp_avg_sq = Tensor(DType::kF32, p.value.shape());
        s->step = 0;
      }
      const int64_t t = ++s->step;
      // Scalars as PyTorch computes them (Python floats), rounded to float once.
      const double bias_correction1 = 1.0 - std::pow(beta1_, static_cast<double>(t));
      const double bias_correction2 = 1.0 - std::pow(beta2_, static_cast<double>(t));
      const double step_size = lr / bias_correction1;
      const bool decay = p.weight_decay && weight_decay_ != 0.0;
      AdamWCoefficients c;
      c.decay = static_cast<float>(1.0 - lr * weight_decay_);
      c.beta1 = static_cast<float>(beta1_);
      c.one_minus_beta1 = static_cast<float>(1.0 - beta1_);
      c.beta2 = static_cast<float>(beta2_);
      c.one_minus_beta2 = static_cast<float>(1.0 - beta2_);
      c.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
      c.eps = static_cast<float>(eps_);
      c.neg_step_size = static_cast<float>(-step_size);
      float* value = p.value.data<float>();
      const float* grad = p.grad.data<float>();
      float* m = s->exp_avg.data<float>();
      float* v = s->exp_avg_sq.data<float>();
      if (decay) adamw_update<true>(value, grad, m, v, p.value.numel(), c);
      else adamw_update<false>(value, grad, m, v, p.value.numel(), c);
    }
    ++steps_taken_;
  }

  std::string describe() const override {
    return "adamw(beta1=" + num(beta1_) + ",beta2=" + num(beta2_) + ",eps=" + num(eps_) +
           ",weight_decay=" + num(weight_decay_) + ")";
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.emplace_back("steps_taken", i64_scalar(steps_taken_));
    for (const auto& [name, s] : state_) {
      out.emplace_back(name + "/exp_avg", s.exp_avg.clone());
      out.emplace_back(name + "/exp_avg_sq", s.exp_avg_sq.clone());
      out.emplace_back(name + "/step", i64_scalar(s.step));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
  }

  void load_state(const OptimizerState& state) override {
    const std::string expected = "expected 'steps_taken' and '<param>/exp_avg', '<param>/exp_avg_sq', '<param>/step'";
    struct Partial {
      std::optional<Tensor> exp_avg, exp_avg_sq;
      std::optional<int64_t> step;
    };
    std::map<std::string, Partial, std::less<>> parts;
    std::optional<int64_t> steps;
    for (const auto& [key, t] : state) {
      if (key == "steps_taken") {
        XNN_CHECK(!steps, "optimizer state key 'steps_taken' appears twice");
        steps = read_count(key, t);
        continue;
      }
      auto [name, what] = split_key(key);
      Partial& part = parts[name];
      const std::string twice = "optimizer state key '" + key + "' appears twice";
      if (what == "exp_avg") {
        XNN_CHECK(!part.exp_avg, twice);
        part.exp_avg = read_f32(key, t);
      } else if (what == "exp_avg_sq") {
        XNN_CHECK(!part.exp_avg_sq, twice);
        part.exp_avg_sq = read_f32(key, t);
      } else if (what == "step") {
        XNN_CHECK(!part.step, twice);
        part.step = read_count(key, t);
      } else {
        throw Error("optimizer state key '" + key + "' is not used by " + describe() + " (" + expected + ")");
      }
    }
    XNN_CHECK(steps.has_value(), "optimizer state has no 'steps_taken' (" + expected + ")");
    std::map<std::string, AdamWState, std::less<>> loaded;
    for (auto& entry : parts) {
      const std::string& name = entry.first;
      Partial& part = entry.second;
      auto require = [&](bool present, const char* what) {
        XNN_CHECK(present, "optimizer state has no '" + name + "/" + what + "' but has other state of parameter '" +
                               name + "' (" + expected + ")");
      };
      require(part.exp_avg.has_value(), "exp_avg");
      require(part.exp_avg_sq.has_value(), "exp_avg_sq");
      require(part.step.has_value(), "step");
      if (part.exp_avg_sq->shape() != part.exp_avg->shape())
        throw Error("optimizer state '" + name + "/exp_avg_sq' has shape " + shape_str(part.exp_avg_sq->shape()) +
                    ", expected " + shape_str(part.exp_avg->shape()) + " (the shape of '" + name + "/exp_avg')");
      AdamWState& s = loaded[name];
      s.exp_avg = std::move(*part.exp_avg);
      s.exp_avg_sq = std::move(*part.exp_avg_sq);
      s.step = *part.step;
    }
    state_ = std::move(loaded);
    steps_taken_ = *steps;
  }

 protected:
  void check_state(const Parameter& p, const AdamWState& s) const override {
    check_state_shape(p.name + "/exp_avg", s.exp_avg, p);
    check_state_shape(p.name + "/exp_avg_sq", s.exp_avg_sq, p);
  }

 private:
  double beta1_, beta2_, eps_, weight_decay_;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config) {
  if (config.type == "sgd") {
    check_finite_at_least_zero("optimizer momentum", config.momentum);
    const double wd = config.weight_decay.value_or(0.0);
    check_finite_at_least_zero("optimizer weight_decay", wd);
    if (config.nesterov && config.momentum == 0.0)
      throw Error("optimizer nesterov=true needs momentum > 0, got momentum=0");
    return std::make_unique<Sgd>(config.momentum, config.nesterov, wd);
  }
  if (config.type == "adamw") {
    check_unit_interval("optimizer beta1", config.beta1);
    check_unit_interval("optimizer beta2", config.beta2);
    check_finite_at_least_zero("optimizer eps", config.eps);
    const double wd = config.weight_decay.value_or(0.01);
    check_finite_at_least_zero("optimizer weight_decay", wd);
    return std::make_unique<AdamW>(config.beta1, config.beta2, config.eps, wd);
  }
  throw Error("unknown optimizer type '" + config.type + "' (expected one of: sgd, adamw)");
}

float clip_grad_norm(std::span<Parameter> params, double max_norm) {
  if (!std::isfinite(max_norm) || max_norm <= 0.0)
    throw Error("clip_grad_norm: max_norm must be a finite number > 0, got " + num(max_norm));
  // As PyTorch: the norm of each grad (rounded to float), then the norm of those norms.
  double sum_of_norms_squared = 0.0;
  for (const Parameter& p : params) {
    if (!p.grad.defined()) continue;
    XNN_CHECK(p.grad.dtype() == DType::kF32, "grad of parameter '" + p.name + "' has dtype " +
                                                 std::string(dtype_name(p.grad.dtype())) + ", expected f32");
    const float norm = static_cast<float>(std::sqrt(sum_squares(p.grad.data<float>(), p.grad.numel())));
    sum_of_norms_squared += static_cast<double>(norm) * static_cast<double>(norm);
  }
  const float total = static_cast<float>(std::sqrt(sum_of_norms_squared));
  // PyTorch: max_norm / (total + 1e-6) evaluates as reciprocal(total + 1e-6) * max_norm, in float.
  const float coef = (1.0f / (total + 1e-6f)) * static_cast<float>(max_norm);
  if (!(coef >= 1.0f)) {  // also NaN, as torch.clamp(NaN, max=1) is NaN
    for (Parameter& p : params)
      if (p.grad.defined()) scale(p.grad.data<float>(), p.grad.numel(), coef);
  }
  return total;
}

}  // namespace xnn::train
