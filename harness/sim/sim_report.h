// A simulation's outcome as JSON and as a table, shared by `xnn-lab predict --target sim:<profile>`
// and anything else that shows a SimResult. The JSON carries every per-op field of SimOpRow, the
// partitions, the transfers and the time per device, so a reader can see where a model falls off
// the accelerator and why.
#pragma once
#include <string>

#include "harness/sim/cost_model.h"

namespace xnn::sim {

// {"device", "host", "latency_ms", "device_ms": {...}, "fell_back", "fused_kernels",
//  "transfer_count", "ops": [...], "partitions": [...], "transfers": [...]}
std::string sim_result_json(const SimResult& result);

// A human-readable summary: a header line, the time per device, then one row per op (name, op,
// device, dtype, bound, ms, %) and the reason next to every op that fell back.
std::string sim_result_table(const SimResult& result, const std::string& model_name);

}  // namespace xnn::sim
