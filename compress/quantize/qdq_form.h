// The QDQ form of an int8 model: every quantised operator (QLinearConv, QLinearMatMul and ONNX
// Runtime's QGemm, QLinearAdd, QLinearConcat, QLinearAveragePool, QLinearGlobalAveragePool) is
// replaced by DequantizeLinear on its inputs, the float operator, and QuantizeLinear on its output,
// with exactly the same scales and zero points. This is the form ONNX's quantisation guidance
// recommends for interchange: every op is standard ONNX (opset 13), and a runtime that fuses
// DQ -> op -> Q patterns (ONNX Runtime, TensorRT, OpenVINO, QNN) runs it in int8.
//
//   QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)  ->  Q(Conv(DQ(x), DQ(w, axis 0), DQ(B, xs·ws, axis 0)), ys, yz)
//   QLinearMatMul(a, as, az, b, bs, bz, ys, yz)   ->  Q(MatMul(DQ(a), DQ(b, axis 1)), ys, yz)
//   QGemm(A, as, az, B, bs, bz, C, ys, yz)        ->  [Q](Gemm(DQ(A), DQ(B), DQ(C, alpha·as·bs)), ys, yz)
//   QLinearAdd / QLinearConcat / QLinearAveragePool / QLinearGlobalAveragePool likewise.
//
// The int32 bias becomes DequantizeLinear of the int32 tensor with scale input_scale·weight_scale
// (ONNX allows int32 DequantizeLinear with a zero point of 0), so the file keeps integer biases.
// Results equal the QOperator model's up to float rounding: the float accumulation can move a
// requantised value by one step where the exact value sits on a rounding boundary.
#pragma once
#include "engine/core/graph.h"

namespace xnn::quantize {

struct QdqStats {
  int converted = 0;  // quantised operators rewritten
  int dequantize_nodes = 0, quantize_nodes = 0;
};

// Returns the QDQ form of `model` (a copy). Throws Error naming the node when a quantised
// operator's scales are not constants (a bias scale must be computed) or its form has no QDQ
// equivalent (e.g. QLinearGlobalAveragePool with channels_last).
Model to_qdq_form(const Model& model, QdqStats* stats = nullptr);

}  // namespace xnn::quantize
