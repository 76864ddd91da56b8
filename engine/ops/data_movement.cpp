// Data movement ops: reorder, select, join or replicate elements without computing on them
// (Transpose, Concat, Split, Slice, Gather, Tile, Pad, DepthToSpace, SpaceToDepth). Every
// kernel moves elements as opaque blocks of dtype_size() bytes, so one code path serves all
// dtypes. Each op is declared once here: schema, inference, cost, reference kernel.
#include <algorithm>
#include <cstring>

#include "engine/ops/tensor_ops.h"

namespace xnn {
namespace {

size_t elem_size(const Tensor& t) { return dtype_size(t.dtype()); }

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= s[d];
  return p;
}

std::vector<int64_t> identity_map(int64_t n) {
  std::vector<int64_t> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) m[static_cast<size_t>(i)] = i;
  return m;
}

// Slice and Gather read only the selected elements of input 0 (plus the small index inputs).
OpCost selection_cost(const Node& node, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs) {
  OpCost c = data_movement_cost(node, inputs, outputs);
  const TensorInfo& data = inputs[0];
  c.bytes_read -= static_cast<double>(shape_numel(data.shape) * dtype_size(data.dtype));
  c.bytes_read += c.bytes_written;
  return c;
}

OpSchema op(const char* type, int min_inputs, int max_inputs, InferFn infer, KernelFn kernel, const char* doc,
            CostFn cost = data_movement_cost) {
  return make_schema(type, min_inputs, max_inputs, std::move(infer), std::move(kernel), std::move(cost), doc);
}

// ---- Transpose ---------------------------------------------------------------------------
std::vector<int64_t> transpose_perm(const Node& node, int rank) {
  std::vector<int64_t> perm = node.attr_ints("perm");
  if (!node.has_attr("perm")) {  // default: reverse the dims
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  bool valid = static_cast<int>(perm.size()) == rank;
  for (size_t i = 0; valid && i < perm.size(); ++i) {
    valid = perm[i] >= 0 && perm[i] < rank && !seen[static_cast<size_t>(perm[i])];
    if (valid) seen[static_cast<size_t>(perm[i])] = 1;
  }
  if (!valid) fail_node(node, "perm " + shape_str(perm) + " is not a permutation of " + std::to_string(rank) + " axes");
  return perm;
}

void infer_transpose(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const std::vector<int64_t> perm = transpose_perm(ctx.node(), static_cast<int>(x.shape.size()));
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape[static_cast<size_t>(p)]);
  ctx.set_output(0, x.dtype, out);
}

void transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  transpose_copy(ctx.output(0).raw(), x.raw(), elem_size(x), x.shape(), transpose_perm(ctx.node(), x.rank()));
}

// ---- Concat ------------------------------------------------------------------------------
void infer_concat(InferContext& ctx) {
  const TensorInfo& first = ctx.input(0);
  if (first.shape.empty()) ctx.fail("cannot concatenate scalars (inputs need rank >= 1)");
  const int axis = normalize_axis(ctx.node().attr_int("axis"), static_cast<int>(first.shape.size()), ctx.node());
  Shape out = first.shape;
  out[static_cast<size_t>(axis)] = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const TensorInfo& t = ctx.input(i);
    if (t.dtype != first.dtype) {
      ctx.fail("input " + std::to_string(i) + " has dtype " + std::string(dtype_name(t.dtype)) + ", input 0 has " +
               std::string(dtype_name(first.dtype)));
    }
    bool compatible = t.shape.size() == first.shape.size();
    for (size_t d = 0; compatible && d < t.shape.size(); ++d) {
      compatible = d == static_cast<size_t>(axis) || t.shape[d] == first.shape[d];
    }
    if (!compatible) {
      ctx.fail("input " + std::to_string(i) + " has shape " + shape_str(t.shape) + ", which does not match input 0 " +
               shape_str(first.shape) + " outside axis " + std::to_string(axis));
    }
    out[static_cast<size_t>(axis)] += t.shape[static_cast<size_t>(axis)];
  }
  ctx.set_output(0, first.dtype, out);
}

// Each input contributes one block per outer index: outer rows of the output are the inputs'
// blocks side by side.
void concat_kernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  const size_t axis = static_cast<size_t>(normalize_axis(ctx.node().attr_int("axis"), y.rank(), ctx.node()));
  const int64_t outer = product(y.shape(), 0, axis);
  const int64_t row_bytes = static_cast<int64_t>(y.nbytes()) / std::max<int64_t>(outer, 1);
  char* out = static_cast<char*>(y.raw());
  int64_t offset = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& x = ctx.input(i);
    const int64_t block = static_cast<int64_t>(x.nbytes()) / std::max<int64_t>(outer, 1);
    const char* in = static_cast<const char*>(x.raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + o * row_bytes + offset, in + o * block, static_cast<size_t>(block));
    offset += block;
  }
}

// ---- Split -------------------------------------------------------------------------------
struct SplitPlan {
  int axis = 0;
  std::vector<int64_t> sizes;  // one per output
};

// Split sizes come from input 1 (opset 13+) or the `split` attribute (before), or else are
// equal: by the number of outputs, or by `num_outputs` (opset 18, last part may be smaller).
SplitPlan plan_split(const Node& node, const Shape& in, const Tensor* split_input, int num_outputs) {
  if (in.empty()) fail_node(node, "cannot split a scalar");
  SplitPlan p;
  p.axis = normalize_axis(node.attr_int("axis", 0), static_cast<int>(in.size()), node);
  const int64_t dim = in[static_cast<size_t>(p.axis)];
  if (split_input && split_input->numel() == 0) split_input = nullptr;  // an empty tensor means "not given"
  const auto split = ints_from_input_or_attr(node, split_input, "split");
  if (split) {
    if (static_cast<int>(split->size()) != num_outputs) {
      fail_node(node, "split " + shape_str(*split) + " has " + std::to_string(split->size()) + " parts for " +
                          std::to_string(num_outputs) + " outputs");
    }
    int64_t total = 0;
    for (int64_t s : *split) {
      if (s < 0) fail_node(node, "split " + shape_str(*split) + " has a negative size");
      if (__builtin_add_overflow(total, s, &total)) fail_node(node, "split " + shape_str(*split) + " is too large");
    }
    if (total != dim) {
      fail_node(node, "split " + shape_str(*split) + " sums to " + std::to_string(total) + ", axis " +
                          std::to_string(p.axis) + " has size " + std::to_string(dim));
    }
    p.sizes = *split;
  } else if (node.has_attr("num_outputs")) {
    const int64_t n = node.attr_int("num_outputs");
    if (n != num_outputs) {
      fail_node(node, "num_outputs is " + std::to_string(n) + " but the node has " + std::to_string(num_outputs) +
                          " outputs");
    }
    const int64_t chunk = (dim + n - 1) / n;
    const int64_t last = dim - chunk * (n - 1);
    if (last < 0) {
      fail_node(node, "axis of size " + std::to_string(dim) + " cannot be split into " + std::to_string(n) +
                          " parts of " + std::to_string(chunk));
    }
    p.sizes.assign(static_cast<size_t>(n), chunk);
    p.sizes.back() = last;
  } else {
    if (dim % num_outputs != 0) {
      fail_node(node, "axis of size " + std::to_string(dim) + " does not split evenly into " +
                          std::to_string(num_outputs) + " outputs");
    }
    p.sizes.assign(static_cast<size_t>(num_outputs), dim / num_outputs);
  }
  return p;
}

void infer_split(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const SplitPlan p = plan_split(ctx.node(), x.shape, optional_input_value(ctx, 1), ctx.num_outputs());
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    Shape s = x.shape;
    s[static_cast<size_t>(p.axis)] = p.sizes[static_cast<size_t>(i)];
    ctx.set_output(i, x.dtype, s);
  }
}

void split_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const SplitPlan p = plan_split(ctx.node(), x.shape(), optional_input(ctx, 1), ctx.num_outputs());
  const size_t axis = static_cast<size_t>(p.axis);
  const int64_t outer = product(x.shape(), 0, axis);
  const int64_t inner_bytes = product(x.shape(), axis + 1, x.shape().size()) * static_cast<int64_t>(elem_size(x));
  const int64_t row_bytes = x.shape()[axis] * inner_bytes;
  const char* in = static_cast<const char*>(x.raw());
  int64_t offset = 0;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const int64_t block = p.sizes[static_cast<size_t>(i)] * inner_bytes;
    if (ctx.has_output(i)) {
      char* out = static_cast<char*>(ctx.output(i).raw());
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(out + o * block, in + o * row_bytes + offset, static_cast<size_t>(block));
    }
    offset += block;
  }
}

// ---- Slice -------------------------------------------------------------------------------
// A slice is a strided view of the input: an element offset and one stride per axis.
struct SlicePlan {
  Shape out;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

SlicePlan plan_slice(const Node& node, const Shape& in, const Tensor& starts_t, const Tensor& ends_t,
                     const Tensor* axes_t, const Tensor* steps_t) {
  const std::vector<int64_t> starts = int_values(node, starts_t, "starts");
  const std::vector<int64_t> ends = int_values(node, ends_t, "ends");
  const size_t n = starts.size();
  std::vector<int64_t> axes_given;
  for (size_t k = 0; k < n; ++k) axes_given.push_back(static_cast<int64_t>(k));
  if (axes_t) axes_given = int_values(node, *axes_t, "axes");
  const std::vector<int64_t> steps = steps_t ? int_values(node, *steps_t, "steps") : std::vector<int64_t>(n, 1);
  if (ends.size() != n || axes_given.size() != n || steps.size() != n) {
    fail_node(node, "starts, ends, axes and steps must have the same length, got " + std::to_string(n) + ", " +
                        std::to_string(ends.size()) + ", " + std::to_string(axes_given.size()) + ", " +
                        std::to_string(steps.size()));
  }
  const std::vector<int> axes = normalize_axes(axes_given, static_cast<int>(in.size()), node);

  SlicePlan p;
  p.out = in;
  p.strides = contiguous_strides(in);
  const std::vector<int64_t> in_strides = p.strides;
  for (size_t k = 0; k < n; ++k) {
    const size_t d = static_cast<size_t>(axes[k]);
    const int64_t dim = in[d];
    if (steps[k] == 0) fail_node(node, "step for axis " + std::to_string(axes[k]) + " is 0");
    // A step longer than the axis selects at most one element either way; clamping it keeps
    // the arithmetic below free of overflow.
    const int64_t step = std::clamp<int64_t>(steps[k], -(dim + 1), dim + 1);
    // Negative positions count from the end; then clamp as ONNX does (to [0, dim] going
    // forward, to [-1, dim-1] going backward, where -1 means "before the first element").
    int64_t start = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t end = ends[k] < 0 ? ends[k] + dim : ends[k];
    int64_t len = 0;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      len = end > start ? (end - start - 1) / step + 1 : 0;
    } else if (dim > 0) {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      len = start > end ? (start - end - 1) / -step + 1 : 0;
    }
    p.out[d] = len;
    if (len > 0) p.offset += start * in_strides[d];
    p.strides[d] = step * in_strides[d];
  }
  return p;
}

SlicePlan plan_slice(const InferContext& ctx) {
  return plan_slice(ctx.node(), ctx.input(0).shape, ctx.input_value(1), ctx.input_value(2),
                    optional_input_value(ctx, 3), optional_input_value(ctx, 4));
}

void infer_slice(InferContext& ctx) { ctx.set_output(0, ctx.input(0).dtype, plan_slice(ctx).out); }

void slice_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const SlicePlan p =
      plan_slice(ctx.node(), x.shape(), ctx.input(1), ctx.input(2), optional_input(ctx, 3), optional_input(ctx, 4));
  copy_strided(ctx.output(0).raw(), x.raw(), elem_size(x), p.out, p.offset, p.strides);
}

// ---- Gather ------------------------------------------------------------------------------
void infer_gather(InferContext& ctx) {
  const TensorInfo& data = ctx.input(0);
  const TensorInfo& indices = ctx.input(1);
  if (data.shape.empty()) ctx.fail("data must have rank >= 1");
  if (indices.dtype != DType::kI32 && indices.dtype != DType::kI64) {
    ctx.fail("indices must be i32 or i64, got " + std::string(dtype_name(indices.dtype)));
  }
  const size_t axis = static_cast<size_t>(
      normalize_axis(ctx.node().attr_int("axis", 0), static_cast<int>(data.shape.size()), ctx.node()));
  Shape out(data.shape.begin(), data.shape.begin() + static_cast<long>(axis));
  out.insert(out.end(), indices.shape.begin(), indices.shape.end());
  out.insert(out.end(), data.shape.begin() + static_cast<long>(axis) + 1, data.shape.end());
  ctx.set_output(0, data.dtype, out);
}

// Indices as int64 in [0, dim): negative ones count from the end, others fail naming the node.
std::vector<int64_t> checked_indices(const KernelContext& ctx, const Tensor& indices, int64_t dim, int axis) {
  std::vector<int64_t> out(static_cast<size_t>(indices.numel()));
  dispatch_dtype(indices.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      const T* p = indices.data<T>();
      for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(p[i]);
    } else {
      ctx.fail("indices must be i32 or i64, got " + std::string(dtype_name(indices.dtype())));
    }
  });
  for (int64_t& i : out) {
    if (i < -dim || i >= dim) {
      ctx.fail("index " + std::to_string(i) + " is out of range [" + std::to_string(-dim) + ", " +
               std::to_string(dim - 1) + "] for axis " + std::to_string(axis) + " of size " + std::to_string(dim));
    }
    if (i < 0) i += dim;
  }
  return out;
}

// Out[i_0.., j, k..] = data[i_0.., indices[j], k..] with the index tensor flattened to j.
void gather_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const int axis = normalize_axis(ctx.node().attr_int("axis", 0), data.rank(), ctx.node());
  std::vector<std::vector<int64_t>> maps;
  for (int d = 0; d < data.rank(); ++d) {
    maps.push_back(d == axis ? checked_indices(ctx, ctx.input(1), data.dim(d), axis) : identity_map(data.dim(d)));
  }
  gather_by_axis_maps(ctx.output(0).raw(), data.raw(), elem_size(data), data.shape(), maps, nullptr);
}

// ---- Tile --------------------------------------------------------------------------------
std::vector<int64_t> tile_repeats(const Node& node, const Shape& in, const Tensor& repeats_t) {
  const std::vector<int64_t> repeats = int_values(node, repeats_t, "repeats");
  if (repeats_t.rank() != 1 || repeats.size() != in.size()) {
    fail_node(node, "repeats " + shape_str(repeats) + " must be 1-D with one entry per input dim (" +
                        std::to_string(in.size()) + ")");
  }
  for (int64_t r : repeats) {
    if (r < 0) fail_node(node, "repeats " + shape_str(repeats) + " has a negative entry");
  }
  return repeats;
}

void infer_tile(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const std::vector<int64_t> repeats = tile_repeats(ctx.node(), x.shape, ctx.input_value(1));
  Shape out = x.shape;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] != 0 && __builtin_mul_overflow(out[d], repeats[d], &out[d])) ctx.fail("output is too large");
  }
  check_numel_fits(out, ctx.node());
  ctx.set_output(0, x.dtype, out);
}

void tile_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  std::vector<std::vector<int64_t>> maps(static_cast<size_t>(x.rank()));
  for (int d = 0; d < x.rank(); ++d) {
    for (int64_t i = 0; i < y.dim(d); ++i) maps[static_cast<size_t>(d)].push_back(i % x.dim(d));
  }
  gather_by_axis_maps(y.raw(), x.raw(), elem_size(x), x.shape(), maps, nullptr);
}

// ---- Pad ---------------------------------------------------------------------------------
struct PadPlan {
  std::string mode;            // constant, reflect, edge or wrap
  std::vector<int64_t> begin;  // per input axis; negative pads crop
  Shape out;
};

// Pads come from input 1 (attribute before opset 11; the importer rewrites that form), for
// all axes or, from opset 18, for the axes in input 3.
PadPlan plan_pad(const Node& node, const Shape& in, const Tensor* pads_t, const Tensor* axes_t) {
  const int rank = static_cast<int>(in.size());
  const auto pads = ints_from_input_or_attr(node, pads_t, "pads");
  if (!pads) fail_node(node, "needs pads (input 1 from opset 11, attribute before)");
  std::vector<int> axes;
  if (axes_t) {
    axes = normalize_axes(int_values(node, *axes_t, "axes"), rank, node);
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (pads->size() != 2 * axes.size()) {
    fail_node(node, "pads " + shape_str(*pads) + " must have 2 entries per padded axis (" +
                        std::to_string(axes.size()) + " axes)");
  }
  PadPlan p;
  p.mode = node.attr_string("mode", "constant");
  if (p.mode != "constant" && p.mode != "reflect" && p.mode != "edge" && p.mode != "wrap") {
    fail_node(node, "unknown mode '" + p.mode + "' (expected constant, reflect, edge or wrap)");
  }
  p.begin.assign(in.size(), 0);
  std::vector<int64_t> end(in.size(), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    p.begin[static_cast<size_t>(axes[k])] = (*pads)[k];
    end[static_cast<size_t>(axes[k])] = (*pads)[k + axes.size()];
  }
  p.out.resize(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (__builtin_add_overflow(in[d], p.begin[d], &p.out[d]) || __builtin_add_overflow(p.out[d], end[d], &p.out[d]) ||
        p.out[d] < 0) {
      fail_node(node, "pads " + shape_str(*pads) + " give axis " + std::to_string(d) + " of size " +
                          std::to_string(in[d]) + " an invalid size");
    }
    // Only positive pads read outside the input (negative ones crop).
    if (in[d] == 0 && (p.begin[d] > 0 || end[d] > 0) && p.mode != "constant") {
      fail_node(node, "cannot " + p.mode + "-pad axis " + std::to_string(d) + " of size 0");
    }
  }
  check_numel_fits(p.out, node);
  return p;
}

// Per output axis, the source index of every output position (-1: the constant value).
std::vector<std::vector<int64_t>> pad_maps(const PadPlan& p, const Shape& in) {
  std::vector<std::vector<int64_t>> maps(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t dim = in[d];
    maps[d].resize(static_cast<size_t>(p.out[d]));
    for (int64_t o = 0; o < p.out[d]; ++o) {
      int64_t i = o - p.begin[d];
      if (i < 0 || i >= dim) {
        if (p.mode == "constant") {
          i = -1;
        } else if (p.mode == "edge") {
          i = std::clamp<int64_t>(i, 0, dim - 1);
        } else if (p.mode == "wrap") {
          i = ((i % dim) + dim) % dim;
        } else if (dim == 1) {  // reflect of a single element repeats it
          i = 0;
        } else {  // reflect: mirror about the end elements, period 2*(dim-1)
          const int64_t period = 2 * (dim - 1);
          i = ((i % period) + period) % period;
          if (i >= dim) i = period - i;
        }
      }
      maps[d][static_cast<size_t>(o)] = i;
    }
  }
  return maps;
}

void infer_pad(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  if (ctx.has_input(2) && ctx.input(2).dtype != x.dtype) {
    ctx.fail("constant_value has dtype " + std::string(dtype_name(ctx.input(2).dtype)) + ", data has " +
             std::string(dtype_name(x.dtype)));
  }
  ctx.set_output(0, x.dtype,
                 plan_pad(ctx.node(), x.shape, optional_input_value(ctx, 1), optional_input_value(ctx, 3)).out);
}

void pad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;  // maps of an empty output could still be huge along one axis
  const PadPlan p = plan_pad(ctx.node(), x.shape(), optional_input(ctx, 1), optional_input(ctx, 3));
  unsigned char fill[8] = {};  // zero is the default constant for every dtype
  if (ctx.has_input(2) && ctx.input(2).numel() > 0) {
    std::memcpy(fill, ctx.input(2).raw(), elem_size(x));
  } else if (ctx.node().has_attr("value")) {  // the attribute form before opset 11
    Tensor value(x.dtype(), {});
    convert_tensor(Tensor::scalar<float>(ctx.node().attr_float("value", 0.0f)), value);
    std::memcpy(fill, value.raw(), elem_size(x));
  }
  gather_by_axis_maps(y.raw(), x.raw(), elem_size(x), x.shape(), pad_maps(p, x.shape()), fill);
}

// ---- DepthToSpace / SpaceToDepth ---------------------------------------------------------
// Both are a reshape to 6-D, a transpose and a reshape back; the kernels do the transpose.
int64_t block_size(const Node& node) {
  const int64_t b = node.attr_int("blocksize");
  if (b <= 0) fail_node(node, "blocksize must be positive, got " + std::to_string(b));
  return b;
}

// a * b, failing instead of overflowing (a blocksize is an arbitrary attribute value).
int64_t checked_mul(const InferContext& ctx, int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) ctx.fail("output is too large");
  return r;
}

void check_rank4(const InferContext& ctx, const Shape& s) {
  if (s.size() != 4) ctx.fail("expects a 4-D NCHW input, got " + shape_str(s));
}

void infer_depth_to_space(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  check_rank4(ctx, x.shape);
  const int64_t b = block_size(ctx.node());
  const std::string mode = ctx.node().attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") ctx.fail("unknown mode '" + mode + "' (expected DCR or CRD)");
  if (x.shape[1] % b != 0 || (x.shape[1] / b) % b != 0) {
    ctx.fail("channels " + std::to_string(x.shape[1]) + " are not divisible by blocksize^2 (blocksize " +
             std::to_string(b) + ")");
  }
  ctx.set_output(0, x.dtype,
                 {x.shape[0], x.shape[1] / b / b, checked_mul(ctx, x.shape[2], b), checked_mul(ctx, x.shape[3], b)});
}

void depth_to_space_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = block_size(ctx.node());
  const int64_t n = x.dim(0), c = x.dim(1) / b / b, h = x.dim(2), w = x.dim(3);
  // DCR: channels are (b1, b2, c); CRD: (c, b1, b2). Output [n, c, h, b1, w, b2].
  if (ctx.node().attr_string("mode", "DCR") == "DCR") {
    transpose_copy(ctx.output(0).raw(), x.raw(), elem_size(x), {n, b, b, c, h, w}, {0, 3, 4, 1, 5, 2});
  } else {
    transpose_copy(ctx.output(0).raw(), x.raw(), elem_size(x), {n, c, b, b, h, w}, {0, 1, 4, 2, 5, 3});
  }
}

void infer_space_to_depth(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  check_rank4(ctx, x.shape);
  const int64_t b = block_size(ctx.node());
  if (x.shape[2] % b != 0 || x.shape[3] % b != 0) {
    ctx.fail("spatial dims " + shape_str(x.shape) + " are not divisible by blocksize " + std::to_string(b));
  }
  ctx.set_output(0, x.dtype,
                 {x.shape[0], checked_mul(ctx, checked_mul(ctx, x.shape[1], b), b), x.shape[2] / b, x.shape[3] / b});
}

void space_to_depth_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t b = block_size(ctx.node());
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2) / b, w = x.dim(3) / b;
  // Input [n, c, h, b1, w, b2] -> output channels (b1, b2, c).
  transpose_copy(ctx.output(0).raw(), x.raw(), elem_size(x), {n, c, h, b, w, b}, {0, 3, 5, 1, 2, 4});
}

}  // namespace

void register_data_movement_ops(OpRegistry& r) {
  r.add(op("Transpose", 1, 1, infer_transpose, transpose_kernel, "Permutes dims by `perm` (default: reversed)."));
  r.add(op("Concat", 1, OpSchema::kVariadic, infer_concat, concat_kernel, "Joins inputs along `axis`."));
  OpSchema split = op("Split", 1, 2, infer_split, split_kernel,
                      "Splits along `axis` by sizes (input 1 / attribute), num_outputs, or equally.");
  split.max_outputs = OpSchema::kVariadic;
  r.add(std::move(split));
  r.add(op("Slice", 3, 5, infer_slice, slice_kernel,
           "Strided slice by starts/ends/axes/steps inputs, clamped as ONNX specifies.", selection_cost));
  r.add(op("Gather", 2, 2, infer_gather, gather_kernel, "Selects entries along `axis` by (negative-aware) indices.",
           selection_cost));
  r.add(op("Tile", 2, 2, infer_tile, tile_kernel, "Repeats the input `repeats[d]` times along each dim."));
  r.add(op("Pad", 1, 4, infer_pad, pad_kernel,
           "Pads (or crops, with negative pads) in mode constant/reflect/edge/wrap; opset 18 axes input."));
  r.add(op("DepthToSpace", 1, 1, infer_depth_to_space, depth_to_space_kernel,
           "Moves channel blocks into spatial blocks (mode DCR or CRD)."));
  r.add(op("SpaceToDepth", 1, 1, infer_space_to_depth, space_to_depth_kernel, "Moves spatial blocks into channels."));
}

}  // namespace xnn
