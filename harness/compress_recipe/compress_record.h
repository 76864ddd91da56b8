// Records one `xnn-lab compress` invocation in the results store (harness/store): a run of the
// experiment "compress" holding one job (model = the input model's file name, variant = the
// recipe's name, target "none": nothing is timed), created RUNNING before the work starts and
// finished DONE with the per-stage metrics, or FAILED with the error.
//
// Metrics: stage.<i>.<stage>.size_bytes (bytes), stage.<i>.<stage>.top1 (ratio),
// stage.<i>.<stage>.sparsity (ratio), i = 0 for the baseline; then fp32_size_bytes,
// size_bytes (the final model), compression_ratio, top1, top1_change and, after an encode
// stage, coded_weight_bytes and weights_ratio. The output model is an artifact.
#pragma once
#include <string>

#include "harness/compress_recipe/compress_pipeline.h"
#include "harness/store/store.h"

namespace xnn::compress_recipe {

struct CompressInvocation {
  std::string model_path, recipe_path, recipe_name, recipe_text, output_path;
  std::string options_json = "{}";  // the evaluation options, part of the job's spec
  std::string command, git_commit;
};

class CompressRecorder {
 public:
  // Creates the run and starts its job.
  CompressRecorder(Store& store, const CompressInvocation& inv);
  void finish(const CompressResult& result);
  void fail(const std::string& error);
  const std::string& run_id() const { return run_id_; }
  const std::string& job_id() const { return job_id_; }

 private:
  Store& store_;
  CompressInvocation inv_;
  std::string run_id_, job_id_;
};

}  // namespace xnn::compress_recipe
