// Runs a compression recipe (recipe.h) on a model: its stages in order, each followed by top-1
// on the Fashion-MNIST test split (or its first eval_limit images) and the size the model would
// have if saved at that point. Shared by `xnn-lab compress` and the `compress` / `prune`
// experiment steps.
//
// What size_bytes means, stage by stage: the bytes of the .xnn file save_xnn would write for
// the model after the stage (serialize_xnn) —
//   baseline, prune, finetune, cluster: dense float32 .xnn (pruned zeros and shared centroid
//     values are still stored as 4-byte floats, so these stay at the fp32 size; channel pruning,
//     which removes channels, makes it smaller);
//   quantize: the int8 .xnn (int8 weights, scales, zero points);
//   encode: the coded .xnn (codebook + entropy-coded indices for the coded weights; biases,
//     small tensors and the graph dense) — the final file.
// The overall ratio is the baseline's dense fp32 .xnn over the last stage's size.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "harness/compress_recipe/recipe.h"
#include "harness/data/fashion_mnist.h"

namespace xnn::compress_recipe {

struct CompressOptions {
  std::string dataset = "fashion-mnist";  // evaluation and int8 calibration data
  std::string data_dir = data::kDefaultFashionMnistDir;
  // x = (pixel * scale - mean) / std; the default is the normalisation of configs/train.
  data::Preprocess preprocess{1.0f / 255.0f, {0.2860f}, {0.3530f}};
  int64_t eval_limit = 0;  // test images for top-1 (0 = all 10000)
  int threads = 1;
  std::string work_dir;    // fine-tuning outputs and intermediate files
  std::function<void(const std::string&)> progress;
};

struct StageResult {
  int index = 0;            // 0: the baseline, then 1.. the recipe's stages
  std::string stage;        // baseline | prune | finetune | cluster | quantize | encode
  std::string detail;       // e.g. "unstructured gradual, 91.9% zeros"
  uint64_t size_bytes = 0;  // see the header comment
  double top1 = 0;          // fraction
  double sparsity = 0;      // zeros among the Conv / Gemm / MatMul weights (float models)
  double seconds = 0;
};

struct CompressResult {
  std::string recipe;
  std::vector<StageResult> stages;  // baseline first
  uint64_t fp32_bytes = 0;          // the baseline's dense .xnn
  uint64_t final_bytes = 0;
  double ratio = 0;                 // fp32_bytes / final_bytes
  // The coded weights only (the last encode stage): their fp32 bytes and coded bytes
  // (codebooks, coder tables and streams). 0 without an encode stage.
  uint64_t coded_weight_bytes_before = 0, coded_weight_bytes_after = 0;
  int64_t eval_samples = 0;
};

// Runs the recipe on `model` (replaced by the compressed model; channel pruning and int8
// quantisation make new models). The model keeps its Value::coding after an encode stage, so
// save_xnn writes the coded file.
CompressResult run_recipe(const Recipe& recipe, std::shared_ptr<Model>& model, const CompressOptions& options);

// {"recipe", "stages": [{"stage", "index", "detail", "size_bytes", "top1", "sparsity", "seconds"}...],
//  "fp32_bytes", "final_bytes", "ratio", "weights_ratio", "eval_samples"} plus `model` when given.
std::string to_json(const CompressResult& r, const std::string& model_path = "");
// One line per stage: size, ratio so far, top-1 and its change from the baseline.
std::string to_text(const CompressResult& r);

}  // namespace xnn::compress_recipe
