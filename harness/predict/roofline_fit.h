// The predictor's last resort for op kinds with too few calibration samples: a roofline-like
// linear model, time = c0 + c_macs * MACs + c_bytes * bytes, with non-negative coefficients,
// fitted by least squares on relative error (weights 1/time^2) so small ops count as much as
// large ones.
#pragma once
#include <vector>

namespace xnn::predict {

struct RooflineFit {
  double c0 = 0, c_macs = 0, c_bytes = 0;  // ms, ms per MAC, ms per byte

  double predict_ms(double macs, double bytes) const { return c0 + c_macs * macs + c_bytes * bytes; }

  // Samples: MACs, bytes and measured time (ms > 0) of each op. Throws xnn::Error when empty.
  static RooflineFit fit(const std::vector<double>& macs, const std::vector<double>& bytes,
                         const std::vector<double>& time_ms);
};

}  // namespace xnn::predict
