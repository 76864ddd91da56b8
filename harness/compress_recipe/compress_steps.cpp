#include "harness/compress_recipe/compress_steps.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "engine/core/sha256.h"
#include "engine/format/xnn_format.h"
#include "engine/runtime/model_io.h"
#include "harness/compress_recipe/compress_pipeline.h"
#include "harness/compress_recipe/recipe.h"

namespace xnn::compress_recipe {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kEvalKeys = {"eval_limit", "scale", "mean", "std", "threads"};

std::string file_of(const std::string& location) { return location.substr(0, location.find(':')); }

// Reads the evaluation keys of a step into `o`, returning their description for describe().
std::string parse_eval_keys(const YAML::Node& p, const std::string& step, const std::string& loc, CompressOptions& o) {
  o.eval_limit = 1000;
  auto num = [&](const char* key, auto& out) {
    if (!p || !p[key]) return;
    try {
      out = p[key].as<std::remove_reference_t<decltype(out)>>();
    } catch (const YAML::Exception&) {
      throw Error(where(file_of(loc), p[key]) + ": step '" + step + "': '" + key + "' must be a number");
    }
  };
  float mean = o.preprocess.mean[0], std = o.preprocess.std[0];
  num("eval_limit", o.eval_limit);
  num("scale", o.preprocess.scale);
  num("mean", mean);
  num("std", std);
  num("threads", o.threads);
  if (o.eval_limit < 0) throw Error(where(file_of(loc), p["eval_limit"]) + ": step '" + step + "': 'eval_limit' must be >= 0");
  if (o.threads < 1) throw Error(where(file_of(loc), p["threads"]) + ": step '" + step + "': 'threads' must be >= 1");
  o.preprocess.mean = {mean};
  o.preprocess.std = {std};
  return "eval_limit=" + std::to_string(o.eval_limit) + ",scale=" + std::to_string(o.preprocess.scale) +
         ",mean=" + std::to_string(mean) + ",std=" + std::to_string(std);
}

class RecipeStep : public Step {
 public:
  RecipeStep(Recipe recipe, CompressOptions options, std::string description)
      : recipe_(std::move(recipe)), options_(std::move(options)), description_(std::move(description)) {}

  std::string describe() const override { return description_; }

  std::string apply(const std::string& input, const StepContext& ctx) const override {
    CompressOptions o = options_;
    o.work_dir = (fs::path(ctx.work_dir) / "compress-work").string();
    std::shared_ptr<Model> model = load_model(input);
    CompressResult r;
    try {
      r = run_recipe(recipe_, model, o);
    } catch (const Error& e) {
      throw Error(ctx.location + ": step '" + description_.substr(0, description_.find('(')) + "': " + e.what());
    }
    const std::string out = (fs::path(ctx.work_dir) / "compressed.xnn").string();
    model->metadata.producer = "xnn-lab compress";
    save_xnn(*model, out);
    std::ofstream report(fs::path(ctx.work_dir) / "compress_report.json");
    report << to_json(r, out) << "\n";
    return out;
  }

 private:
  Recipe recipe_;
  CompressOptions options_;
  std::string description_;
};

std::unique_ptr<Step> make_compress_step(const YAML::Node& p, const std::string& loc) {
  std::vector<std::string> allowed = {"recipe"};
  allowed.insert(allowed.end(), kEvalKeys.begin(), kEvalKeys.end());
  check_step_params(p, "compress", loc, allowed);
  if (!p || !p["recipe"]) throw Error(loc + ": step 'compress' needs 'recipe' (a compression recipe, configs/compress)");
  std::string path = p["recipe"].as<std::string>();
  if (fs::path(path).is_relative()) path = (fs::path(file_of(loc)).parent_path() / path).lexically_normal().string();
  if (!fs::exists(path)) throw Error(where(file_of(loc), p["recipe"]) + ": step 'compress': no such recipe '" + path + "'");
  Recipe recipe = load_recipe(path);
  CompressOptions o;
  const std::string eval = parse_eval_keys(p, "compress", loc, o);
  const std::string d = "compress(recipe=" + recipe.name + ",sha256=" + sha256_hex(recipe.text).substr(0, 12) + "," + eval + ")";
  return std::make_unique<RecipeStep>(std::move(recipe), std::move(o), d);
}

std::unique_ptr<Step> make_prune_step(const YAML::Node& p, const std::string& loc) {
  if (!p || !p.IsMap()) throw Error(loc + ": step 'prune' needs a mapping (target_sparsity, schedule, finetune, ...)");
  // The eval keys are the step's; the rest is a recipe prune stage.
  YAML::Node body(YAML::NodeType::Map);
  for (const auto& kv : p) {
    const std::string key = kv.first.as<std::string>();
    if (key == "type" || std::find(kEvalKeys.begin(), kEvalKeys.end(), key) != kEvalKeys.end()) continue;
    body[kv.first] = kv.second;
  }
  const std::string file = file_of(loc);
  Recipe recipe;
  recipe.name = "prune";
  recipe.path = file;
  recipe.stages.push_back(RecipeStage{"prune", loc, parse_prune_stage(body, file, "step 'prune'")});
  CompressOptions o;
  const std::string eval = parse_eval_keys(p, "prune", loc, o);
  // The step's mapping, as written, identifies the job.
  YAML::Emitter e;
  e << YAML::Flow << body;
  return std::make_unique<RecipeStep>(std::move(recipe), std::move(o), "prune(" + std::string(e.c_str()) + "," + eval + ")");
}

}  // namespace

void register_compress_steps(StepRegistry& r) {
  r.add("compress", "the Deep Compression pipeline of a recipe (prune, fine-tune, cluster, quantize, encode), saved as .xnn",
        make_compress_step);
  r.add("prune", "unstructured or channel pruning with optional fine-tuning (a recipe's prune stage), saved as .xnn",
        make_prune_step);
}

}  // namespace xnn::compress_recipe
