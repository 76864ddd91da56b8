#include "harness/predict/profile_refit.h"

#include <filesystem>

#include "engine/core/error.h"
#include "harness/predict/op_features.h"

namespace xnn::predict {

std::vector<sim::MeasuredOp> measured_ops(const std::vector<MeasuredModel>& measured) {
  std::vector<sim::MeasuredOp> ops;
  for (const MeasuredModel& m : measured) {
    for (const OpProfileRow& r : m.ops) {
      if (!(r.time_ms > 0)) continue;
      OpShapes shapes;
      try {
        shapes = parse_shapes_text(r.shapes);
      } catch (const Error& e) {
        throw Error("profile of node '" + r.node_name + "' (" + m.encoding + "): " + e.what());
      }
      const OpFeatures f = featurize_op(r.node_name, r.op_type, r.kernel, shapes);
      double out_elems = 0;
      for (const Shape& s : shapes.outputs) out_elems += static_cast<double>(shape_numel(s));
      sim::MeasuredOp op;
      op.op_type = r.op_type;
      op.kernel = r.kernel;
      op.macs = f.macs > 0 ? f.macs : out_elems;
      op.bytes = f.bytes;
      op.time_ms = r.time_ms;
      ops.push_back(std::move(op));
    }
  }
  return ops;
}

sim::FitResult refit_device_profile(const std::vector<MeasuredModel>& measured, const std::string& profile_name,
                                    int threads, const std::string& out_path) {
  const sim::DeviceProfile profile = sim::find_device_profile(profile_name);
  const std::vector<sim::MeasuredOp> ops = measured_ops(measured);
  if (ops.empty()) throw Error("refit of profile " + profile_name + ": no measured ops (calibrate first)");
  sim::FitOptions options;
  options.threads = threads;
  sim::FitResult fit = sim::fit_efficiency_curves(profile, ops, options);
  const std::filesystem::path out(out_path);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  fit.profile.name = out.stem().string();
  sim::write_device_profile(fit.profile, out_path,
                            "Refitted by xnn-lab calibrate from " + std::to_string(ops.size()) + " measured ops of " +
                                std::to_string(measured.size()) + " calibration models (" + std::to_string(threads) +
                                " thread(s)); base profile: " + profile_name);
  return fit;
}

}  // namespace xnn::predict
