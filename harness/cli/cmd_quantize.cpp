// xnn-lab quantize MODEL -o OUT.xnn (--calib-dataset fashion-mnist [--scale S --mean M --std D] |
//   --calib-npy FILE.npy) [--calib-samples N] [--method minmax|percentile|kl|mse] [--percentile P]
//   [--per-tensor] [--bias-correction] [--exclude NODE...] [--sensitivity] [--accuracy-budget POINTS] [--val-samples N]
//   [--eval-limit N] [--threads N] [--json] [--qat TRAIN_CONFIG.yaml [KEY.PATH=VALUE...]]
// xnn-lab quantize MODEL -o OUT.xnn --weight-only BITS [--codebook] [--weight-only-layers all|embeddings|dense]
//   [--min-elements N] [--float32-params] [--exclude NODE...] [--json]
//
// Post-training int8 quantisation (compress/quantize/README.md) through harness/quantize's job:
// calibrates on the first N training images (or the .npy samples), writes the int8 .xnn, and
// with a labelled dataset reports fp32 vs int8 top-1 on the test split. --sensitivity prints the
// per-layer table; --accuracy-budget keeps the most sensitive layers fp32 until the top-1 drop on
// validation images (the end of the training split) is within the budget. Progress goes to stderr.
// --weight-only needs no data: embedding tables and fully connected weights become row-wise 4/8-bit
// codes dequantised on the fly, or with --codebook 1..8-bit k-means indices into a centroid table
// per tensor, looked up on the fly (compress/quantize/weight_only.h); it prints per tensor the
// size and the reconstruction error (RMSE, max |error|, SQNR).
// --qat fine-tunes the calibrated model with fake quantisation (quantisation-aware training,
// harness/quantize/qat_job.h) under the training config before the int8 rewrite, and reports
// fp32, PTQ and QAT top-1.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "compress/quantize/weight_only.h"
#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/runtime/model_io.h"
#include "harness/cli/commands.h"
#include "harness/util/json.h"
#include "harness/quantize/quantize_job.h"

namespace xnn::cli {
namespace {

float parse_one_float(const std::string& option, const std::string& text) {
  size_t used = 0;
  float v = 0;
  try {
    v = std::stof(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw Error(option + " '" + text + "': expected a number");
  return v;
}

void print_summary(const std::string& model, const ptq::QuantizeJobResult& r) {
  std::printf("quantized %s -> %s (%s, %lld calibration samples, %s weights%s)\n", model.c_str(), r.output_path.c_str(),
              r.method.c_str(), static_cast<long long>(r.calib_samples), r.per_tensor ? "per-tensor" : "per-channel",
              r.reduce_range ? ", GEMM layers in [-64, 64]" : "");
  std::printf("  nodes: %d int8, %d fp32; %d QuantizeLinear, %d DequantizeLinear; %d activations fused\n", r.report.int8_nodes,
              r.report.fp32_nodes, r.report.quantize_nodes, r.report.dequantize_nodes, r.report.fused_activations);
  std::printf("  size: %lld -> %lld bytes (weights %lld -> %lld bytes)\n", static_cast<long long>(r.bytes_before),
              static_cast<long long>(r.bytes_after), static_cast<long long>(r.weight_bytes_before),
              static_cast<long long>(r.weight_bytes_after));
  std::string fp32;
  for (const std::string& l : r.report.fp32_layers) fp32 += (fp32.empty() ? "" : ", ") + l;
  std::printf("  fp32 layers: %s\n", fp32.empty() ? "(none)" : fp32.c_str());
  if (r.has_mixed_precision) {
    const quantize::MixedPrecisionResult& m = r.mixed_precision;
    std::printf("  mixed precision: budget %.2f points %s after %zu step(s); validation top-1 fp32 %.2f %%, chosen %.2f %%\n",
                r.accuracy_budget, m.budget_met ? "met" : "NOT met (every layer fp32 still misses it)", m.steps.size(),
                m.fp32_top1 * 100.0, m.steps.back().top1 * 100.0);
  }
  if (r.has_test_top1) {
    std::printf("  top-1 on %lld test images: fp32 %.2f %%, int8 %.2f %% (%+.2f points)\n",
                static_cast<long long>(r.eval_samples), r.fp32_top1 * 100.0, r.int8_top1 * 100.0,
                (r.int8_top1 - r.fp32_top1) * 100.0);
    if (r.has_qat) {
      std::printf("  top-1 fp32 %.2f %%, PTQ int8 %.2f %% (%+.2f points), QAT int8 %.2f %% (%+.2f points)\n",
                  r.fp32_top1 * 100.0, r.ptq_int8_top1 * 100.0, (r.ptq_int8_top1 - r.fp32_top1) * 100.0, r.int8_top1 * 100.0,
                  (r.int8_top1 - r.fp32_top1) * 100.0);
    }
  }
  if (r.has_qat) {
    std::printf("  QAT: %d weight + %d activation fake quantisations, %d epoch(s) in %.1f s\n", r.qat_weight_fake_quants,
                r.qat_activation_fake_quants, r.qat_epochs, r.qat_train_seconds);
  }
}

struct WeightOnlyArgs {
  int bits = 0;  // 0: off
  std::string layers = "all";
  int64_t min_elements = 1024;
  bool float32_params = false;
  bool codebook = false;
};

void run_weight_only(const ptq::QuantizeJob& job, const WeightOnlyArgs& a, bool as_json) {
  quantize::WeightOnlyOptions o;
  o.scheme = a.codebook ? quantize::WeightOnlyScheme::kCodebook : quantize::WeightOnlyScheme::kRowWise;
  o.bits = a.bits;
  if (a.layers == "embeddings") o.dense = false;
  else if (a.layers == "dense") o.embeddings = false;
  else if (a.layers != "all") throw Error("--weight-only-layers '" + a.layers + "': expected all, embeddings or dense");
  o.min_elements = a.min_elements;
  o.float16_params = !a.float32_params;
  o.exclude.insert(job.exclude.begin(), job.exclude.end());
  auto model = load_model(job.model_path);
  const quantize::WeightOnlyReport r = quantize::quantize_weights_only(*model, o);
  if (r.tensors.empty()) {
    throw Error(job.model_path + ": no weight qualifies for weight-only quantisation (Gather tables, Gemm/MatMul "
                "weights of >= " + std::to_string(o.min_elements) + " elements; see --weight-only-layers, --min-elements)");
  }
  save_xnn(*model, job.output_path);
  const double ratio = r.bytes_after > 0 ? static_cast<double>(r.bytes_before) / static_cast<double>(r.bytes_after) : 0;
  if (as_json) {
    json::Writer w;
    w.begin_object().field("model", job.model_path).field("output", job.output_path).field("bits", r.bits);
    w.field("scheme", a.codebook ? "codebook" : "rowwise");
    w.field("bytes_before", r.bytes_before).field("bytes_after", r.bytes_after).field("ratio", ratio);
    w.key("tensors").begin_array();
    for (const auto& t : r.tensors) {
      w.begin_object().field("node", t.node).field("op", t.op_type).field("tensor", t.tensor);
      w.field("rows", t.rows).field("cols", t.cols).field("bytes_before", t.bytes_before).field("bytes_after", t.bytes_after);
      w.field("rmse", t.rmse).field("max_abs_error", t.max_abs_error);
      if (a.codebook) w.field("centroids", t.centroids);
      w.key("sqnr_db");
      std::isfinite(t.sqnr_db) ? w.value(t.sqnr_db) : w.null();
      w.end_object();
    }
    w.end_array().end_object();
    std::printf("%s\n", w.str().c_str());
    return;
  }
  std::printf("weight-only %d-bit %s %s -> %s: %zu tensors, %lld -> %lld bytes (%.2fx smaller)\n", r.bits,
              a.codebook ? "codebook" : "row-wise", job.model_path.c_str(), job.output_path.c_str(), r.tensors.size(), static_cast<long long>(r.bytes_before),
              static_cast<long long>(r.bytes_after), ratio);
  std::printf("  %-28s %-7s %12s %12s %12s %12s %9s\n", "node", "op", "shape", "bytes", "rmse", "max|err|", "SQNR dB");
  for (const auto& t : r.tensors) {
    const std::string shape = std::to_string(t.rows) + "x" + std::to_string(t.cols);
    std::printf("  %-28.28s %-7s %12s %12lld %12.3g %12.3g %9.2f\n", t.node.c_str(), t.op_type.c_str(), shape.c_str(),
                static_cast<long long>(t.bytes_after), t.rmse, t.max_abs_error, t.sqnr_db);
  }
}

}  // namespace

void add_quantize_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("quantize", "Post-training int8 quantisation: calibrate, rewrite to int8, save .xnn");
  static ptq::QuantizeJob job;
  static std::string method = "minmax", mean_text = "0", std_text = "1";
  static double budget = 0;
  static bool as_json = false;
  cmd->add_option("model", job.model_path, "Float model (.onnx or .xnn)")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", job.output_path, "Output int8 model (.xnn)")->required();
  cmd->add_option("--calib-dataset", job.calib_dataset,
                  std::string("Calibrate on this dataset's training images; supported: ") + ptq::kSupportedCalibDatasets);
  cmd->add_option("--calib-npy", job.calib_npy, "Calibrate on these samples: float32 .npy of shape [N, ...input dims]");
  cmd->add_option("--data-dir", job.data_dir, "Folder with the dataset files")->capture_default_str();
  cmd->add_option("--scale", job.preprocess.scale, "x = (pixel * scale - mean) / std; pixel in [0, 255]")->capture_default_str();
  cmd->add_option("--mean", mean_text, "Mean subtracted after scaling")->capture_default_str();
  cmd->add_option("--std", std_text, "Standard deviation divided by")->capture_default_str();
  cmd->add_option("--layout", job.preprocess.layout, "Image layout when the model's input shape does not settle it")
      ->check(CLI::IsMember({"NCHW", "NHWC"}))
      ->capture_default_str();
  cmd->add_option("--calib-samples", job.calib_samples, "Calibration samples (the first N)")->capture_default_str();
  cmd->add_option("--method", method, "Calibration method: minmax, percentile, kl or mse")->capture_default_str();
  cmd->add_option("--percentile", job.calibration.percentile, "Share of values kept by --method percentile")
      ->capture_default_str();
  cmd->add_flag("--per-tensor", job.per_tensor, "One weight scale per tensor instead of per output channel");
  cmd->add_flag("--reduce-range", job.reduce_range,
                "GEMM layers' weights in [-64, 64] (depthwise convs keep [-127, 127]): the faster vpmaddubsw int8 "
                "GEMM on AVX2 CPUs without VNNI, for one bit of weight precision");
  cmd->add_flag("--bias-correction", job.bias_correction,
                "Fold each Conv/Gemm's mean weight-rounding error on the calibration inputs into its bias");
  cmd->add_option("--exclude", job.exclude, "Nodes kept fp32 (names as `xnn-lab quantize --sensitivity` lists them)")
      ->delimiter(',');
  cmd->add_flag("--sensitivity", job.sensitivity, "Print the per-layer sensitivity table (SQNR, and top-1 drop with labels)");
  static CLI::Option* budget_option = nullptr;
  budget_option = cmd->add_option("--accuracy-budget", budget,
                  "Mixed precision: keep the most sensitive layers fp32 until the validation top-1 drop <= POINTS");
  cmd->add_option("--val-samples", job.val_samples, "Validation images (end of the training split) for --sensitivity / --accuracy-budget")
      ->capture_default_str();
  cmd->add_option("--eval-limit", job.eval_limit, "Test images for the fp32 vs int8 top-1 (0 = all, -1 = none)")
      ->capture_default_str();
  cmd->add_option("--threads", job.threads, "Threads for calibration and evaluation")->capture_default_str();
  cmd->add_flag("--json", as_json, "Print the result as one JSON object");
  static std::vector<std::string> qat_args;
  cmd->add_option("--qat", qat_args,
                  "Quantisation-aware training: TRAIN_CONFIG.yaml [KEY.PATH=VALUE...] (configs/train schema) fine-tunes the "
                  "calibrated model with fake quantisation before the int8 rewrite")
      ->expected(1, -1);
  static WeightOnlyArgs weight_only;
  cmd->add_option("--weight-only", weight_only.bits,
                  "Weight-only quantisation instead of int8 PTQ: row-wise 4- or 8-bit embedding tables and Gemm/MatMul "
                  "weights, dequantised on the fly (no calibration data); with --codebook 1..8-bit k-means indices");
  cmd->add_flag("--codebook", weight_only.codebook,
                "--weight-only: k-means codebook (Deep Compression weight sharing: 2^BITS centroids per tensor, indices "
                "looked up on the fly) instead of row-wise scale/offset");
  cmd->add_option("--weight-only-layers", weight_only.layers, "--weight-only: all, embeddings (Gather tables) or dense (Gemm/MatMul)")
      ->capture_default_str();
  cmd->add_option("--min-elements", weight_only.min_elements, "--weight-only: smaller weights stay float")->capture_default_str();
  cmd->add_flag("--float32-params", weight_only.float32_params, "--weight-only: float32 row scale/offset (default float16)");
  cmd->callback([&exit_code] {
    if (weight_only.bits != 0) {
      if (weight_only.codebook ? (weight_only.bits < 1 || weight_only.bits > 8)
                               : (weight_only.bits != 4 && weight_only.bits != 8)) {
        throw Error("--weight-only " + std::to_string(weight_only.bits) +
                    (weight_only.codebook ? ": expected 1..8 with --codebook" : ": expected 4 or 8 (1..8 with --codebook)"));
      }
      if (!job.calib_dataset.empty() || !job.calib_npy.empty()) {
        throw Error("--weight-only needs no calibration data; drop --calib-dataset / --calib-npy");
      }
      if (!qat_args.empty()) throw Error("--weight-only and --qat exclude each other (QAT trains for the int8 rewrite)");
      run_weight_only(job, weight_only, as_json);
      exit_code = 0;
      return;
    }
    if (weight_only.codebook) throw Error("--codebook needs --weight-only BITS");
    job.calibration.method = quantize::calibration_method_from_name(method);
    if (!qat_args.empty()) {
      job.qat_config = qat_args.front();
      job.qat_overrides.assign(qat_args.begin() + 1, qat_args.end());
    }
    job.preprocess.mean = {parse_one_float("--mean", mean_text)};
    job.preprocess.std = {parse_one_float("--std", std_text)};
    if (budget_option->count() > 0) job.accuracy_budget = budget;
    if (!(job.calibration.percentile > 0 && job.calibration.percentile <= 100)) {
      throw Error("--percentile " + std::to_string(job.calibration.percentile) + ": expected a value in (0, 100]");
    }
    const ptq::QuantizeJobResult r = ptq::run_quantize_job(job, [](const std::string& line) {
      std::fprintf(stderr, "quantize: %s\n", line.c_str());
    });
    if (as_json) {
      std::printf("%s\n", ptq::to_json(r).c_str());
    } else {
      print_summary(job.model_path, r);
      if (r.has_sensitivity) std::printf("\n%s", ptq::sensitivity_table(r).c_str());
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
