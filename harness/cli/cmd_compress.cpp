// xnn-lab compress MODEL --recipe RECIPE.yaml -o OUT.xnn [--dataset fashion-mnist] [--data-dir DIR]
//   [--scale S --mean M --std D] [--eval-limit N] [--db FILE] [--no-db] [--work-dir DIR]
//   [--threads N] [--json]
//
// The Deep Compression pipeline as a recipe (harness/compress_recipe, configs/compress/README.md):
// prune -> fine-tune -> cluster (trained quantisation) -> int8 -> encode, in the recipe's order.
// After every stage: the size of the .xnn the model would be saved as and top-1 on the test
// split (--eval-limit: its first N images). The run is recorded in the store (--db, default
// ./xnn-lab.db): experiment "compress", one job with stage.<i>.<stage>.size_bytes / .top1.
// Normalisation default: the Fashion-MNIST statistics configs/train uses (mean 0.2860, std
// 0.3530 after scale 1/255), so models trained by `xnn-lab train` evaluate correctly.
#include <cstdio>
#include <filesystem>

#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/runtime/model_io.h"
#include "harness/cli/commands.h"
#include "harness/cli/registries.h"
#include "harness/compress_recipe/compress_pipeline.h"
#include "harness/compress_recipe/compress_record.h"
#include "harness/compress_recipe/recipe.h"
#include "harness/util/json.h"

namespace xnn::cli {
namespace {

namespace fs = std::filesystem;

struct CompressArgs {
  std::string model, recipe, output, dataset = "fashion-mnist", data_dir = data::kDefaultFashionMnistDir;
  float scale = 1.0f / 255.0f, mean = 0.2860f, std = 0.3530f;
  int64_t eval_limit = 0;
  std::string db = "xnn-lab.db", work_dir;
  bool no_db = false, as_json = false;
  int threads = 1;
};

std::string options_json(const CompressArgs& a) {
  json::Writer w;
  w.begin_object()
      .field("dataset", a.dataset)
      .field("scale", static_cast<double>(a.scale))
      .field("mean", static_cast<double>(a.mean))
      .field("std", static_cast<double>(a.std))
      .field("eval_limit", a.eval_limit)
      .end_object();
  return w.str();
}

void run_compress(const CompressArgs& a) {
  const compress_recipe::Recipe recipe = compress_recipe::load_recipe(a.recipe);
  if (a.eval_limit < 0) throw Error("--eval-limit: expected >= 0 (0 = the whole test split)");
  if (a.threads < 1) throw Error("--threads: expected >= 1");
  compress_recipe::CompressOptions o;
  o.dataset = a.dataset;
  o.data_dir = a.data_dir;
  o.preprocess.scale = a.scale;
  o.preprocess.mean = {a.mean};
  o.preprocess.std = {a.std};
  o.eval_limit = a.eval_limit;
  o.threads = a.threads;
  o.work_dir = a.work_dir.empty() ? a.output + ".work" : a.work_dir;
  o.progress = [](const std::string& l) { std::fprintf(stderr, "compress: %s\n", l.c_str()); };
  std::shared_ptr<Model> model = load_model(a.model);

  std::unique_ptr<Store> store;
  std::unique_ptr<compress_recipe::CompressRecorder> recorder;
  if (!a.no_db) {
    store = std::make_unique<Store>(fs::absolute(a.db).string());
    compress_recipe::CompressInvocation inv;
    inv.model_path = a.model;
    inv.recipe_path = a.recipe;
    inv.recipe_name = recipe.name;
    inv.recipe_text = recipe.text;
    inv.output_path = a.output;
    inv.options_json = options_json(a);
    inv.command = "xnn-lab compress " + a.model + " --recipe " + a.recipe + " -o " + a.output;
    inv.git_commit = build_commit();
    recorder = std::make_unique<compress_recipe::CompressRecorder>(*store, inv);
  }
  compress_recipe::CompressResult r;
  try {
    r = compress_recipe::run_recipe(recipe, model, o);
    // Saved exactly as the last stage's size was measured (serialize_xnn, no extra metadata),
    // so the file's size is the reported final size.
    save_xnn(*model, a.output);
  } catch (const std::exception& e) {
    if (recorder) recorder->fail(e.what());
    throw;
  }
  if (recorder) recorder->finish(r);
  if (a.as_json) {
    std::printf("%s\n", compress_recipe::to_json(r, a.output).c_str());
  } else {
    std::printf("%s", compress_recipe::to_text(r).c_str());
    std::printf("  saved %s (%llu bytes)%s\n", a.output.c_str(), static_cast<unsigned long long>(fs::file_size(a.output)),
                recorder ? (", recorded as run " + recorder->run_id() + " in " + store->path()).c_str() : "");
  }
}

}  // namespace

void add_compress_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("compress", "Run a compression recipe (prune, fine-tune, cluster, int8, encode) on a model");
  static CompressArgs a;
  cmd->add_option("model", a.model, "Model (.onnx or .xnn)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--recipe", a.recipe, "Compression recipe (configs/compress/*.yaml)")->required();
  cmd->add_option("-o,--output", a.output, "Output model (.xnn; coded when the recipe ends with encode)")->required();
  cmd->add_option("--dataset", a.dataset, "Evaluation and calibration data (fashion-mnist)")->capture_default_str();
  cmd->add_option("--data-dir", a.data_dir, "Folder with the dataset files")->capture_default_str();
  cmd->add_option("--scale", a.scale, "x = (pixel * scale - mean) / std; pixel in [0, 255]")->capture_default_str();
  cmd->add_option("--mean", a.mean, "Mean subtracted after scaling")->capture_default_str();
  cmd->add_option("--std", a.std, "Standard deviation divided by")->capture_default_str();
  cmd->add_option("--eval-limit", a.eval_limit, "Test images for each stage's top-1 (0 = all)")->capture_default_str();
  cmd->add_option("--db", a.db, "Results store (SQLite) recording the run")->capture_default_str();
  cmd->add_flag("--no-db", a.no_db, "Do not record the run");
  cmd->add_option("--work-dir", a.work_dir, "Fine-tuning outputs and intermediate models (default OUT.work)");
  cmd->add_option("--threads", a.threads, "Threads for evaluation")->capture_default_str();
  cmd->add_flag("--json", a.as_json, "Print the result as one JSON object");
  cmd->callback([&exit_code] {
    run_compress(a);
    exit_code = 0;
  });
}

}  // namespace xnn::cli
