// One post-training quantisation run as the CLI (`xnn-lab quantize`) and the `quantize`
// experiment step perform it: calibration samples from a dataset or a .npy file, the quantiser
// (compress/quantize), optional sensitivity analysis and mixed precision, the int8 .xnn written,
// and fp32 vs int8 top-1 when the calibration source is a labelled dataset.
//
// Which images are used for what (Fashion-MNIST):
//   calibration      the first `calib_samples` training images (no labels needed);
//   validation       the last `val_samples` training images, disjoint from calibration: the
//                    top-1 of sensitivity analysis and of mixed precision (choices are never made
//                    on the test split);
//   test             the first `eval_limit` test images (all 10000 by default): the fp32 and int8
//                    top-1 reported.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compress/quantize/mixed_precision.h"
#include "compress/quantize/quantizer.h"
#include "harness/data/fashion_mnist.h"

namespace xnn::ptq {

constexpr const char* kSupportedCalibDatasets = "fashion-mnist";

struct QuantizeJob {
  std::string model_path, output_path;
  // Calibration source: exactly one of a dataset name or a .npy file ([N, ...] float32).
  std::string calib_dataset;
  std::string data_dir = data::kDefaultFashionMnistDir;
  data::Preprocess preprocess;
  std::string calib_npy;
  int64_t calib_samples = 100;
  quantize::CalibrationSettings calibration;
  bool per_tensor = false;
  bool bias_correction = false;  // quantize::QuantizeOptions::bias_correction
  bool reduce_range = false;     // quantize::QuantizeOptions::reduce_range (weights in [-64, 64])
  std::vector<std::string> exclude;
  bool sensitivity = false;
  std::optional<double> accuracy_budget;  // points; needs a labelled dataset
  int64_t val_samples = 1000;
  int64_t eval_limit = 0;                 // test images for the reported top-1; 0 = all; < 0 = none
  int threads = 1;
  // Quantisation-aware training (harness/quantize/qat_job.h): fine-tune with fake quantisation
  // under this training config (KEY.PATH=VALUE overrides) before the int8 rewrite; needs
  // --calib-dataset. The written model is then the QAT one.
  std::string qat_config;
  std::vector<std::string> qat_overrides;
};

struct QuantizeJobResult {
  std::string output_path, method;
  int64_t calib_samples = 0;
  bool per_tensor = false;
  bool bias_correction = false;
  bool reduce_range = false;
  int64_t bytes_before = 0, bytes_after = 0;              // model files
  int64_t weight_bytes_before = 0, weight_bytes_after = 0;  // constants of the graphs
  quantize::QuantizeReport report;
  std::vector<std::string> excluded;                      // --exclude plus mixed precision's choices
  bool has_test_top1 = false;
  double fp32_top1 = 0, int8_top1 = 0;                    // fractions, on eval_samples test images
  int64_t eval_samples = 0;
  bool has_sensitivity = false;
  quantize::SensitivityReport sensitivity;
  int64_t val_samples = 0;
  bool has_mixed_precision = false;
  quantize::MixedPrecisionResult mixed_precision;
  double accuracy_budget = 0;
  bool has_qat = false;                 // int8_top1 is then the QAT model's, ptq_int8_top1 PTQ's
  double ptq_int8_top1 = 0;
  double qat_fake_quant_top1 = 0;       // the fine-tuned fake-quantised float model (trainer's test split)
  int qat_epochs = 0, qat_weight_fake_quants = 0, qat_activation_fake_quants = 0;
  double qat_train_seconds = 0;
};

// Checks the options (one calibration source, counts, budget only with labels, a writable
// output) before any work; errors name the option. `progress` receives one line per phase.
QuantizeJobResult run_quantize_job(const QuantizeJob& job, const std::function<void(const std::string&)>& progress = {});

// The result as one JSON object (what `xnn-lab quantize --json` prints).
std::string to_json(const QuantizeJobResult& r);
// The sensitivity table as text, most sensitive layer first.
std::string sensitivity_table(const QuantizeJobResult& r);

}  // namespace xnn::ptq
