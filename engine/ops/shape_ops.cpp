// Shape ops: ops that produce or re-describe a shape without reordering elements (Shape,
// Reshape, Flatten, Squeeze, Unsqueeze, Expand, ConstantOfShape, Constant). Each op is declared
// once here: schema, inference, cost, reference kernel.
#include <algorithm>
#include <cstring>

#include "engine/ops/tensor_ops.h"

namespace xnn {
namespace {

// Reshape, Flatten, Squeeze and Unsqueeze keep the elements in order: the kernel is a copy.
void copy_elements_unchanged(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  std::memcpy(y.raw(), x.raw(), x.nbytes());
}

// ---- Shape -------------------------------------------------------------------------------
// Opset 15 start/end select a range of dims; negative values count from the back, and both
// are clamped to [0, rank].
std::pair<int64_t, int64_t> shape_range(const Node& node, int64_t rank) {
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp(node.attr_int("start", 0));
  const int64_t end = node.has_attr("end") ? clamp(node.attr_int("end")) : rank;
  return {start, std::max(start, end)};
}

void infer_shape(InferContext& ctx) {
  const auto [start, end] = shape_range(ctx.node(), static_cast<int64_t>(ctx.input(0).shape.size()));
  ctx.set_output(0, DType::kI64, {end - start});
}

void shape_kernel(KernelContext& ctx) {
  const Shape& dims = ctx.input(0).shape();
  const auto [start, end] = shape_range(ctx.node(), static_cast<int64_t>(dims.size()));
  int64_t* out = ctx.output(0).data<int64_t>();
  for (int64_t i = start; i < end; ++i) out[i - start] = dims[static_cast<size_t>(i)];
}

// Shape reads no tensor data, only metadata.
OpCost shape_cost(const Node&, std::span<const TensorInfo>, std::span<const TensorInfo> outputs) {
  OpCost c;
  c.bytes_written = static_cast<double>(shape_numel(outputs[0].shape) * 8);
  return c;
}

// ---- Reshape -----------------------------------------------------------------------------
// ONNX Reshape: 0 copies the input dim at that position (unless allowzero=1, where 0 is a real
// zero-sized dim), and one -1 is inferred from the element count.
Shape reshape_target(const Node& node, const Shape& in, const Tensor& shape_tensor) {
  if (shape_tensor.rank() != 1) fail_node(node, "the shape input must be 1-D, got " + shape_str(shape_tensor.shape()));
  const std::vector<int64_t> dims = int_values(node, shape_tensor, "the shape input");
  const bool allowzero = node.attr_int("allowzero", 0) != 0;
  Shape out;
  int inferred_at = -1;
  bool has_zero = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    if (d == -1) {
      if (inferred_at >= 0) fail_node(node, "shape " + shape_str(dims) + " has more than one -1");
      inferred_at = static_cast<int>(i);
      out.push_back(1);
    } else if (d == 0 && !allowzero) {
      if (i >= in.size()) {
        fail_node(node, "shape " + shape_str(dims) + " copies dim " + std::to_string(i) + " (0) but the input " +
                            shape_str(in) + " has rank " + std::to_string(in.size()));
      }
      out.push_back(in[i]);
    } else if (d < 0) {
      fail_node(node, "shape " + shape_str(dims) + " has invalid dimension " + std::to_string(d));
    } else {
      has_zero = has_zero || d == 0;
      out.push_back(d);
    }
  }
  if (allowzero && has_zero && inferred_at >= 0) {
    fail_node(node, "shape " + shape_str(dims) + " has both 0 and -1, which allowzero=1 does not allow");
  }
  check_numel_fits(out, node);
  const int64_t in_count = shape_numel(in);
  if (inferred_at >= 0) {
    const int64_t rest = shape_numel(out);
    if (rest == 0 || in_count % rest != 0) {
      fail_node(node, "cannot reshape " + shape_str(in) + " to " + shape_str(dims) + ": the -1 dim cannot be inferred");
    }
    out[static_cast<size_t>(inferred_at)] = in_count / rest;
  }
  if (shape_numel(out) != in_count) {
    fail_node(node, "cannot reshape " + shape_str(in) + " (" + std::to_string(in_count) + " elements) to " +
                        shape_str(dims) + " (" + std::to_string(shape_numel(out)) + " elements)");
  }
  return out;
}

void infer_reshape(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  ctx.set_output(0, x.dtype, reshape_target(ctx.node(), x.shape, ctx.input_value(1)));
}

// ---- Flatten -----------------------------------------------------------------------------
void infer_flatten(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < -rank || axis > rank) {
    ctx.fail("axis " + std::to_string(axis) + " out of range [" + std::to_string(-rank) + ", " + std::to_string(rank) +
             "]");
  }
  if (axis < 0) axis += rank;
  const Shape outer(x.shape.begin(), x.shape.begin() + axis), inner(x.shape.begin() + axis, x.shape.end());
  ctx.set_output(0, x.dtype, {shape_numel(outer), shape_numel(inner)});
}

// ---- Squeeze / Unsqueeze -----------------------------------------------------------------
// `axes` is input 1 from opset 13 and an attribute before.
void infer_squeeze(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const int rank = static_cast<int>(x.shape.size());
  const auto axes = ints_from_input_or_attr(ctx.node(), optional_input_value(ctx, 1), "axes");
  std::vector<char> drop(x.shape.size(), 0);
  if (axes && !axes->empty()) {
    for (int a : normalize_axes(*axes, rank, ctx.node())) {
      if (x.shape[static_cast<size_t>(a)] != 1) {
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of size " +
                 std::to_string(x.shape[static_cast<size_t>(a)]) + " in " + shape_str(x.shape));
      }
      drop[static_cast<size_t>(a)] = 1;
    }
  } else {  // no (or empty) axes: drop every dim of size 1
    for (size_t d = 0; d < x.shape.size(); ++d) drop[d] = x.shape[d] == 1;
  }
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!drop[d]) out.push_back(x.shape[d]);
  }
  ctx.set_output(0, x.dtype, out);
}

void infer_unsqueeze(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const auto axes = ints_from_input_or_attr(ctx.node(), optional_input_value(ctx, 1), "axes");
  if (!axes) ctx.fail("needs axes (input 1 from opset 13, attribute 'axes' before)");
  // Axes index the output, whose rank is the input's plus one per new axis.
  const int out_rank = static_cast<int>(x.shape.size() + axes->size());
  std::vector<char> is_new(static_cast<size_t>(out_rank), 0);
  for (int a : normalize_axes(*axes, out_rank, ctx.node())) is_new[static_cast<size_t>(a)] = 1;
  Shape out;
  size_t next_in = 0;
  for (int d = 0; d < out_rank; ++d) out.push_back(is_new[static_cast<size_t>(d)] ? 1 : x.shape[next_in++]);
  ctx.set_output(0, x.dtype, out);
}

// ---- Expand ------------------------------------------------------------------------------
// Bidirectional (numpy) broadcast of the input with the shape input: the output may be larger
// than the shape asks for where the input has the larger dim.
void infer_expand(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const Tensor& shape_tensor = ctx.input_value(1);
  if (shape_tensor.rank() != 1) ctx.fail("the shape input must be 1-D, got " + shape_str(shape_tensor.shape()));
  const Shape shape = int_values(ctx.node(), shape_tensor, "the shape input");
  check_numel_fits(shape, ctx.node());
  const Shape out = broadcast_shapes(x.shape, shape, ctx.node());
  check_numel_fits(out, ctx.node());
  ctx.set_output(0, x.dtype, out);
}

void expand_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  const size_t rank = y.shape().size();
  // Right-align the input with the output; a size-1 input dim repeats its one element.
  Shape in(rank - x.shape().size(), 1);
  in.insert(in.end(), x.shape().begin(), x.shape().end());
  std::vector<std::vector<int64_t>> maps(rank);
  for (size_t d = 0; d < rank; ++d) {
    maps[d].resize(static_cast<size_t>(y.shape()[d]));
    for (int64_t i = 0; i < y.shape()[d]; ++i) maps[d][static_cast<size_t>(i)] = in[d] == 1 ? 0 : i;
  }
  gather_by_axis_maps(y.raw(), x.raw(), dtype_size(x.dtype()), in, maps, nullptr);
}

// ---- ConstantOfShape ---------------------------------------------------------------------
// The `value` attribute is a one-element tensor giving dtype and fill value (default f32 0).
Tensor constant_of_shape_value(const Node& node) {
  const Tensor* value = node.attr_tensor("value");
  if (!value) return Tensor::scalar<float>(0.0f);
  if (value->numel() != 1) {
    fail_node(node, "attribute 'value' must hold one element, got shape " + shape_str(value->shape()));
  }
  return *value;
}

void infer_constant_of_shape(InferContext& ctx) {
  const Tensor& shape_tensor = ctx.input_value(0);
  if (shape_tensor.rank() != 1) ctx.fail("the shape input must be 1-D, got " + shape_str(shape_tensor.shape()));
  const Shape shape = int_values(ctx.node(), shape_tensor, "the shape input");
  check_numel_fits(shape, ctx.node());
  ctx.set_output(0, constant_of_shape_value(ctx.node()).dtype(), shape);
}

void constant_of_shape_kernel(KernelContext& ctx) {
  const Tensor value = constant_of_shape_value(ctx.node());
  Tensor& y = ctx.output(0);
  fill_elements(y.raw(), y.numel(), value.raw(), dtype_size(value.dtype()));
}

OpCost write_only_cost(const Node&, std::span<const TensorInfo>, std::span<const TensorInfo> outputs) {
  OpCost c;
  for (const TensorInfo& t : outputs)
    c.bytes_written += static_cast<double>(shape_numel(t.shape) * dtype_size(t.dtype));
  return c;
}

// A 1-D tensor holding `v` (which may be empty).
template <typename T>
Tensor list_tensor(const std::vector<T>& v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return n == 0 ? Tensor(dtype_of<T>(), {0}) : Tensor::from_vector<T>(v, {n});
}

// ---- Constant ----------------------------------------------------------------------------
// The value comes from exactly one attribute: `value` (a tensor) or, from opset 12,
// value_float(s) / value_int(s). Sparse and string constants have no dtype here.
Tensor constant_value(const Node& node) {
  if (const Tensor* t = node.attr_tensor("value")) return *t;
  if (node.has_attr("value_float")) return Tensor::scalar<float>(node.attr_float("value_float", 0.0f));
  if (node.has_attr("value_int")) return Tensor::scalar<int64_t>(node.attr_int("value_int"));
  if (node.has_attr("value_floats")) return list_tensor(node.attr_floats("value_floats"));
  if (node.has_attr("value_ints")) return list_tensor(node.attr_ints("value_ints"));
  for (const char* k : {"sparse_value", "value_string", "value_strings"}) {
    if (node.has_attr(k)) throw UnsupportedError(node.describe() + ": attribute '" + k + "' is not supported");
  }
  fail_node(node, "needs one of the attributes value, value_float(s), value_int(s)");
}

void infer_constant(InferContext& ctx) {
  const Tensor v = constant_value(ctx.node());
  ctx.set_output(0, v.dtype(), v.shape());
}

void constant_kernel(KernelContext& ctx) {
  const Tensor v = constant_value(ctx.node());
  std::memcpy(ctx.output(0).raw(), v.raw(), v.nbytes());
}

// ---- schema helpers ----------------------------------------------------------------------
OpSchema op(const char* type, int min_inputs, int max_inputs, InferFn infer, KernelFn kernel, CostFn cost,
            const char* doc) {
  return make_schema(type, min_inputs, max_inputs, std::move(infer), std::move(kernel), std::move(cost), doc);
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add(op("Shape", 1, 1, infer_shape, shape_kernel, shape_cost, "The input's dims as i64 (opset 15 start/end)."));
  r.add(op("Reshape", 2, 2, infer_reshape, copy_elements_unchanged, data_movement_cost,
           "New shape from input 1: 0 copies a dim (unless allowzero), one -1 is inferred."));
  r.add(op("Flatten", 1, 1, infer_flatten, copy_elements_unchanged, data_movement_cost,
           "2-D view: dims before `axis` and from `axis` on."));
  r.add(op("Squeeze", 1, 2, infer_squeeze, copy_elements_unchanged, data_movement_cost,
           "Drops size-1 dims: `axes` input (13+) or attribute, all size-1 dims without."));
  r.add(op("Unsqueeze", 1, 2, infer_unsqueeze, copy_elements_unchanged, data_movement_cost,
           "Inserts size-1 dims at output positions `axes` (input from 13, attribute before)."));
  r.add(op("Expand", 2, 2, infer_expand, expand_kernel, data_movement_cost,
           "Bidirectional broadcast of the input with the shape in input 1."));
  r.add(op("ConstantOfShape", 1, 1, infer_constant_of_shape, constant_of_shape_kernel, write_only_cost,
           "Tensor of shape input 0 filled with the one-element `value` attribute (f32 0 by default)."));
  r.add(op("Constant", 0, 0, infer_constant, constant_kernel, write_only_cost,
           "The tensor in attribute value / value_float(s) / value_int(s)."));
}

}  // namespace xnn
