// Machinery shared by the tensor-manipulation op family (shape_ops.cpp, data_movement.cpp,
// resize.cpp) and the reductions (reduce.cpp): reading shape-like inputs that may arrive as an
// input (opset 13+/18 form) or an attribute (older form), and dtype-agnostic element copies.
//
// Data movement never looks at element values, so the copy helpers move elements as opaque
// blocks of dtype_size() bytes: one code path serves every dtype.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "engine/ops/op_helpers.h"

namespace xnn {

// The files of the tensor family; register_tensor_ops() calls all three.
void register_shape_ops(OpRegistry& r);
void register_data_movement_ops(OpRegistry& r);
void register_resize_ops(OpRegistry& r);

// Throws Error("<node>: <msg>"). For planning code shared by inference and kernels, which
// only has the Node at hand.
[[noreturn]] void fail_node(const Node& node, const std::string& msg);

// Optional input i for planning code: null when absent. Inference can only see the values of
// constants (and fails naming the node for any other); kernels always see them.
const Tensor* optional_input_value(const InferContext& ctx, int i);
const Tensor* optional_input(const KernelContext& ctx, int i);

// Elements of a small integer tensor (a shape, axes, pads, split sizes) as int64; fails
// naming the node and `what` if the tensor is not of an integer dtype.
std::vector<int64_t> int_values(const Node& node, const Tensor& t, const std::string& what);

// An integer list given as input tensor `t` (when non-null) or else as attribute `attr`;
// nullopt when neither is there.
std::optional<std::vector<int64_t>> ints_from_input_or_attr(const Node& node, const Tensor* t, const std::string& attr);

// Maps possibly negative axes into [0, rank); fails naming the node on an axis out of range
// or given twice.
std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int rank, const Node& node);

// Row-major element strides of `shape`.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// Fails naming the node if `shape` has a negative dim or its element count (ignoring zero
// dims), or byte size at 8 bytes per element, does not fit in int64. A shape read from a
// tensor value can be anything.
void check_numel_fits(const Shape& shape, const Node& node);

// Cost of an op that only moves data: no MACs, each input read once, each output written once.
OpCost data_movement_cost(const Node& node, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs);

// Writes `count` copies of one element (`value`, elem_size bytes) to `dst`.
void fill_elements(void* dst, int64_t count, const void* value, size_t elem_size);

// Fills contiguous `dst` (laid out as `shape`) from a strided view of `src`: element i of dst
// is src[src_offset + sum_d i_d * src_strides[d]]. Offsets and strides count elements; a
// stride may be 0 (broadcast) or negative (reversed).
void copy_strided(void* dst, const void* src, size_t elem_size, const Shape& shape, int64_t src_offset,
                  const std::vector<int64_t>& src_strides);

// Writes dst[i_0, ..., i_n] = src[maps[0][i_0], ..., maps[n][i_n]], where dst is contiguous
// with dims maps[d].size() and src is contiguous with `src_shape`. A map entry of -1 stands
// for "outside the source": that element is `fill` (the bytes of one element). Every other
// entry must be a valid index (callers validate). This is Gather, Tile, Expand, Pad and
// nearest-neighbour Resize with different maps.
void gather_by_axis_maps(void* dst, const void* src, size_t elem_size, const Shape& src_shape,
                         const std::vector<std::vector<int64_t>>& maps, const void* fill);

// Writes the transpose of contiguous `src` (dims `shape`) to `dst`: output axis i is input
// axis perm[i]. `perm` must be a permutation of [0, rank).
void transpose_copy(void* dst, const void* src, size_t elem_size, const Shape& shape, const std::vector<int64_t>& perm);

}  // namespace xnn
