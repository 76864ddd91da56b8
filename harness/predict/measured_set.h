// Sets of generated architectures measured on a target and recorded in the results store,
// one job per model in an experiment such as "calibration:cpu-t1" or "holdout:cpu-t1",
// exactly as the runner records jobs (so `xnn-lab list/show/report` see them). A model the
// store already holds a DONE job for -- same model bytes, target, threads and measurement
// spec -- is not measured again.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "harness/arch/mobilenet_space.h"
#include "harness/measure/latency.h"
#include "harness/store/store.h"
#include "harness/targets/target.h"

namespace xnn::predict {

struct MeasuredModel {
  std::string job_id;
  std::string encoding;     // the architecture (Arch::to_string); the job's model name
  std::string model_path;   // the measured file (content-addressed: never rewritten)
  std::string model_sha256;
  double median_ms = 0;     // end-to-end median latency
  std::vector<OpProfileRow> ops;
  bool reused = false;      // found in the store, not measured now
};

struct MeasureSetOptions {
  std::string experiment;   // e.g. "calibration:cpu-t1"
  std::string variant;      // the space's name (file stem), so two spaces never share a job
  LatencySpec spec{3, 15, 0.2, 100000};
  // Each model is measured this many times, in passes over the whole set (so its attempts are
  // spread in time), and the attempt with the lowest median is recorded, with each op's lowest
  // profiled time over the attempts: on a shared machine other processes only ever slow a run
  // down, so the quietest attempt is the closest to the latency of the model alone.
  int passes = 1;
  std::string git_commit;
  std::string command_line;
  std::function<void(const std::string&)> log;  // progress lines (may be empty)
};

// Measures every model of `set` on `target` that the store does not hold yet (options.passes
// times each), within one new run of the experiment (reused jobs are linked to it as reused). Each measured file is first
// hard-linked (copied where links fail) to MODELS_DIR/<sha256 prefix>.xnn so the path recorded
// with the job keeps its bytes when the generator later rewrites arch_<i>.xnn. Returns the
// set's results in order. A model that fails to measure fails the call (after recording the
// job as FAILED and the run as FAILED).
std::vector<MeasuredModel> measure_arch_set(Store& store, Target& target, const std::vector<arch::GeneratedArch>& set,
                                            const std::string& models_dir, const MeasureSetOptions& options);

// Every DONE job of `experiment` on target `target_name` in the store (newest per model), with
// its median latency, per-op profile and model file.
std::vector<MeasuredModel> load_measured_set(Store& store, const std::string& experiment, const std::string& target_name);

}  // namespace xnn::predict
