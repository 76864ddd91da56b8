// The int8 rewrite: a float graph plus a clipping range per activation tensor becomes a graph
// whose supported layers compute on 8-bit integers (representation: compress/quantize/README.md).
//
//   Conv (incl. depthwise)  -> QLinearConv (ONNX): int8 weights, symmetric per output channel
//                              (zero point 0), int32 bias, uint8 activations per tensor
//   Gemm                    -> com.microsoft QGemm (int32 bias C; float output when every reader
//                              of the result is float, which saves a DequantizeLinear)
//   MatMul (constant B)     -> QLinearMatMul (ONNX), B per column
//   Add, Concat             -> com.microsoft QLinearAdd, QLinearConcat
//   AveragePool, GlobalAveragePool -> com.microsoft QLinearAveragePool, QLinearGlobalAveragePool
//   MaxPool, Flatten, Reshape, Squeeze, Unsqueeze, Transpose, Identity on a uint8 input: the same
//                              op on uint8, output parameters = input parameters (exact)
//   Relu, Clip(min <= 0 <= max) after one of the requantising ops above (its only reader): fused
//                              by giving the producer the activation output's range, so the
//                              requantisation's clamp to [0, 255] is the activation
// QuantizeLinear where a float tensor enters an int8 op, DequantizeLinear where an int8 tensor
// reaches a float op or a graph output, one per tensor however many readers it has; int8 ops
// that follow each other share the tensor's parameters (no DequantizeLinear -> QuantizeLinear
// between them). Excluded nodes and ops without an int8 form stay float.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compress/quantize/quant_params.h"
#include "engine/core/graph.h"

namespace xnn::quantize {

struct QuantizeOptions {
  bool per_channel = true;          // false: one weight scale per tensor (--per-tensor)
  // Weights in [-64, 64] instead of [-127, 127] (kReducedWeightQmax, --reduce-range) for the
  // layers that run on the int8 GEMM (see weight_qmax): its vpmaddubsw path on AVX2 CPUs without
  // VNNI; VNNI CPUs run either at the same speed.
  bool reduce_range = false;
  std::set<std::string> exclude;    // node names kept in fp32 (unknown names are an Error)
  // Bias correction (empirical, as in Nagel et al. 2019 "Data-Free Quantization", §4.2): each
  // Conv / Gemm bias absorbs the mean shift its weight rounding causes, E[(W_q − W)·x] per output
  // channel, with E[x] the calibration means of its input's channels (channel_means, by value
  // name; layers whose input has none are left as they are). Border padding is not modelled.
  bool bias_correction = false;
  const std::map<std::string, std::vector<double>>* channel_means = nullptr;
};

// A node the rewrite can run in int8 on its own parameters: the unit of --exclude, of the
// sensitivity analysis and of mixed precision. (Pass-through ops and fused activations follow
// their input or producer and are not layers.)
struct QuantizableLayer {
  std::string name, op_type;
};
std::vector<QuantizableLayer> quantizable_layers(const Graph& g);

// The largest |q| of node n's int8 weights w: kReducedWeightQmax with reduce_range, except for a
// depthwise Conv (one input channel per group), which stays at kWeightQmax: the depthwise int8
// kernels multiply exactly either way (no vpmaddubsw path), and 9 or 25 taps per channel lose the
// most from a coarser grid (trained MobileNetV2 under reduce_range for every layer: cosine min
// 0.991 -> 0.980).
int weight_qmax(const QuantizeOptions& options, const Node& n, const Tensor& w);

struct QuantizeReport {
  int int8_nodes = 0;        // nodes computing on 8-bit tensors
  int fp32_nodes = 0;        // other nodes, QuantizeLinear / DequantizeLinear not counted
  int quantize_nodes = 0;    // QuantizeLinear inserted
  int dequantize_nodes = 0;  // DequantizeLinear inserted
  int fused_activations = 0; // Relu / Clip absorbed into a requantisation
  std::vector<std::string> int8_layers, fp32_layers;  // quantizable_layers by outcome
};

// Rewrites `float_model` (prepared by prepare_float_model: level-1 optimised, nodes named
// uniquely). `ranges` holds the clipping range of activation tensors by value name; a layer
// whose input or output has no range stays float. Throws an Error for an excluded name that
// names no node.
Model quantize_model_graph(const Model& float_model, const std::map<std::string, Range>& ranges,
                           const QuantizeOptions& options, QuantizeReport* report = nullptr);

}  // namespace xnn::quantize
