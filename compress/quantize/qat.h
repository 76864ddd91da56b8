// Quantisation-aware training (QAT): the float graph with ai.xnn FakeQuantize
// (engine/ops/fake_quantize.cpp) wherever the int8 rewrite (quantize_graph.h) will quantise, so
// that fine-tuning it (engine/train, straight-through estimator) adapts the weights to the int8
// model's rounding and clipping; afterwards the fake quantisation is removed and the trained
// float graph goes through the same int8 rewrite as post-training quantisation.
//
// Where the fake quantisation goes is read off the int8 rewrite itself, so it cannot drift from
// what PTQ does: the float graph is rewritten once with the calibrated ranges, and
//   every activation tensor that exists as uint8 in the int8 graph -> FakeQuantize(x, scale, zp)
//       with that uint8 tensor's scale and zero point (fixed: the calibrated ranges), inserted
//       after its producer, all float readers rewired to it;
//   the weight of every Conv / Gemm / MatMul layer run in int8 -> FakeQuantize(w) int8 symmetric,
//       per output channel (Conv axis 0, Gemm axis 0 with transB else 1, MatMul axis 1) or per
//       tensor (QuantizeOptions::per_channel false), the scale following the weights as training
//       changes them, as the rewrite computes it from the trained weights.
// Biases are not fake-quantised (int32 at input_scale·weight_scale: far below one step).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "compress/quantize/quantize_graph.h"

namespace xnn::quantize {

struct QatGraph {
  std::shared_ptr<Model> model;    // the float graph with FakeQuantize nodes (trainable)
  int activation_fake_quants = 0;
  int weight_fake_quants = 0;
};

// `float_model` is prepared (prepare_float_model); `ranges` and `options` as for
// quantize_model_graph. Throws an Error when nothing would be quantised.
QatGraph insert_fake_quantization(const Model& float_model, const std::map<std::string, Range>& ranges,
                                  const QuantizeOptions& options);

// The float graph of a QAT model: every FakeQuantize removed, its readers reading its input again
// (the weights as trained).
Model strip_fake_quantization(const Model& qat_model);

// The int8 model of a (trained) QAT model: strip_fake_quantization, then quantize_model_graph
// with the same ranges and options that placed the fake quantisation.
Model convert_qat_model(const Model& qat_model, const std::map<std::string, Range>& ranges, const QuantizeOptions& options,
                        QuantizeReport* report = nullptr);

}  // namespace xnn::quantize
