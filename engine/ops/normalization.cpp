// Normalization ops: BatchNormalization (inference and opset-14 training form) and LayerNormalization.
#include <cmath>
#include <vector>

#include "engine/ops/nn_common.h"

namespace xnn {
namespace {

// ---- BatchNormalization ----------------------------------------------------------------------

// Inputs: X [N, C, ...], scale, B, input_mean, input_var (each [C]).
// training_mode = 1 (opset 14+): Y uses the batch statistics, and the optional outputs 1 and 2
// are running_mean / running_var, each [C]. Before opset 14 training was signalled by the
// extra outputs alone (Y, mean, var, saved_mean, saved_var); that form is not implemented.
void infer_batch_norm(InferContext& ctx) {
  const bool training = ctx.node().attr_int("training_mode", 0) != 0;
  for (size_t i = 1; i < ctx.node().outputs.size(); ++i) {
    if (ctx.node().outputs[i] < 0) continue;
    if (!training) ctx.unsupported("statistics outputs without training_mode = 1 (pre-opset-14 training) are not implemented");
    if (i > 2) ctx.unsupported("saved_mean / saved_var outputs (pre-opset-14 training) are not implemented");
  }
  const TensorInfo& x = ctx.input(0);
  check_float_dtype(ctx, x.dtype, "input X");
  if (x.shape.size() < 2) ctx.fail("expects input of rank >= 2 (N, C, ...), got " + shape_str(x.shape));
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i < 5; ++i) {
    const TensorInfo& t = ctx.input(i);
    if (t.dtype != x.dtype) {
      ctx.unsupported(std::string(names[i]) + " of dtype " + std::string(dtype_name(t.dtype)) + " with X of dtype " +
                      std::string(dtype_name(x.dtype)) + " (mixed precision is not implemented)");
    }
    if (t.shape != Shape{x.shape[1]}) {
      ctx.fail(std::string(names[i]) + " has shape " + shape_str(t.shape) + ", expected [" +
               std::to_string(x.shape[1]) + "] (one per channel)");
    }
  }
  ctx.set_output(0, x.dtype, x.shape);
  if (training) {
    for (int i = 1; i <= 2 && i < ctx.num_outputs(); ++i) {
      if (ctx.node().outputs[static_cast<size_t>(i)] >= 0) ctx.set_output(i, x.dtype, Shape{x.shape[1]});
    }
  }
}

template <typename T>
void batch_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const T* scale = ctx.input(1).data<T>();
  const T* bias = ctx.input(2).data<T>();
  const T* mean = ctx.input(3).data<T>();
  const T* var = ctx.input(4).data<T>();
  const double epsilon = ctx.node().attr_float("epsilon", 1e-5f);
  const bool training = ctx.node().attr_int("training_mode", 0) != 0;
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t plane = channels == 0 || batch == 0 ? 0 : x.numel() / (batch * channels);
  const T* px = x.data<T>();
  // The statistics Y is normalised with: the inputs (inference), or the batch's own mean and
  // biased (population) variance over every axis but C (training), computed in double.
  std::vector<double> use_mean(static_cast<size_t>(channels)), use_var(static_cast<size_t>(channels));
  if (training) {
    const double count = static_cast<double>(batch * plane);
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* row = px + (n * channels + c) * plane;
        for (int64_t i = 0; i < plane; ++i) sum += static_cast<double>(row[i]);
      }
      const double m = count > 0 ? sum / count : 0.0;
      double sq = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* row = px + (n * channels + c) * plane;
        for (int64_t i = 0; i < plane; ++i) sq += (static_cast<double>(row[i]) - m) * (static_cast<double>(row[i]) - m);
      }
      use_mean[static_cast<size_t>(c)] = m;
      use_var[static_cast<size_t>(c)] = count > 0 ? sq / count : 0.0;
    }
    // running = input * momentum + current * (1 - momentum).
    const double momentum = ctx.node().attr_float("momentum", 0.9f);
    if (ctx.has_output(1)) {
      T* out = ctx.output(1).data<T>();
      for (int64_t c = 0; c < channels; ++c) {
        out[c] = static_cast<T>(static_cast<double>(mean[c]) * momentum + use_mean[static_cast<size_t>(c)] * (1 - momentum));
      }
    }
    if (ctx.has_output(2)) {
      T* out = ctx.output(2).data<T>();
      for (int64_t c = 0; c < channels; ++c) {
        out[c] = static_cast<T>(static_cast<double>(var[c]) * momentum + use_var[static_cast<size_t>(c)] * (1 - momentum));
      }
    }
  } else {
    for (int64_t c = 0; c < channels; ++c) {
      use_mean[static_cast<size_t>(c)] = static_cast<double>(mean[c]);
      use_var[static_cast<size_t>(c)] = static_cast<double>(var[c]);
    }
  }
  // y = (x - mean) / sqrt(var + eps) * scale + B, folded per channel into y = x * a + b.
  std::vector<T> a(static_cast<size_t>(channels)), b(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const size_t k = static_cast<size_t>(c);
    const double inv_std = 1.0 / std::sqrt(use_var[k] + epsilon);
    a[k] = static_cast<T>(scale[c] * inv_std);
    b[k] = static_cast<T>(bias[c] - use_mean[k] * scale[c] * inv_std);
  }
  T* py = ctx.output(0).data<T>();
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t offset = (n * channels + c) * plane;
      const T ac = a[static_cast<size_t>(c)], bc = b[static_cast<size_t>(c)];
      for (int64_t i = 0; i < plane; ++i) py[offset + i] = px[offset + i] * ac + bc;
    }
  }
}

void run_batch_norm(KernelContext& ctx) {
  dispatch_float(ctx, ctx.input(0).dtype(), [&]<typename T>() { batch_norm_kernel<T>(ctx); });
}

// ---- LayerNormalization ----------------------------------------------------------------------

// Inputs X, Scale, B (optional); normalises over X.shape[axis:]. Optional outputs Mean and
// InvStdDev have shape X.shape[:axis] + [1, ...] and the stash_type's dtype.
struct LayerNormShapes {
  int axis = 0;
  int64_t rows = 0, row_size = 0;  // rows: prod(X.shape[:axis]); row_size: prod(X.shape[axis:])
  Shape normalized, stats;         // X.shape[axis:]; shape of Mean/InvStdDev
};

template <typename Ctx>
LayerNormShapes layer_norm_shapes(const Ctx& ctx, const Shape& x) {
  if (x.empty()) ctx.fail("expects input of rank >= 1");
  LayerNormShapes s;
  s.axis = normalize_axis(ctx.node().attr_int("axis", -1), static_cast<int>(x.size()), ctx.node());
  s.normalized.assign(x.begin() + s.axis, x.end());
  s.stats = x;
  std::fill(s.stats.begin() + s.axis, s.stats.end(), 1);
  s.rows = shape_numel(Shape(x.begin(), x.begin() + s.axis));
  s.row_size = shape_numel(s.normalized);
  return s;
}

// Scale and B broadcast unidirectionally to the normalized shape.
template <typename Ctx>
void check_broadcasts_to(const Ctx& ctx, const Shape& t, const Shape& target, const char* what) {
  bool ok = t.size() <= target.size();
  for (size_t i = 0; ok && i < t.size(); ++i) {
    const int64_t want = target[target.size() - t.size() + i];
    ok = t[i] == want || t[i] == 1;
  }
  if (!ok) ctx.fail(std::string(what) + " of shape " + shape_str(t) + " does not broadcast to the normalized shape " + shape_str(target));
}

DType stash_dtype(const InferContext& ctx) {
  const int64_t stash = ctx.node().attr_int("stash_type", 1);
  if (stash == 1) return DType::kF32;   // TensorProto FLOAT
  if (stash == 11) return DType::kF64;  // TensorProto DOUBLE
  ctx.unsupported("stash_type " + std::to_string(stash) + " (only float and double are implemented)");
}

void infer_layer_norm(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  check_float_dtype(ctx, x.dtype, "input X");
  const LayerNormShapes s = layer_norm_shapes(ctx, x.shape);
  for (int i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    const char* what = i == 1 ? "Scale" : "B";
    if (ctx.input(i).dtype != x.dtype) {
      ctx.fail(std::string(what) + " has dtype " + std::string(dtype_name(ctx.input(i).dtype)) + ", expected " +
               std::string(dtype_name(x.dtype)));
    }
    check_broadcasts_to(ctx, ctx.input(i).shape, s.normalized, what);
  }
  const DType stats = stash_dtype(ctx);
  ctx.set_output(0, x.dtype, x.shape);
  ctx.set_output(1, stats, s.stats);
  ctx.set_output(2, stats, s.stats);
}

OpCost layer_norm_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  c.macs = 3.0 * static_cast<double>(shape_numel(in[0].shape));  // mean, variance, normalise
  return c;
}

// `t` (Scale or B) expanded to one value per position of a row of the normalized shape.
template <typename T>
std::vector<T> expand_to_row(const Tensor& t, const Shape& normalized) {
  std::vector<T> row(static_cast<size_t>(shape_numel(normalized)));
  const T* src = t.data<T>();
  const std::vector<int64_t> strides = broadcast_strides(t.shape(), normalized);
  for (size_t i = 0; i < row.size(); ++i) {
    int64_t rest = static_cast<int64_t>(i), offset = 0;
    for (size_t d = normalized.size(); d-- > 0;) {
      offset += (rest % normalized[d]) * strides[d];
      rest /= normalized[d];
    }
    row[i] = src[offset];
  }
  return row;
}

template <typename T, typename Stat>
void layer_norm_kernel(KernelContext& ctx, const LayerNormShapes& s) {
  const T* px = ctx.input(0).data<T>();
  T* py = ctx.output(0).data<T>();
  const std::vector<T> scale = expand_to_row<T>(ctx.input(1), s.normalized);
  const std::vector<T> bias = ctx.has_input(2) ? expand_to_row<T>(ctx.input(2), s.normalized)
                                               : std::vector<T>(scale.size(), T(0));
  Stat* mean_out = ctx.has_output(1) ? ctx.output(1).data<Stat>() : nullptr;
  Stat* inv_std_out = ctx.has_output(2) ? ctx.output(2).data<Stat>() : nullptr;
  const double epsilon = ctx.node().attr_float("epsilon", 1e-5f);
  const int64_t n = s.row_size;
  for (int64_t r = 0; r < s.rows; ++r) {
    const T* x = px + r * n;
    T* y = py + r * n;
    // Two passes in double: the mean, then the variance around it (no cancellation).
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
    const double mean = n > 0 ? sum / static_cast<double>(n) : 0.0;
    double sq = 0;
    for (int64_t i = 0; i < n; ++i) sq += (static_cast<double>(x[i]) - mean) * (static_cast<double>(x[i]) - mean);
    const double inv_std = 1.0 / std::sqrt((n > 0 ? sq / static_cast<double>(n) : 0.0) + epsilon);
    const T mean_t = static_cast<T>(mean), inv_std_t = static_cast<T>(inv_std);
    for (int64_t i = 0; i < n; ++i) {
      y[i] = (x[i] - mean_t) * inv_std_t * scale[static_cast<size_t>(i)] + bias[static_cast<size_t>(i)];
    }
    if (mean_out) mean_out[r] = static_cast<Stat>(mean);
    if (inv_std_out) inv_std_out[r] = static_cast<Stat>(inv_std);
  }
}

void run_layer_norm(KernelContext& ctx) {
  const LayerNormShapes s = layer_norm_shapes(ctx, ctx.input(0).shape());
  // The statistics outputs, when requested, have the stash type's dtype (allocated by inference).
  const DType stats = ctx.has_output(1) ? ctx.output(1).dtype() : ctx.has_output(2) ? ctx.output(2).dtype() : DType::kF32;
  dispatch_float(ctx, ctx.input(0).dtype(), [&]<typename T>() {
    if (stats == DType::kF64) {
      layer_norm_kernel<T, double>(ctx, s);
    } else {
      layer_norm_kernel<T, float>(ctx, s);
    }
  });
}

}  // namespace

void register_normalization_ops(OpRegistry& r) {
  OpSchema bn;
  bn.type = "BatchNormalization";
  bn.min_inputs = bn.max_inputs = 5;
  bn.max_outputs = 5;  // opset 14+: Y, running_mean, running_var; opset < 14 also saved_mean/var
  bn.infer = infer_batch_norm;
  bn.reference = run_batch_norm;
  bn.doc = "y = (x - mean) / sqrt(var + epsilon) * scale + B per channel; training_mode = 1 uses batch "
           "statistics and outputs running_mean / running_var";
  r.add(std::move(bn));

  OpSchema ln;
  ln.type = "LayerNormalization";
  ln.min_inputs = 2;
  ln.max_inputs = 3;
  ln.max_outputs = 3;
  ln.infer = infer_layer_norm;
  ln.cost = layer_norm_cost;
  ln.reference = run_layer_norm;
  ln.doc = "normalises over X.shape[axis:], then * Scale + B; optional Mean and InvStdDev outputs";
  r.add(std::move(ln));
}

}  // namespace xnn
