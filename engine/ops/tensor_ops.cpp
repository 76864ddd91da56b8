// The tensor family's registration entry point and the helpers declared in tensor_ops.h.
#include "engine/ops/tensor_ops.h"

#include <cstring>
#include <limits>

namespace xnn {

void register_tensor_ops(OpRegistry& r) {
  register_shape_ops(r);
  register_data_movement_ops(r);
  register_resize_ops(r);
}

void fail_node(const Node& node, const std::string& msg) { throw Error(node.describe() + ": " + msg); }

const Tensor* optional_input_value(const InferContext& ctx, int i) {
  return ctx.has_input(i) ? &ctx.input_value(i) : nullptr;
}

const Tensor* optional_input(const KernelContext& ctx, int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; }

std::vector<int64_t> int_values(const Node& node, const Tensor& t, const std::string& what) {
  if (!is_integer(t.dtype())) {
    fail_node(node, what + " must be an integer tensor, got " + std::string(dtype_name(t.dtype())));
  }
  return t.to_int_vector();
}

std::optional<std::vector<int64_t>> ints_from_input_or_attr(const Node& node, const Tensor* t,
                                                            const std::string& attr) {
  if (t) return int_values(node, *t, attr);
  if (node.has_attr(attr)) return node.attr_ints(attr);
  return std::nullopt;
}

std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int rank, const Node& node) {
  std::vector<int> out;
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      fail_node(node, "axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
    }
    const int n = static_cast<int>(a < 0 ? a + rank : a);
    if (seen[static_cast<size_t>(n)]) fail_node(node, "axis " + std::to_string(a) + " is given more than once");
    seen[static_cast<size_t>(n)] = 1;
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

void check_numel_fits(const Shape& shape, const Node& node) {
  // The byte size at the largest dtype (8 bytes) must fit too, or allocation sizes wrap
  // around. Zero dims are skipped so that no partial product (in any order) overflows.
  constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 8;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail_node(node, "shape " + shape_str(shape) + " has a negative dimension");
    if (d != 0 && (__builtin_mul_overflow(n, d, &n) || n > kMaxElements)) {
      fail_node(node, "shape " + shape_str(shape) + " is too large");
    }
  }
}

namespace {

// Calls fn.template operator()<N>() with N = elem_size as a compile-time constant, so element
// copies compile to plain loads and stores (memcpy of a constant size) for every dtype.
template <typename Fn>
void dispatch_elem_size(size_t elem_size, Fn&& fn) {
  switch (elem_size) {
    case 1:
      return fn.template operator()<1>();
    case 2:
      return fn.template operator()<2>();
    case 4:
      return fn.template operator()<4>();
    case 8:
      return fn.template operator()<8>();
    default:
      break;
  }
  throw Error("element size " + std::to_string(elem_size) + " is not supported by tensor copies");
}

}  // namespace

OpCost data_movement_cost(const Node& node, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs) {
  OpCost c = default_cost(node, inputs, outputs);
  c.macs = 0;
  return c;
}

void fill_elements(void* dst, int64_t count, const void* value, size_t elem_size) {
  dispatch_elem_size(elem_size, [&]<size_t N>() {
    char* out = static_cast<char*>(dst);
    for (int64_t i = 0; i < count; ++i, out += N) std::memcpy(out, value, N);
  });
}

void copy_strided(void* dst, const void* src, size_t elem_size, const Shape& shape, int64_t src_offset,
                  const std::vector<int64_t>& src_strides) {
  if (shape_numel(shape) == 0) return;
  dispatch_elem_size(elem_size, [&]<size_t N>() {
    constexpr int64_t kBytes = N;
    const char* base = static_cast<const char*>(src) + src_offset * kBytes;
    char* out = static_cast<char*>(dst);
    BroadcastWalker w(shape, {src_strides});
    const int64_t n = w.inner_size(), stride = w.inner_stride(0);
    for (; !w.done(); w.next_outer()) {
      const char* row = base + w.offset(0) * kBytes;
      if (stride == 1) {
        std::memcpy(out, row, static_cast<size_t>(n * kBytes));
      } else {
        for (int64_t i = 0; i < n; ++i) std::memcpy(out + i * kBytes, row + i * stride * kBytes, N);
      }
      out += n * kBytes;
    }
  });
}

void gather_by_axis_maps(void* dst, const void* src, size_t elem_size, const Shape& src_shape,
                         const std::vector<std::vector<int64_t>>& maps, const void* fill) {
  const size_t rank = src_shape.size();
  Shape out_shape;
  for (const auto& m : maps) out_shape.push_back(static_cast<int64_t>(m.size()));
  if (shape_numel(out_shape) == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, elem_size);
    return;
  }
  const std::vector<int64_t> strides = contiguous_strides(src_shape);
  const std::vector<int64_t>& inner_map = maps.back();
  const int64_t n = out_shape.back();
  bool inner_is_identity = n == src_shape.back();
  for (int64_t j = 0; inner_is_identity && j < n; ++j) inner_is_identity = inner_map[static_cast<size_t>(j)] == j;

  dispatch_elem_size(elem_size, [&]<size_t N>() {
    constexpr int64_t kBytes = N;
    const char* in = static_cast<const char*>(src);
    char* out = static_cast<char*>(dst);
    std::vector<int64_t> index(rank - 1, 0);  // position in the outer (all but last) output dims
    while (true) {
      // Source row of this output row (element offset), or -1 if an outer axis maps outside.
      int64_t row = 0;
      for (size_t d = 0; d + 1 < rank && row >= 0; ++d) {
        const int64_t m = maps[d][static_cast<size_t>(index[d])];
        row = m < 0 ? -1 : row + m * strides[d];
      }
      if (row < 0) {
        for (int64_t j = 0; j < n; ++j) std::memcpy(out + j * kBytes, fill, N);
      } else if (inner_is_identity) {
        std::memcpy(out, in + row * kBytes, static_cast<size_t>(n * kBytes));
      } else {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t m = inner_map[static_cast<size_t>(j)];
          std::memcpy(out + j * kBytes, m < 0 ? fill : in + (row + m) * kBytes, N);
        }
      }
      out += n * kBytes;
      // Advance the outer index like an odometer; finished when every digit wraps.
      int d = static_cast<int>(rank) - 2;
      for (; d >= 0; --d) {
        if (++index[static_cast<size_t>(d)] < out_shape[static_cast<size_t>(d)]) break;
        index[static_cast<size_t>(d)] = 0;
      }
      if (d < 0) return;
    }
  });
}

void transpose_copy(void* dst, const void* src, size_t elem_size, const Shape& shape,
                    const std::vector<int64_t>& perm) {
  const std::vector<int64_t> in_strides = contiguous_strides(shape);
  Shape out_shape(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out_shape[i] = shape[static_cast<size_t>(perm[i])];
    strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  copy_strided(dst, src, elem_size, out_shape, 0, strides);
}

}  // namespace xnn
