// The `sim:<profile>` target kind: a device the lab does not have, modelled by a device profile
// (configs/devices/<profile>.yaml) and the simulator's cost model. Registered in the CLI's target
// registry, so `targets: [cpu, sim:adreno_660_gpu]` works in any experiment; results land in the
// same tables, with the target marked simulated.
//
// Latency is the cost model's prediction: deterministic, so one sample per measurement (no
// warm-up, no repetitions). Accuracy runs the model on the engine with the device's arithmetic
// emulated (fp16 rounding for fp16 devices); see sim_float_emulation.
#pragma once
#include <memory>
#include <string>

#include "engine/core/graph.h"
#include "engine/runtime/session.h"
#include "harness/sim/cost_model.h"
#include "harness/sim/device_profile.h"
#include "harness/targets/target.h"

namespace xnn::sim {

// Creates the target for settings.kind "sim:<profile>"; throws for an unknown profile (listing
// the known ones), for threads < 1 and for an affinity (meaningless for a simulated device).
std::unique_ptr<Target> make_sim_target(const TargetSettings& settings);

// The arithmetic a session must emulate to compute what `device` computes for `graph` (its
// simulation `sim` tells which nodes run on the device):
//   - fp16 device with at least one node on it -> kF16 (the whole session is rounded: fallback
//     nodes on the fp32 host are rounded too, a slight over-estimate of the error);
//   - int8 device -> kNone: nodes on it are the model's own int8 ops (quantised models carry
//     their int8 arithmetic); float nodes fell back to the host, which computes in fp32.
//     A float model with on_unsupported: error never gets here (simulate throws naming the ops);
//   - fp32 device or nothing on the device -> kNone.
FloatEmulation sim_float_emulation(const DeviceProfile& device, const SimResult& sim);

}  // namespace xnn::sim
