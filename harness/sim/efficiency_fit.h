// Refits a profile's efficiency curves to measured per-op times (e.g. the per-op profiles of
// the local CPU that runs store in SQLite), so the simulator learns from real measurements.
//
// The model is the simulator's own roofline (cost_model.h, kernel_time): the memory curve's
// (max, half) minimise the squared error of log(predicted time) - log(measured time) over all
// ops; then, for each op class with at least two measurements, its compute curve
// eff(work) = max * work / (work + half) does the same over that class's ops; a few such rounds.
// The memory curve goes first because the two can trade off on memory-bound ops (a slow
// compute curve explains an elementwise op as well as bandwidth does); starting from bandwidth
// keeps memory-bound classes memory-bound, as they are on real hardware. Each 2-parameter fit is
// a coarse grid search followed by Nelder-Mead, in (logit max, log half) so both stay valid.
// Dispatch overhead and peaks are not refitted: they are the profile's documented figures.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "harness/sim/device_profile.h"

namespace xnn::sim {

struct MeasuredOp {
  std::string op_type;      // ONNX op type (engine-fused FusedConv/FusedGemm allowed)
  double macs = 0;          // engine cost model MACs (one op per element for non-MAC ops)
  double bytes = 0;         // bytes read + written
  double time_ms = 0;       // measured (median)
  std::string kernel;       // optional: the kernel that ran, to tell depthwise convs apart
  std::string dtype = "fp32";
};

// The op class of a measurement: Conv/ConvTranspose whose kernel name says depthwise ("dwconv")
// -> depthwise; otherwise by op type as classify_op does (op_support.h).
OpClass measured_op_class(const MeasuredOp& op);

struct FitOptions {
  int threads = 0;  // cores the measurements used on a CPU profile (0: all)
  int rounds = 4;   // alternations between the class curves and the memory curve
};

struct FitResult {
  DeviceProfile profile;                 // the input profile with refitted curves
  double rms_log_error_before = 0;       // sqrt(mean((ln pred - ln measured)^2)) over the ops used
  double rms_log_error_after = 0;
  double median_abs_pct_error_before = 0;  // median |pred/measured - 1| * 100
  double median_abs_pct_error_after = 0;
  int ops_used = 0;                      // measurements with time > 0
  std::map<std::string, int> ops_per_class;  // class name -> count; classes with < 2 keep their curve
};

// Throws Error when no measurement has a positive time.
FitResult fit_efficiency_curves(const DeviceProfile& profile, const std::vector<MeasuredOp>& ops,
                                const FitOptions& options = {});

}  // namespace xnn::sim
