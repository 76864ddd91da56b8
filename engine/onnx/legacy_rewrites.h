// Internal to engine/onnx: rewrites ops of older opsets into the single (opset 13+) form the
// kernels implement, so no kernel carries version switches. See the comment in
// engine/core/op_registry.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace xnn {

// Rewrites default-domain nodes of `graph` (and of its subgraphs), which must be topologically
// sorted, for model opset `opset` (helper nodes are inserted in order, so it stays sorted):
//   Softmax/LogSoftmax/Hardmax < 13   2-D coercion at `axis` -> Flatten, op(axis=-1),
//                                     Reshape to Shape(X) (just axis=-1 when `axis` is last)
//   Upsample (any), Resize < 11       -> Resize(X, , scales), asymmetric, nearest floor
//   Pad < 11, Slice < 10, Clip < 11   attributes -> constant inputs
//   BatchNormalization < 9            `spatial` = 1 dropped (0 is reported unsupported)
//   binary ops < 7 (broadcast, axis)  -> numpy broadcasting, reshaping B where needed
//   PRelu < 7                         per-channel 1-D slope -> slope reshaped to [C,1,...]
//   Reshape < 5, Cast < 6, Concat < 4 shape attribute -> input, type name -> code, axis default 1
// Below opset 13, static shapes are propagated during the walk (propagate_static_shapes) so
// rank-dependent rewrites see intermediate shapes without libonnx's shape inference.
// Legal forms the engine cannot express are appended to `unsupported`; malformed nodes throw
// Error prefixed with `where`.
void rewrite_legacy_ops(Graph& graph, int64_t opset, const std::string& where, std::vector<std::string>& unsupported);

}  // namespace xnn
