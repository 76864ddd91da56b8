// Running a single-input model over N samples stacked along dimension 0, a batch at a time:
// the loop calibration, sensitivity and accuracy measurements share.
#pragma once
#include <functional>
#include <vector>

#include "engine/runtime/session.h"

namespace xnn::quantize {

struct BatchOptions {
  int threads = 1;
  // Samples per run; 0: the model's batch dimension when it is fixed, else 64.
  int64_t batch = 0;
};

// The batch size used for `session` (the fixed batch dim wins; a different request is an Error).
int64_t batch_size_for(const Session& session, int64_t requested);

// Calls fn(begin, count, outputs) for consecutive batches of `samples` ([N, ...], the model's
// single float input). A model with a fixed batch dim b gets its last partial batch padded with
// copies of the last sample; outputs whose first dim is the batch are cut back to `count` rows.
// Errors name the model input and the expected shape.
void run_batched(Session& session, const Tensor& samples, int64_t batch,
                 const std::function<void(int64_t begin, int64_t count, const std::vector<Tensor>& outputs)>& fn);

// The model's first output for every sample, stacked: [N, ...].
Tensor run_first_output(const Model& model, const Tensor& samples, const BatchOptions& options);

}  // namespace xnn::quantize
