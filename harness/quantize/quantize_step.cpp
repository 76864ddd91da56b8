#include "harness/quantize/quantize_step.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "harness/quantize/quantize_job.h"
#include "harness/util/json.h"

namespace xnn::ptq {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kKeys = {"calib_dataset", "calib_npy",   "data_dir",        "scale",       "mean",
                                        "std",           "layout",      "calib_samples",   "method",      "percentile",
                                        "per_tensor",    "exclude",     "sensitivity",     "accuracy_budget",
                                        "val_samples",   "eval_limit",  "threads",         "bias_correction",
                                        "reduce_range"};

// "exp.yaml:14:9" for a parameter's value: the file of the step's location, the value's line/column.
std::string where(const std::string& step_location, const YAML::Node& value) {
  const std::string file = step_location.substr(0, step_location.find(':'));
  const YAML::Mark m = value.Mark();
  if (m.is_null()) return step_location;
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

template <typename T>
T get(const YAML::Node& p, const std::string& key, const std::string& loc, const char* expected) {
  const YAML::Node v = p[key];
  try {
    if (!v.IsScalar()) throw YAML::Exception(v.Mark(), "not a scalar");
    return v.as<T>();
  } catch (const YAML::Exception&) {
    throw Error(where(loc, v) + ": step 'quantize': '" + key + "' must be " + expected);
  }
}

std::string relative_to_config(const std::string& loc, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute()) return path;
  const std::string file = loc.substr(0, loc.find(':'));
  return (fs::path(file).parent_path() / path).lexically_normal().string();
}

class QuantizeStep : public Step {
 public:
  QuantizeStep(QuantizeJob job, std::string description) : job_(std::move(job)), description_(std::move(description)) {}

  std::string describe() const override { return description_; }

  std::string apply(const std::string& input, const StepContext& ctx) const override {
    QuantizeJob job = job_;
    job.model_path = input;
    job.output_path = (fs::path(ctx.work_dir) / "quantized.xnn").string();
    QuantizeJobResult r;
    try {
      r = run_quantize_job(job);
    } catch (const Error& e) {
      throw Error(ctx.location + ": step 'quantize': " + e.what());
    }
    std::ofstream report(fs::path(ctx.work_dir) / "quantize_report.json");
    report << to_json(r) << "\n";
    return job.output_path;
  }

 private:
  QuantizeJob job_;
  std::string description_;
};

std::unique_ptr<Step> make_step(const YAML::Node& p, const std::string& loc) {
  check_step_params(p, "quantize", loc, kKeys);
  QuantizeJob job;
  job.eval_limit = -1;
  std::string d = "quantize(";
  auto note = [&](const std::string& key, const std::string& value) {
    d += (d.back() == '(' ? "" : ",") + key + "=" + value;
  };
  if (p && p["calib_dataset"]) note("calib_dataset", job.calib_dataset = get<std::string>(p, "calib_dataset", loc, "a dataset name"));
  if (p && p["calib_npy"]) {
    job.calib_npy = relative_to_config(loc, get<std::string>(p, "calib_npy", loc, "a .npy file path"));
    note("calib_npy", job.calib_npy);
  }
  if (job.calib_dataset.empty() == job.calib_npy.empty()) {
    throw Error(loc + ": step 'quantize' needs exactly one of 'calib_dataset' (fashion-mnist) or 'calib_npy'");
  }
  if (!job.calib_dataset.empty() && job.calib_dataset != "fashion-mnist") {
    throw Error(where(loc, p["calib_dataset"]) + ": step 'quantize': unknown calib_dataset '" + job.calib_dataset +
                "'; supported: " + kSupportedCalibDatasets);
  }
  if (p && p["data_dir"]) job.data_dir = relative_to_config(loc, get<std::string>(p, "data_dir", loc, "a folder path"));
  if (p && p["scale"]) {
    // "1/255" is accepted as in the models' preprocess blocks.
    const std::string s = get<std::string>(p, "scale", loc, "a number");
    const size_t slash = s.find('/');
    try {
      job.preprocess.scale = slash == std::string::npos ? std::stof(s) : std::stof(s.substr(0, slash)) / std::stof(s.substr(slash + 1));
    } catch (const std::exception&) {
      throw Error(where(loc, p["scale"]) + ": step 'quantize': 'scale' must be a number (or a fraction like 1/255)");
    }
  }
  if (p && p["mean"]) job.preprocess.mean = {get<float>(p, "mean", loc, "a number")};
  if (p && p["std"]) job.preprocess.std = {get<float>(p, "std", loc, "a number")};
  if (p && p["layout"]) job.preprocess.layout = get<std::string>(p, "layout", loc, "NCHW or NHWC");
  note("scale", json::number(static_cast<double>(job.preprocess.scale)));
  note("mean", json::number(static_cast<double>(job.preprocess.mean[0])));
  note("std", json::number(static_cast<double>(job.preprocess.std[0])));
  if (p && p["calib_samples"]) job.calib_samples = get<int64_t>(p, "calib_samples", loc, "an integer");
  if (job.calib_samples < 1) {
    throw Error(where(loc, p["calib_samples"]) + ": step 'quantize': 'calib_samples' must be >= 1");
  }
  note("calib_samples", std::to_string(job.calib_samples));
  if (p && p["method"]) {
    const std::string m = get<std::string>(p, "method", loc, "minmax, percentile, kl or mse");
    try {
      job.calibration.method = quantize::calibration_method_from_name(m);
    } catch (const Error& e) {
      throw Error(where(loc, p["method"]) + ": step 'quantize': " + e.what());
    }
  }
  note("method", quantize::calibration_method_name(job.calibration.method));
  if (p && p["percentile"]) {
    job.calibration.percentile = get<double>(p, "percentile", loc, "a number");
    if (!(job.calibration.percentile > 0 && job.calibration.percentile <= 100)) {
      throw Error(where(loc, p["percentile"]) + ": step 'quantize': 'percentile' must be in (0, 100]");
    }
    note("percentile", json::number(job.calibration.percentile));
  }
  if (p && p["per_tensor"]) job.per_tensor = get<bool>(p, "per_tensor", loc, "true or false");
  if (job.per_tensor) note("per_tensor", "true");
  if (p && p["bias_correction"]) job.bias_correction = get<bool>(p, "bias_correction", loc, "true or false");
  if (job.bias_correction) note("bias_correction", "true");
  if (p && p["reduce_range"]) job.reduce_range = get<bool>(p, "reduce_range", loc, "true or false");
  if (job.reduce_range) note("reduce_range", "true");
  if (p && p["exclude"]) {
    const YAML::Node e = p["exclude"];
    if (e.IsScalar()) {
      job.exclude.push_back(e.as<std::string>());
    } else if (e.IsSequence()) {
      for (const YAML::Node& n : e) {
        if (!n.IsScalar()) throw Error(where(loc, n) + ": step 'quantize': 'exclude' entries must be node names");
        job.exclude.push_back(n.as<std::string>());
      }
    } else {
      throw Error(where(loc, e) + ": step 'quantize': 'exclude' must be a node name or a list of them");
    }
    std::string list;
    for (const std::string& n : job.exclude) list += (list.empty() ? "" : "|") + n;
    note("exclude", list);
  }
  if (p && p["sensitivity"]) job.sensitivity = get<bool>(p, "sensitivity", loc, "true or false");
  if (p && p["accuracy_budget"]) {
    job.accuracy_budget = get<double>(p, "accuracy_budget", loc, "a number of points");
    if (!(*job.accuracy_budget >= 0)) throw Error(where(loc, p["accuracy_budget"]) + ": step 'quantize': 'accuracy_budget' must be >= 0");
    note("accuracy_budget", json::number(*job.accuracy_budget));
  }
  if (p && p["val_samples"]) job.val_samples = get<int64_t>(p, "val_samples", loc, "an integer");
  if (job.accuracy_budget || job.sensitivity) note("val_samples", std::to_string(job.val_samples));
  if (p && p["eval_limit"]) job.eval_limit = get<int64_t>(p, "eval_limit", loc, "an integer (-1: no evaluation, 0: all)");
  if (p && p["threads"]) job.threads = get<int>(p, "threads", loc, "an integer");
  if (job.accuracy_budget && job.calib_dataset.empty()) {
    throw Error(where(loc, p["accuracy_budget"]) + ": step 'quantize': 'accuracy_budget' needs a labelled 'calib_dataset'");
  }
  return std::make_unique<QuantizeStep>(std::move(job), d + ")");
}

}  // namespace

void register_quantize_step(StepRegistry& r) {
  r.add("quantize", "post-training int8 quantisation (calibration, int8 graph), saved as .xnn", make_step);
}

}  // namespace xnn::ptq
