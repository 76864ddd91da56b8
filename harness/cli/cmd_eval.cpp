// xnn-lab eval MODEL --dataset fashion-mnist [--data-dir DIR] [--split test] [--limit N]
//   [--scale S] [--mean M[,M..]] [--std D[,D..]] [--layout NCHW|NHWC] [--batch N] [--json]
#include <cstdio>
#include <sstream>

#include "engine/core/error.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"
#include "harness/cli/commands.h"
#include "harness/cli/key_option.h"
#include "harness/data/fashion_mnist.h"
#include "harness/eval/evaluate.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace {

constexpr const char* kSupportedDatasets = "fashion-mnist";

std::vector<float> parse_floats(const std::string& option, const std::string& text) {
  std::vector<float> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    float v = 0;
    try {
      v = std::stof(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) {
      throw Error(option + " '" + text + "': '" + item + "' is not a number; expected comma-separated numbers");
    }
    out.push_back(v);
  }
  if (out.empty()) throw Error(option + " is empty; expected one or more comma-separated numbers");
  return out;
}

}  // namespace

void add_eval_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("eval", "Measure a classifier's top-1/top-5 accuracy on a dataset");
  static std::string model_path, dataset, data_dir = data::kDefaultFashionMnistDir, split = "test";
  static std::string mean_text = "0", std_text = "1", layout = "NCHW";
  static int64_t limit = 0, batch = 0;
  static float scale = 1.0f / 255.0f;
  static bool as_json = false;
  cmd->add_option("model", model_path, "Model (.onnx or .xnn)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--dataset", dataset, std::string("Dataset; supported: ") + kSupportedDatasets)->required();
  cmd->add_option("--data-dir", data_dir, "Folder with the dataset files")->capture_default_str();
  cmd->add_option("--split", split, "train or test")->capture_default_str();
  cmd->add_option("--limit", limit, "Evaluate only the first N samples (0 = all)")->capture_default_str();
  cmd->add_option("--scale", scale, "x = (pixel * scale - mean) / std; pixel in [0, 255]")->capture_default_str();
  cmd->add_option("--mean", mean_text, "Mean(s) subtracted after scaling, comma-separated")->capture_default_str();
  cmd->add_option("--std", std_text, "Standard deviation(s) divided by, comma-separated")->capture_default_str();
  cmd->add_option("--layout", layout, "Image layout when the model's input shape does not settle it")
      ->check(CLI::IsMember({"NCHW", "NHWC"}))
      ->capture_default_str();
  cmd->add_option("--batch", batch, "Batch size (0 = the model's fixed batch dim, else 64)")->capture_default_str();
  cmd->add_flag("--json", as_json, "Print the result as JSON");
  static std::string key_file;
  add_key_file_option(cmd, key_file);
  cmd->callback([&exit_code] {
    if (dataset != "fashion-mnist") {
      throw Error("unknown dataset '" + dataset + "'; supported datasets: " + kSupportedDatasets);
    }
    if (limit < 0) throw Error("--limit " + std::to_string(limit) + ": expected >= 0 (0 = all samples)");
    if (batch < 0) throw Error("--batch " + std::to_string(batch) + ": expected >= 0 (0 = automatic)");
    data::Preprocess p;
    p.scale = scale;
    p.mean = parse_floats("--mean", mean_text);
    p.std = parse_floats("--std", std_text);
    p.layout = layout;
    Session session(load_model(model_path, load_options_for(key_file)));
    const data::Dataset ds = data::load_fashion_mnist(data_dir, split, limit);
    const eval::AccuracyResult r = eval::evaluate_classifier(session, ds, p, batch);
    if (as_json) {
      json::Writer w;
      w.begin_object()
          .field("top1", r.top1)
          .field("top5", r.top5)
          .field("samples", r.samples)
          .field("seconds", r.seconds)
          .field("model", model_path)
          .field("dataset", dataset)
          .field("split", split)
          .end_object();
      std::printf("%s\n", w.str().c_str());
    } else {
      std::printf("%s on %s/%s: top-1 %.2f%%, top-5 %.2f%% (%lld samples, %.2f s)\n", model_path.c_str(),
                  dataset.c_str(), split.c_str(), r.top1 * 100.0, r.top5 * 100.0, static_cast<long long>(r.samples),
                  r.seconds);
    }
    exit_code = 0;
  });
}

}  // namespace xnn::cli
