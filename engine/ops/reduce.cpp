// Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp and ArgMax/ArgMin.
// Each op is declared once here: schema, inference, cost, reference kernel.
//
// Axes arrive as the `axes` attribute (before opset 13 for ReduceSum, before 18 for the
// others) or as input 1 (after); both forms are accepted for every op. Empty or absent axes
// reduce everything, unless noop_with_empty_axes=1 makes the op the identity.
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/ops/tensor_ops.h"

namespace xnn {
namespace {

// ---- which axes --------------------------------------------------------------------------
struct ReducePlan {
  std::vector<char> reduced;  // per input axis
  bool identity = false;      // noop_with_empty_axes with no axes: output = input
  Shape out;
};

ReducePlan plan_reduce(const Node& node, const Shape& in, const Tensor* axes_input) {
  const int rank = static_cast<int>(in.size());
  const auto axes = ints_from_input_or_attr(node, axes_input, "axes");
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  ReducePlan p;
  p.reduced.assign(in.size(), 0);
  if (!axes || axes->empty()) {
    if (node.attr_int("noop_with_empty_axes", 0) != 0) {
      p.identity = true;
      p.out = in;
      return p;
    }
    p.reduced.assign(in.size(), 1);
  } else {
    for (int a : normalize_axes(*axes, rank, node)) p.reduced[static_cast<size_t>(a)] = 1;
  }
  for (size_t d = 0; d < in.size(); ++d) {
    if (!p.reduced[d]) {
      p.out.push_back(in[d]);
    } else if (keepdims) {
      p.out.push_back(1);
    }
  }
  return p;
}

// ---- how elements combine ----------------------------------------------------------------
// Accumulation happens in `A`: double for float inputs, int64 for integer and bool inputs
// (exact, wrapping on overflow like the narrower input type would). Each reduction says
// how to start, how to fold one element in, and how to finish given the element count.
// The driver dispatches on dtype once per tensor; the per-element calls inline.
template <typename A>
A wrapping_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

template <typename A>
A wrapping_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

template <typename A>
bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Which dtypes a reduction takes: all numeric ones by default; bool too for Max/Min (logical
// any/all); only floats for the log-based ones.
enum class Domain { kNumeric, kNumericAndBool, kFloat };

// A reduction over elements of type T accumulated in A.
template <typename T, typename A>
struct SumReduction {
  static A start() { return A(0); }
  static A fold(A acc, A x) { return wrapping_add(acc, x); }
  static A finish(A acc, int64_t) { return acc; }
};

template <typename T, typename A>
struct MeanReduction : SumReduction<T, A> {
  static A finish(A acc, int64_t n) {
    if constexpr (std::is_integral_v<A>) {
      return n == 0 ? A(0) : acc / n;
    } else {
      return acc / static_cast<A>(n);  // NaN for an empty reduction, as 0/0
    }
  }
};

// Max/Min of nothing is the lowest/highest value of the type (-inf/+inf for floats); NaN
// propagates once seen.
template <typename T, typename A>
struct MaxReduction {
  static constexpr Domain kDomain = Domain::kNumericAndBool;
  static A start() {
    if constexpr (std::is_floating_point_v<A>) {
      return -std::numeric_limits<A>::infinity();
    } else {
      return static_cast<A>(std::numeric_limits<T>::lowest());
    }
  }
  static A fold(A acc, A x) { return is_nan(acc) || !(x > acc || is_nan(x)) ? acc : x; }
  static A finish(A acc, int64_t) { return acc; }
};

template <typename T, typename A>
struct MinReduction {
  static constexpr Domain kDomain = Domain::kNumericAndBool;
  static A start() {
    if constexpr (std::is_floating_point_v<A>) {
      return std::numeric_limits<A>::infinity();
    } else {
      return static_cast<A>(std::numeric_limits<T>::max());
    }
  }
  static A fold(A acc, A x) { return is_nan(acc) || !(x < acc || is_nan(x)) ? acc : x; }
  static A finish(A acc, int64_t) { return acc; }
};

template <typename T, typename A>
struct ProdReduction {
  static A start() { return A(1); }
  static A fold(A acc, A x) { return wrapping_mul(acc, x); }
  static A finish(A acc, int64_t) { return acc; }
};

template <typename T, typename A>
struct L1Reduction : SumReduction<T, A> {
  static A fold(A acc, A x) { return wrapping_add(acc, x < 0 ? wrapping_mul(x, A(-1)) : x); }
};

template <typename T, typename A>
struct SumSquareReduction : SumReduction<T, A> {
  static A fold(A acc, A x) { return wrapping_add(acc, wrapping_mul(x, x)); }
};

template <typename T, typename A>
struct L2Reduction : SumSquareReduction<T, A> {
  static A finish(A acc, int64_t) { return static_cast<A>(std::sqrt(static_cast<double>(acc))); }
};

template <typename T, typename A>
struct LogSumReduction : SumReduction<T, A> {
  static constexpr Domain kDomain = Domain::kFloat;
  static A finish(A acc, int64_t) { return std::log(acc); }
};

// log(sum(exp(x))) is computed as max + log(sum(exp(x - max))) so large inputs do not
// overflow; the driver subtracts and adds back the per-output max (kShiftByMax).
template <typename T, typename A>
struct LogSumExpReduction {
  static constexpr Domain kDomain = Domain::kFloat;
  static constexpr bool kShiftByMax = true;
  static A start() { return A(0); }
  static A fold(A acc, A x) { return acc + std::exp(x); }
  static A finish(A acc, int64_t) { return std::log(acc); }
};

template <typename R>
constexpr Domain domain_of() {
  if constexpr (requires { R::kDomain; }) {
    return R::kDomain;
  } else {
    return Domain::kNumeric;
  }
}

template <typename R>
constexpr bool shifts_by_max() {
  if constexpr (requires { R::kShiftByMax; }) {
    return R::kShiftByMax;
  } else {
    return false;
  }
}

template <typename T, Domain kDomain>
constexpr bool accepts_dtype() {
  if constexpr (std::is_same_v<T, bool>) {
    return kDomain == Domain::kNumericAndBool;
  } else if constexpr (kDomain == Domain::kFloat) {
    return std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half>;
  } else {
    return true;
  }
}

// ---- driver ------------------------------------------------------------------------------
template <typename T>
using AccumulatorOf =
    std::conditional_t<std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half>, double,
                       int64_t>;

template <typename A, typename T>
A to_accumulator(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return static_cast<A>(static_cast<float>(v));
  } else {
    return static_cast<A>(v);
  }
}

template <typename T, typename A>
T from_accumulator(A v) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return static_cast<T>(v);  // integers wrap (C++20 modular conversion)
  }
}

// Folds every input element into the accumulator of its output position. The walk visits the
// input in order; output offsets use stride 0 along reduced axes, so no index arithmetic per
// element. `shift` (LogSumExp) is subtracted from each element first.
template <typename R, typename T, typename A>
std::vector<A> accumulate(const Tensor& x, const std::vector<char>& reduced, const std::vector<A>* shift) {
  const Shape& in = x.shape();
  Shape kept = in;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) kept[d] = 1;
  }
  std::vector<int64_t> out_strides = contiguous_strides(kept);
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) out_strides[d] = 0;
  }
  std::vector<A> acc(static_cast<size_t>(shape_numel(kept)), R::start());
  if (x.numel() == 0) return acc;
  const T* px = x.data<T>();
  int64_t i = 0;
  for (BroadcastWalker w(in, {out_strides}); !w.done(); w.next_outer()) {
    const int64_t n = w.inner_size(), stride = w.inner_stride(0);
    A* row = acc.data() + w.offset(0);
    const A* row_shift = shift ? shift->data() + w.offset(0) : nullptr;
    for (int64_t k = 0; k < n; ++k) {
      A v = to_accumulator<A>(px[i + k]);
      if (row_shift) v -= row_shift[k * stride];
      row[k * stride] = R::fold(row[k * stride], v);
    }
    i += n;
  }
  return acc;
}

template <typename R, typename T, typename A>
void reduce(const Tensor& x, Tensor& y, const ReducePlan& p) {
  const int64_t count = y.numel() == 0 ? 0 : x.numel() / y.numel();
  T* py = y.data<T>();
  if constexpr (shifts_by_max<R>()) {
    std::vector<A> shift = accumulate<MaxReduction<T, A>, T, A>(x, p.reduced, nullptr);
    for (A& s : shift) {
      if (!std::isfinite(s)) s = 0;  // all -inf, +inf or empty: no shift keeps the plain formula
    }
    const std::vector<A> acc = accumulate<R, T, A>(x, p.reduced, &shift);
    for (size_t o = 0; o < acc.size(); ++o) py[o] = from_accumulator<T>(R::finish(acc[o], count) + shift[o]);
  } else {
    const std::vector<A> acc = accumulate<R, T, A>(x, p.reduced, nullptr);
    for (size_t o = 0; o < acc.size(); ++o) py[o] = from_accumulator<T>(R::finish(acc[o], count));
  }
}

// R is a reduction class template R<T, A>.
template <template <typename, typename> class R>
void reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const ReducePlan p = plan_reduce(ctx.node(), x.shape(), optional_input(ctx, 1));
  Tensor& y = ctx.output(0);
  if (p.identity) {
    std::memcpy(y.raw(), x.raw(), x.nbytes());
    return;
  }
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    using A = AccumulatorOf<T>;
    if constexpr (accepts_dtype<T, domain_of<R<T, A>>()>()) {
      reduce<R<T, A>, T, A>(x, y, p);
    } else {
      ctx.unsupported("dtype " + std::string(dtype_name(x.dtype())) + " is not supported");
    }
  });
}

void infer_reduce(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  ctx.set_output(0, x.dtype, plan_reduce(ctx.node(), x.shape, optional_input_value(ctx, 1)).out);
}

// One MAC per input element.
OpCost reduce_cost(const Node& node, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs) {
  OpCost c = default_cost(node, inputs, outputs);
  c.macs = static_cast<double>(shape_numel(inputs[0].shape));
  return c;
}

template <template <typename, typename> class R>
OpSchema reduce_op(const char* type, const char* doc) {
  OpSchema s;
  s.type = type;
  s.min_inputs = 1;
  s.max_inputs = 2;
  s.infer = infer_reduce;
  s.cost = reduce_cost;
  s.reference = reduce_kernel<R>;
  s.doc = doc;
  return s;
}

// ---- ArgMax / ArgMin ---------------------------------------------------------------------
int arg_axis(const Node& node, const Shape& in) {
  if (in.empty()) fail_node(node, "input must have rank >= 1");
  const int axis = normalize_axis(node.attr_int("axis", 0), static_cast<int>(in.size()), node);
  if (in[static_cast<size_t>(axis)] == 0)
    fail_node(node, "axis " + std::to_string(axis) + " is empty, there is no extremum");
  return axis;
}

void infer_arg(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const size_t axis = static_cast<size_t>(arg_axis(ctx.node(), x.shape));
  Shape out = x.shape;
  if (ctx.node().attr_int("keepdims", 1) != 0) {
    out[axis] = 1;
  } else {
    out.erase(out.begin() + static_cast<long>(axis));
  }
  ctx.set_output(0, DType::kI64, out);
}

// Index of the max (kMax) or min along the axis; ties go to the first index, or the last
// with select_last_index=1; a NaN wins (as numpy's argmax/argmin) and stays.
template <bool kMax, typename T>
void arg_extreme(const Tensor& x, Tensor& y, size_t axis, bool select_last) {
  // Compared as float for f16, and as 0/1 bytes for bool (std::vector<bool> has no references).
  using V = std::conditional_t<std::is_same_v<T, Half>, float, std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>>;
  const Shape& in = x.shape();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= in[d];
  for (size_t d = axis + 1; d < in.size(); ++d) inner *= in[d];
  const int64_t len = in[axis];
  const T* px = x.data<T>();
  int64_t* py = y.data<int64_t>();
  std::vector<V> best(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    int64_t* index = py + o * inner;
    const T* base = px + o * len * inner;
    for (int64_t k = 0; k < inner; ++k) {
      best[static_cast<size_t>(k)] = static_cast<V>(base[k]);
      index[k] = 0;
    }
    // Row by row along the axis, so the inner loop reads contiguous memory.
    for (int64_t j = 1; j < len; ++j) {
      const T* row = base + j * inner;
      for (int64_t k = 0; k < inner; ++k) {
        const V v = static_cast<V>(row[k]);
        V& b = best[static_cast<size_t>(k)];
        if (is_nan(b)) continue;
        const bool better = kMax ? v > b : v < b;
        if (better || is_nan(v) || (select_last && v == b)) {
          b = v;
          index[k] = j;
        }
      }
    }
  }
}

template <bool kMax>
void arg_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t axis = static_cast<size_t>(arg_axis(ctx.node(), x.shape()));
  const bool select_last = ctx.node().attr_int("select_last_index", 0) != 0;
  dispatch_dtype(x.dtype(), [&]<typename T>() { arg_extreme<kMax, T>(x, ctx.output(0), axis, select_last); });
}

OpSchema arg_op(const char* type, KernelFn kernel, const char* doc) {
  return make_schema(type, 1, 1, infer_arg, std::move(kernel), reduce_cost, doc);
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  r.add(reduce_op<SumReduction>("ReduceSum", "Sum over axes."));
  r.add(reduce_op<MeanReduction>("ReduceMean", "Mean over axes."));
  r.add(reduce_op<MaxReduction>("ReduceMax", "Max over axes (-inf if empty)."));
  r.add(reduce_op<MinReduction>("ReduceMin", "Min over axes (+inf if empty)."));
  r.add(reduce_op<ProdReduction>("ReduceProd", "Product over axes."));
  r.add(reduce_op<L1Reduction>("ReduceL1", "Sum of absolute values over axes."));
  r.add(reduce_op<L2Reduction>("ReduceL2", "Euclidean norm over axes."));
  r.add(reduce_op<SumSquareReduction>("ReduceSumSquare", "Sum of squares over axes."));
  r.add(reduce_op<LogSumReduction>("ReduceLogSum", "log(sum(x)) over axes."));
  r.add(reduce_op<LogSumExpReduction>("ReduceLogSumExp", "log(sum(exp(x))) over axes, max-shifted."));
  r.add(arg_op("ArgMax", arg_kernel<true>, "Index (i64) of the max along `axis`; select_last_index breaks ties."));
  r.add(arg_op("ArgMin", arg_kernel<false>, "Index (i64) of the min along `axis`; select_last_index breaks ties."));
}

}  // namespace xnn
