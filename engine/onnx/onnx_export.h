// IR -> ONNX export through Debian's libonnx, so models we produce (trained, converted,
// optimised) load in other tools: OpenCV DNN, ONNX Runtime, ...
//
// What is written:
//   - graph inputs and outputs as typed ValueInfoProtos (known dims as dim_value, symbolic ones
//     as dim_param, unknown ones left empty); intermediate values with a known dtype as
//     value_info;
//   - constant values as initializers (raw_data, little endian), in the graph that owns them;
//     subgraphs (If/Loop bodies) refer to enclosing values by name and never redeclare them;
//   - nodes with every attribute kind, optional inputs/outputs left out as "".
// The default-domain opset is max(model.opset, 13): the importer rewrites older forms into the
// opset-13 semantics the kernels implement, so an imported opset-9 model is no longer valid
// opset-9 ONNX. The attribute forms opset 13 turned into inputs, which the kernels still
// accept (Squeeze/Unsqueeze/ReduceSum `axes`, Split `split`, Dropout `ratio`), are written as
// constant inputs.
//
// Our fused ops (domain ai.xnn, engine/ops/fused.cpp) are decomposed into standard nodes:
// FusedConv -> Conv [-> Add Z] [-> activation], FusedGemm -> Gemm [-> activation], where the
// activation is Relu, Clip (min/max as constant inputs), LeakyRelu, HardSwish (HardSigmoid+Mul
// before opset 14), HardSigmoid, Sigmoid, or Sigmoid+Mul for SiLU. Any other non-ONNX domain is
// an Error naming the node.
//
// Quantised models (compress/quantize) are written as they run: QuantizeLinear,
// DequantizeLinear, QLinearConv and QLinearMatMul are standard ONNX; ONNX Runtime's contrib ops
// (QGemm, QLinearAdd, QLinearConcat, QLinearAveragePool, QLinearGlobalAveragePool) keep their
// domain "com.microsoft", declared with an opset import (version 1). libonnx's checker does not
// check ops of domains it has no schemas for, and ONNX Runtime runs them.
//
// Not carried: Value::quant annotations (the parameters are the ops' explicit inputs already),
// and the `trainable` flag, which has no ONNX field (the importer marks float initialisers
// trainable).
#pragma once
#include <string>

#include "engine/core/graph.h"

namespace xnn {

struct OnnxExportOptions {
  std::string producer_name = "xnn-lab";
  // libonnx's checker on the result; its complaints become an xnn::Error naming the model.
  bool run_checker = true;
};

// The serialized ModelProto. Throws Error naming the node or value that cannot be written.
std::string export_onnx_bytes(const Model& model, const OnnxExportOptions& options = {});
// Same, written to `path` (errors name the path).
void export_onnx_file(const Model& model, const std::string& path, const OnnxExportOptions& options = {});

}  // namespace xnn
