#include "harness/compress_recipe/compress_record.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/sha256.h"
#include "harness/util/json.h"

namespace xnn::compress_recipe {
namespace {

namespace fs = std::filesystem;

constexpr char kExperiment[] = "compress";
constexpr char kTarget[] = "none";

std::string file_sha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return sha256_hex(s.str());
}

}  // namespace

CompressRecorder::CompressRecorder(Store& store, const CompressInvocation& inv) : store_(store), inv_(inv) {
  store_.ensure_experiment(kExperiment, inv.recipe_path);
  bool have_target = false;
  for (const TargetRecord& t : store_.list_targets()) have_target = have_target || t.name == kTarget;
  if (!have_target) store_.ensure_target(TargetRecord{0, kTarget, "none", false, "{\"measures\": \"size and top-1 only\"}"});
  RunRecord run;
  run.experiment = kExperiment;
  run.config_path = inv.recipe_path;
  run.config_text = inv.recipe_text;
  run.config_hash = sha256_hex(inv.recipe_text).substr(0, 16);
  run.git_commit = inv.git_commit;
  run.command = inv.command;
  run.environment_id = store_.ensure_environment(Environment::capture(inv.git_commit));
  run_id_ = store_.create_run(run);
  json::Writer spec;
  spec.begin_object()
      .field("model_sha256", file_sha256(inv.model_path))
      .field("recipe_sha256", sha256_hex(inv.recipe_text))
      .field("options", inv.options_json)
      .end_object();
  JobRecord job;
  job.id = sha256_hex(spec.str()).substr(0, 20);
  job.run_id = run_id_;
  job.experiment = kExperiment;
  job.model = fs::path(inv.model_path).filename().string();
  job.variant = inv.recipe_name;
  job.target = kTarget;
  job.spec_json = spec.str();
  job_id_ = job.id;
  store_.start_job(job);
}

void CompressRecorder::finish(const CompressResult& r) {
  JobResult jr;
  jr.status = job_status::kDone;
  for (const StageResult& s : r.stages) {
    const std::string p = "stage." + std::to_string(s.index) + "." + s.stage + ".";
    jr.metrics.push_back({p + "size_bytes", static_cast<double>(s.size_bytes), "bytes"});
    jr.metrics.push_back({p + "top1", s.top1, "ratio"});
    jr.metrics.push_back({p + "sparsity", s.sparsity, "ratio"});
  }
  jr.metrics.push_back({"fp32_size_bytes", static_cast<double>(r.fp32_bytes), "bytes"});
  jr.metrics.push_back({"size_bytes", static_cast<double>(r.final_bytes), "bytes"});
  jr.metrics.push_back({"compression_ratio", r.ratio, "ratio"});
  if (!r.stages.empty()) {
    jr.metrics.push_back({"top1", r.stages.back().top1, "ratio"});
    jr.metrics.push_back({"top1_change", r.stages.back().top1 - r.stages.front().top1, "ratio"});
  }
  if (r.coded_weight_bytes_after > 0) {
    jr.metrics.push_back({"coded_weight_bytes", static_cast<double>(r.coded_weight_bytes_after), "bytes"});
    jr.metrics.push_back({"weights_ratio", static_cast<double>(r.coded_weight_bytes_before) / r.coded_weight_bytes_after, "ratio"});
  }
  if (fs::exists(inv_.output_path)) {
    jr.artifacts.push_back(ArtifactRecord{"model", fs::absolute(inv_.output_path).string(), file_sha256(inv_.output_path),
                                          static_cast<int64_t>(fs::file_size(inv_.output_path))});
  }
  store_.finish_job(job_id_, jr);
  store_.finish_run(run_id_, run_status::kFinished);
}

void CompressRecorder::fail(const std::string& error) {
  JobResult jr;
  jr.status = job_status::kFailed;
  jr.error = error;
  store_.finish_job(job_id_, jr);
  store_.finish_run(run_id_, run_status::kFailed);
}

}  // namespace xnn::compress_recipe
