// Softmax and LogSoftmax, opset-13 semantics: normalise along one axis (default -1). Both
// subtract the maximum along the axis first, so large inputs do not overflow exp().
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/ops/nn_common.h"

namespace xnn {
namespace {

void infer_softmax(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  check_float_dtype(ctx, x.dtype, "input");
  if (x.shape.empty()) ctx.fail("expects input of rank >= 1");
  normalize_axis(ctx.node().attr_int("axis", -1), static_cast<int>(x.shape.size()), ctx.node());
  ctx.set_output(0, x.dtype, x.shape);
}

// X viewed as [outer, axis_len, inner]. Each outer index is a slab of axis_len rows of `inner`
// contiguous values; the reductions along the axis run over whole rows at a time, so memory is
// read contiguously whatever the axis.
template <typename T, bool kLog>
void softmax_kernel(const T* x, T* y, int64_t outer, int64_t axis_len, int64_t inner) {
  std::vector<T> max(static_cast<size_t>(inner)), sum(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const T* xs = x + o * axis_len * inner;
    T* ys = y + o * axis_len * inner;
    std::fill(max.begin(), max.end(), -std::numeric_limits<T>::infinity());
    for (int64_t a = 0; a < axis_len; ++a) {
      for (int64_t i = 0; i < inner; ++i) max[i] = std::max(max[i], xs[a * inner + i]);
    }
    std::fill(sum.begin(), sum.end(), T(0));
    for (int64_t a = 0; a < axis_len; ++a) {
      for (int64_t i = 0; i < inner; ++i) {
        const T e = std::exp(xs[a * inner + i] - max[i]);
        sum[i] += e;
        if constexpr (!kLog) ys[a * inner + i] = e;
      }
    }
    for (int64_t a = 0; a < axis_len; ++a) {
      for (int64_t i = 0; i < inner; ++i) {
        if constexpr (kLog) {
          ys[a * inner + i] = xs[a * inner + i] - max[i] - std::log(sum[i]);
        } else {
          ys[a * inner + i] /= sum[i];
        }
      }
    }
  }
}

template <bool kLog>
void run_softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int axis = normalize_axis(ctx.node().attr_int("axis", -1), x.rank(), ctx.node());
  const int64_t outer = shape_numel(Shape(x.shape().begin(), x.shape().begin() + axis));
  const int64_t inner = shape_numel(Shape(x.shape().begin() + axis + 1, x.shape().end()));
  dispatch_float(ctx, x.dtype(), [&]<typename T>() {
    softmax_kernel<T, kLog>(x.data<T>(), ctx.output(0).data<T>(), outer, x.dim(axis), inner);
  });
}

OpCost softmax_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  c.macs = 3.0 * static_cast<double>(shape_numel(in[0].shape));  // max, exp-sum, normalise
  return c;
}

OpSchema softmax_schema(const char* type, KernelFn kernel, const char* doc) {
  return make_schema(type, 1, 1, infer_softmax, std::move(kernel), softmax_cost, doc);
}

}  // namespace

void register_softmax_ops(OpRegistry& r) {
  r.add(softmax_schema("Softmax", run_softmax<false>, "exp(x - max) / sum(exp(x - max)) along `axis` (default -1)"));
  r.add(softmax_schema("LogSoftmax", run_softmax<true>, "x - max - log(sum(exp(x - max))) along `axis` (default -1)"));
}

}  // namespace xnn
