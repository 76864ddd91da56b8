// Post-training quantisation end to end: prepare the float graph, calibrate on sample inputs,
// choose ranges with a calibration method, rewrite to int8. The pieces are also usable one by
// one (float_model.h, calibrator.h, quantize_graph.h) — sensitivity analysis and mixed precision
// rewrite the same calibrated graph many times without calibrating again.
#pragma once
#include <map>
#include <memory>
#include <string>

#include "compress/quantize/calibrator.h"
#include "compress/quantize/quantize_graph.h"

namespace xnn::quantize {

struct PtqOptions {
  CalibrationSettings calibration;
  QuantizeOptions graph;
  BatchOptions batch;
};

struct PtqResult {
  std::shared_ptr<Model> float_model;   // the prepared float graph (prepare_float_model)
  CalibrationStats stats;
  std::map<std::string, Range> ranges;  // by value name, under options.calibration
  std::shared_ptr<Model> int8_model;
  QuantizeReport report;
};

PtqResult post_training_quantize(const Model& model, const Tensor& calibration_samples, const PtqOptions& options);

// Total bytes of the constants of a graph (the weights as stored).
int64_t constant_bytes(const Graph& g);

}  // namespace xnn::quantize
