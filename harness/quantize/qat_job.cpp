#include "harness/quantize/qat_job.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "engine/core/error.h"

namespace xnn::ptq {
namespace {

std::string text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", static_cast<double>(v));
  return buf;
}

bool same(float a, float b) { return std::fabs(a - b) <= 1e-6f * std::max(1.0f, std::fabs(b)); }

void check_preprocessing(const train::TrainConfig& c, const data::Preprocess& p) {
  // The trainer feeds (pixel / 255 - mean) / std with one mean and std.
  const bool ok = same(p.scale, 1.0f / 255.0f) && p.mean.size() == 1 && p.std.size() == 1 && same(c.mean, p.mean[0]) &&
                  same(c.std, p.std[0]);
  if (!ok) {
    throw Error(c.path + ": QAT trains with data.mean " + text(c.mean) + " and data.std " + text(c.std) +
                " (scale 1/255), but calibration and evaluation use --scale " + text(p.scale) + " --mean " +
                text(p.mean.empty() ? 0.0f : p.mean[0]) + " --std " + text(p.std.empty() ? 1.0f : p.std[0]) +
                "; make them equal");
  }
}

}  // namespace

QatOutcome run_qat(const Model& float_model, const std::map<std::string, quantize::Range>& ranges,
                   const quantize::QuantizeOptions& options, const data::Preprocess& preprocess, const std::string& config_path,
                   const std::vector<std::string>& overrides, const std::function<void(const std::string&)>& progress) {
  train::TrainConfig config = train::load_train_config(config_path, overrides);
  check_preprocessing(config, preprocess);
  config.export_onnx = false;  // ai.xnn FakeQuantize has no ONNX form; the int8 model is the product
  quantize::QatGraph qat = quantize::insert_fake_quantization(float_model, ranges, options);
  QatOutcome out;
  out.activation_fake_quants = qat.activation_fake_quants;
  out.weight_fake_quants = qat.weight_fake_quants;
  if (progress) {
    progress("QAT: " + std::to_string(qat.weight_fake_quants) + " weight and " + std::to_string(qat.activation_fake_quants) +
             " activation fake quantisations; fine-tuning with " + config_path);
  }
  out.training = train::run_training(config, progress, qat.model);
  out.int8_model = std::make_shared<Model>(quantize::convert_qat_model(*qat.model, ranges, options, &out.report));
  return out;
}

}  // namespace xnn::ptq
