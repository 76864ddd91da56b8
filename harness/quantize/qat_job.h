// The quantisation-aware training phase of `xnn-lab quantize --qat TRAIN_CONFIG.yaml`: the
// calibrated float graph of post-training quantisation gets fake quantisation
// (compress/quantize/qat.h), is fine-tuned by the trainer (harness/train) under the training
// config (its model source is replaced by the fake-quantised graph; ONNX export is off because
// the graph holds ai.xnn FakeQuantize), and is converted to int8 with the calibrated ranges.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compress/quantize/qat.h"
#include "harness/data/fashion_mnist.h"
#include "harness/train/trainer.h"

namespace xnn::ptq {

struct QatOutcome {
  std::shared_ptr<Model> int8_model;
  quantize::QuantizeReport report;
  int activation_fake_quants = 0, weight_fake_quants = 0;
  train::TrainResult training;  // test_accuracy: the fake-quantised float model after fine-tuning
};

// Fine-tunes `float_model` (prepared, as PtqResult::float_model) with fake quantisation placed by
// `ranges` / `options`. The training config's data preprocessing must equal `preprocess` (the
// calibration's and evaluation's): an Error names the config file and both values otherwise.
QatOutcome run_qat(const Model& float_model, const std::map<std::string, quantize::Range>& ranges,
                   const quantize::QuantizeOptions& options, const data::Preprocess& preprocess, const std::string& config_path,
                   const std::vector<std::string>& overrides, const std::function<void(const std::string&)>& progress);

}  // namespace xnn::ptq
