// Refitting a simulated device profile from real measurements: the calibration set's per-op
// profiles (what `xnn-lab calibrate` measured on this machine) feed the simulator's efficiency
// fit (harness/sim/efficiency_fit.h), and the refitted profile is written as a device YAML that
// `sim:<file stem>` can load (via $XNN_DEVICES_DIR).
#pragma once
#include <string>
#include <vector>

#include "harness/predict/measured_set.h"
#include "harness/sim/efficiency_fit.h"

namespace xnn::predict {

// One sim::MeasuredOp per profiled op with a positive time. MACs and bytes are derived from the
// stored shapes (as the predictor's features are), MAC-free ops counting one op per output
// element. Throws naming the node for malformed shapes text.
std::vector<sim::MeasuredOp> measured_ops(const std::vector<MeasuredModel>& measured);

// Loads profile `profile_name` (find_device_profile), refits its curves to `measured` (which ran
// with `threads`), writes it to `out_path` with a comment naming the source, returns the fit.
sim::FitResult refit_device_profile(const std::vector<MeasuredModel>& measured, const std::string& profile_name,
                                    int threads, const std::string& out_path);

}  // namespace xnn::predict
