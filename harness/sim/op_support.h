// What a device can run: each node's op class (which efficiency curve applies), its dtype, and
// whether an accelerator accepts it (op type, dtype, shape limits), with the reason when not.
#pragma once
#include <string>

#include "engine/core/graph.h"
#include "engine/runtime/graph_cost.h"
#include "harness/sim/device_profile.h"

namespace xnn::sim {

// The ONNX op a node computes: ai.xnn FusedConv/FusedGemm (engine fusion) count as Conv/Gemm.
std::string base_op_type(const Node& node);

// Ops that only relabel a tensor's shape (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
// inference Dropout): every runtime makes them views, so they cost nothing and run wherever
// their input is. Constant/Shape nodes left after folding count as free too.
bool is_free_op(const Node& node);

// conv (dense or grouped Conv/ConvTranspose, and the quantised QLinearConv/ConvInteger),
// depthwise (any of those with group == input channels > 1), gemm (Gemm, MatMul, QLinearMatMul,
// MatMulInteger), pool, elementwise (unary/binary maths and activations), other.
OpClass classify_op(const Node& node, const NodeCost& cost);

// The dtype a node computes in, as profiles name dtypes: fp32, fp16, int8 (int8 and uint8),
// int32, int64, bool. From its first output's recorded dtype, else its first input's; fp32 when
// neither is known.
std::string node_dtype(const Graph& graph, const Node& node);

// "" when `device` runs `node`; otherwise why not, e.g. "Conv kernel 9x9 > max 7",
// "dtype fp32 unsupported: int8 only", "op Erf not supported". CPUs (`ops: all`) run every op
// but still check dtypes.
std::string unsupported_reason(const DeviceProfile& device, const Graph& graph, const Node& node, const NodeCost& cost);

}  // namespace xnn::sim
