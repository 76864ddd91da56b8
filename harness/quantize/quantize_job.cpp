#include "harness/quantize/quantize_job.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "compress/quantize/sensitivity.h"
#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/npy.h"
#include "engine/runtime/session.h"
#include "harness/eval/evaluate.h"
#include "harness/quantize/qat_job.h"
#include "harness/util/json.h"

namespace xnn::ptq {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kTrainImages = 60000;

void check_job(const QuantizeJob& j) {
  const bool dataset = !j.calib_dataset.empty(), npy = !j.calib_npy.empty();
  if (dataset == npy) {
    throw Error(dataset ? "give one calibration source: --calib-dataset or --calib-npy, not both"
                        : "no calibration data: give --calib-dataset fashion-mnist or --calib-npy FILE.npy");
  }
  if (dataset && j.calib_dataset != "fashion-mnist") {
    throw Error("--calib-dataset '" + j.calib_dataset + "': unknown dataset; supported: " + kSupportedCalibDatasets);
  }
  if (npy && !fs::is_regular_file(j.calib_npy)) throw Error("--calib-npy " + j.calib_npy + ": no such file");
  if (j.calib_samples < 1) throw Error("--calib-samples " + std::to_string(j.calib_samples) + ": expected >= 1");
  if (j.accuracy_budget && !dataset) {
    throw Error("--accuracy-budget needs a labelled dataset (--calib-dataset fashion-mnist); a .npy file has no labels");
  }
  if (j.accuracy_budget && !(*j.accuracy_budget >= 0)) {
    throw Error("--accuracy-budget " + std::to_string(*j.accuracy_budget) + ": expected >= 0 points");
  }
  if ((j.sensitivity || j.accuracy_budget) && dataset && (j.val_samples < 1 || j.val_samples + j.calib_samples > kTrainImages)) {
    throw Error("--val-samples " + std::to_string(j.val_samples) + ": expected 1.." +
                std::to_string(kTrainImages - j.calib_samples) + " (the end of the training split, after the calibration images)");
  }
  if (!j.qat_config.empty() && !dataset) {
    throw Error("--qat needs a labelled dataset to train on (--calib-dataset fashion-mnist), not --calib-npy");
  }
  if (!j.qat_config.empty() && !fs::is_regular_file(j.qat_config)) throw Error("--qat " + j.qat_config + ": no such file");
  if (j.threads < 1) throw Error("--threads " + std::to_string(j.threads) + ": expected >= 1");
  if (j.output_path.empty()) throw Error("no output path (-o OUT.xnn)");
  const fs::path parent = fs::path(j.output_path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent)) throw Error("-o " + j.output_path + ": folder " + parent.string() + " does not exist");
}

// The model input's shape with unknown dims as -1 (what make_batch wants).
Shape input_shape(const Model& m) {
  Session s(std::make_shared<Model>(m), SessionOptions{});
  if (s.inputs().size() != 1) {
    throw Error("quantisation expects a model with one input; this one has " + std::to_string(s.inputs().size()));
  }
  Shape shape;
  for (const Dim& d : s.inputs()[0].shape) shape.push_back(d.known() ? d.value : -1);
  return shape;
}

Tensor npy_samples(const std::string& path, int64_t limit) {
  Tensor t = read_npy(path);
  if (t.dtype() != DType::kF32) {
    throw Error(path + ": calibration samples have dtype " + std::string(dtype_name(t.dtype())) + ", expected float32");
  }
  if (t.rank() < 1 || t.dim(0) < 1) throw Error(path + ": expected [N, ...] samples, got shape " + shape_str(t.shape()));
  return t.dim(0) > limit ? t.slice_outer(0, limit) : t;
}

quantize::LabelledSamples labelled(const data::Dataset& ds, int64_t begin, int64_t count, const data::Preprocess& p,
                                   const Shape& shape) {
  quantize::LabelledSamples s;
  s.inputs = data::make_batch(ds, begin, count, p, shape);
  for (int64_t i = begin; i < begin + count; ++i) s.labels.push_back(ds.labels[static_cast<size_t>(i)]);
  return s;
}

double evaluate_top1(const Model& m, const data::Dataset& test, const data::Preprocess& p, int threads) {
  SessionOptions o;
  o.threads = threads;
  Session s(std::make_shared<Model>(m), o);
  return eval::evaluate_classifier(s, test, p).top1;
}

void say(const std::function<void(const std::string&)>& progress, const std::string& line) {
  if (progress) progress(line);
}

}  // namespace

QuantizeJobResult run_quantize_job(const QuantizeJob& job, const std::function<void(const std::string&)>& progress) {
  check_job(job);
  const std::shared_ptr<Model> model = load_model(job.model_path);
  const Shape shape = input_shape(*model);
  const bool dataset = !job.calib_dataset.empty();

  Tensor calib;
  data::Dataset train;
  if (dataset) {
    const bool need_validation = job.sensitivity || job.accuracy_budget.has_value();
    train = data::load_fashion_mnist(job.data_dir, "train", need_validation ? 0 : job.calib_samples);
    if (train.count < job.calib_samples) {
      throw Error("--calib-samples " + std::to_string(job.calib_samples) + ": the training split has only " +
                  std::to_string(train.count) + " images");
    }
    calib = data::make_batch(train, 0, job.calib_samples, job.preprocess, shape);
  } else {
    calib = npy_samples(job.calib_npy, job.calib_samples);
  }

  quantize::PtqOptions o;
  o.calibration = job.calibration;
  o.graph.per_channel = !job.per_tensor;
  o.graph.bias_correction = job.bias_correction;
  o.graph.reduce_range = job.reduce_range;
  o.graph.exclude = std::set<std::string>(job.exclude.begin(), job.exclude.end());
  o.batch.threads = job.threads;
  say(progress, "calibrating on " + std::to_string(calib.dim(0)) + " samples (" +
                    quantize::calibration_method_name(job.calibration.method) + ")");
  quantize::PtqResult ptq = quantize::post_training_quantize(*model, calib, o);
  // The later rewrites (sensitivity, mixed precision, QAT) correct biases the same way.
  if (o.graph.bias_correction) o.graph.channel_means = &ptq.stats.channel_means;

  QuantizeJobResult r;
  r.output_path = job.output_path;
  r.method = quantize::calibration_method_name(job.calibration.method);
  r.calib_samples = calib.dim(0);
  r.per_tensor = job.per_tensor;
  r.bias_correction = job.bias_correction;
  r.reduce_range = job.reduce_range;
  r.excluded = job.exclude;

  if (job.sensitivity || job.accuracy_budget) {
    quantize::LabelledSamples validation;
    if (dataset) {
      validation = labelled(train, train.count - job.val_samples, job.val_samples, job.preprocess, shape);
      r.val_samples = job.val_samples;
    }
    say(progress, "sensitivity: quantising each of " + std::to_string(quantize::quantizable_layers(ptq.float_model->graph).size()) +
                      " layers alone" + (dataset ? " (top-1 on " + std::to_string(job.val_samples) + " validation images)" : ""));
    r.sensitivity = quantize::analyse_sensitivity(*ptq.float_model, ptq.ranges, o.graph, calib, dataset ? &validation : nullptr,
                                                  o.batch);
    r.has_sensitivity = true;
    if (job.accuracy_budget) {
      say(progress, "mixed precision: accuracy budget " + json::number(*job.accuracy_budget) + " points");
      r.mixed_precision = quantize::choose_mixed_precision(*ptq.float_model, ptq.ranges, o.graph, r.sensitivity, validation,
                                                           *job.accuracy_budget, o.batch);
      r.has_mixed_precision = true;
      r.accuracy_budget = *job.accuracy_budget;
      for (const std::string& l : r.mixed_precision.fp32_layers) {
        o.graph.exclude.insert(l);
        r.excluded.push_back(l);
      }
      ptq.int8_model = std::make_shared<Model>(quantize::quantize_model_graph(*ptq.float_model, ptq.ranges, o.graph, &ptq.report));
      ptq.int8_model->metadata.options = ptq.float_model->metadata.options;
      ptq.int8_model->metadata.options["quantization"] =
          "int8 ptq, " + r.method + ", mixed precision (" + std::to_string(r.mixed_precision.fp32_layers.size()) + " fp32 layers)";
    }
  }
  const std::shared_ptr<Model> ptq_int8 = ptq.int8_model;
  if (!job.qat_config.empty()) {
    const QatOutcome qat = run_qat(*ptq.float_model, ptq.ranges, o.graph, job.preprocess, job.qat_config, job.qat_overrides, progress);
    ptq.int8_model = qat.int8_model;
    ptq.report = qat.report;
    r.has_qat = true;
    r.qat_fake_quant_top1 = qat.training.test_accuracy;
    r.qat_epochs = static_cast<int>(qat.training.history.size());
    r.qat_train_seconds = qat.training.train_seconds;
    r.qat_weight_fake_quants = qat.weight_fake_quants;
    r.qat_activation_fake_quants = qat.activation_fake_quants;
  }
  r.report = ptq.report;

  XnnSaveOptions save;
  save.extra_options["quantized_from"] = fs::path(job.model_path).filename().string();
  save.extra_options["calibration"] = r.method + ", " + std::to_string(r.calib_samples) + " samples";
  save_xnn(*ptq.int8_model, job.output_path, save);
  r.bytes_before = static_cast<int64_t>(fs::file_size(job.model_path));
  r.bytes_after = static_cast<int64_t>(fs::file_size(job.output_path));
  r.weight_bytes_before = quantize::constant_bytes(ptq.float_model->graph);
  r.weight_bytes_after = quantize::constant_bytes(ptq.int8_model->graph);

  if (dataset && job.eval_limit >= 0) {
    const data::Dataset test = data::load_fashion_mnist(job.data_dir, "test", job.eval_limit);
    say(progress, "evaluating fp32 and int8 on " + std::to_string(test.count) + " test images");
    r.fp32_top1 = evaluate_top1(*model, test, job.preprocess, job.threads);
    r.int8_top1 = evaluate_top1(*load_model(job.output_path), test, job.preprocess, job.threads);
    if (r.has_qat) r.ptq_int8_top1 = evaluate_top1(*ptq_int8, test, job.preprocess, job.threads);
    r.eval_samples = test.count;
    r.has_test_top1 = true;
  }
  return r;
}

std::string to_json(const QuantizeJobResult& r) {
  json::Writer w;
  w.begin_object()
      .field("output", r.output_path)
      .field("method", r.method)
      .field("calib_samples", r.calib_samples)
      .field("weights", std::string(r.per_tensor ? "per-tensor" : "per-channel"))
      .field("bias_correction", r.bias_correction)
      .field("weight_range", static_cast<int64_t>(r.reduce_range ? quantize::kReducedWeightQmax : quantize::kWeightQmax))
      .field("bytes_before", r.bytes_before)
      .field("bytes_after", r.bytes_after)
      .field("weight_bytes_before", r.weight_bytes_before)
      .field("weight_bytes_after", r.weight_bytes_after)
      .field("int8_nodes", r.report.int8_nodes)
      .field("fp32_nodes", r.report.fp32_nodes)
      .field("quantize_nodes", r.report.quantize_nodes)
      .field("dequantize_nodes", r.report.dequantize_nodes)
      .field("fused_activations", r.report.fused_activations);
  auto strings = [&](const char* key, const std::vector<std::string>& v) {
    w.key(key).begin_array();
    for (const std::string& s : v) w.value(s);
    w.end_array();
  };
  strings("int8_layers", r.report.int8_layers);
  strings("fp32_layers", r.report.fp32_layers);
  strings("excluded", r.excluded);
  if (r.has_test_top1) {
    w.field("eval_samples", r.eval_samples).field("top1_fp32", r.fp32_top1).field("top1_int8", r.int8_top1);
    w.field("top1_drop_points", (r.fp32_top1 - r.int8_top1) * 100.0);
    if (r.has_qat) w.field("top1_ptq_int8", r.ptq_int8_top1);
  }
  if (r.has_qat) {
    w.key("qat").begin_object().field("epochs", static_cast<int64_t>(r.qat_epochs)).field("train_seconds", r.qat_train_seconds);
    w.field("weight_fake_quants", static_cast<int64_t>(r.qat_weight_fake_quants))
        .field("activation_fake_quants", static_cast<int64_t>(r.qat_activation_fake_quants))
        .field("fake_quant_test_top1", r.qat_fake_quant_top1)
        .end_object();
  }
  if (r.has_sensitivity) {
    w.key("sensitivity").begin_object();
    if (r.sensitivity.has_top1) w.field("val_samples", r.val_samples).field("top1_fp32", r.sensitivity.fp32_top1);
    w.key("layers").begin_array();
    for (const quantize::LayerSensitivity& l : r.sensitivity.layers) {
      w.begin_object().field("name", l.name).field("op_type", l.op_type).field("sqnr_db", l.sqnr_db);
      if (l.has_top1) w.field("top1", l.top1).field("top1_drop_points", l.top1_drop_points);
      w.end_object();
    }
    w.end_array().end_object();
  }
  if (r.has_mixed_precision) {
    const quantize::MixedPrecisionResult& m = r.mixed_precision;
    w.key("mixed_precision").begin_object().field("budget_points", r.accuracy_budget).field("budget_met", m.budget_met);
    w.field("val_top1_fp32", m.fp32_top1);
    strings("fp32_layers", m.fp32_layers);
    w.key("steps").begin_array();
    for (const quantize::MixedPrecisionStep& s : m.steps) {
      w.begin_object().field("fp32_layers", static_cast<int64_t>(s.fp32_layers.size())).field("val_top1", s.top1);
      w.field("drop_points", s.drop_points).end_object();
    }
    w.end_array().end_object();
  }
  w.end_object();
  return w.str();
}

std::string sensitivity_table(const QuantizeJobResult& r) {
  std::string out;
  char line[256];
  const bool top1 = r.sensitivity.has_top1;
  std::snprintf(line, sizeof(line), "%-32s %-18s %10s%s\n", "layer (most sensitive first)", "op", "SQNR dB",
                top1 ? "   top-1 %   drop (points)" : "");
  out += line;
  for (const quantize::LayerSensitivity& l : r.sensitivity.layers) {
    std::snprintf(line, sizeof(line), "%-32s %-18s %10.2f", l.name.c_str(), l.op_type.c_str(), l.sqnr_db);
    out += line;
    if (l.has_top1) {
      std::snprintf(line, sizeof(line), "   %7.2f   %+12.2f", l.top1 * 100.0, l.top1_drop_points);
      out += line;
    }
    out += "\n";
  }
  if (top1) {
    std::snprintf(line, sizeof(line), "fp32 top-1 on %lld validation images: %.2f %%\n", static_cast<long long>(r.val_samples),
                  r.sensitivity.fp32_top1 * 100.0);
    out += line;
  }
  return out;
}

}  // namespace xnn::ptq
