// Resize (opset 11-18 form: X, roi, scales, sizes) and Upsample (opset 7-9). Both reduce to
// one ResizeSpec -- output shape, per-axis scale, coordinate transform, rounding -- and share
// inference and kernels. Nearest is a pure gather (any dtype, byte copies); linear and cubic
// are separable, so N-linear / N-cubic interpolation is one 1-D pass per resized axis.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "engine/ops/tensor_ops.h"

namespace xnn {
namespace {

enum class InterpMode { kNearest, kLinear, kCubic };
enum class CoordMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNN,
  kTfCropAndResize
};
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeSpec {
  InterpMode mode = InterpMode::kNearest;
  CoordMode coord = CoordMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  float extrapolation_value = 0.0f;  // tf_crop_and_resize: value for points outside the input
  double cubic_coeff_a = -0.75;      // cubic: the kernel's A
  bool exclude_outside = false;      // cubic: taps outside the input get weight 0, the rest renormalised
  Shape in, out;
  // Per axis: the scale the coordinate transform divides by, and the "resized length" it
  // uses. With `scales` given the length is in * scale, not rounded (as in the ONNX
  // reference); with `sizes` it is the output size and scale = out / in.
  std::vector<double> scale, resized_length;
  std::vector<double> roi_start, roi_end;  // normalised crop box, tf_crop_and_resize only
};

[[noreturn]] void unsupported(const Node& node, const std::string& msg) {
  throw UnsupportedError(node.describe() + ": " + msg);
}

InterpMode parse_mode(const Node& node) {
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "nearest") return InterpMode::kNearest;
  if (mode == "linear" || mode == "bilinear") return InterpMode::kLinear;  // "bilinear": Upsample-1 name
  if (mode == "cubic") return InterpMode::kCubic;
  fail_node(node, "unknown mode '" + mode + "' (expected nearest, linear or cubic)");
}

CoordMode parse_coord_mode(const Node& node) {
  static const std::pair<const char*, CoordMode> kNames[] = {
      {"half_pixel", CoordMode::kHalfPixel},
      {"half_pixel_symmetric", CoordMode::kHalfPixelSymmetric},
      {"pytorch_half_pixel", CoordMode::kPytorchHalfPixel},
      {"align_corners", CoordMode::kAlignCorners},
      {"asymmetric", CoordMode::kAsymmetric},
      {"tf_half_pixel_for_nn", CoordMode::kTfHalfPixelForNN},
      {"tf_crop_and_resize", CoordMode::kTfCropAndResize},
  };
  const std::string m = node.attr_string("coordinate_transformation_mode", "half_pixel");
  for (const auto& [name, mode] : kNames) {
    if (m == name) return mode;
  }
  fail_node(node, "unknown coordinate_transformation_mode '" + m + "'");
}

NearestMode parse_nearest_mode(const Node& node) {
  const std::string m = node.attr_string("nearest_mode", "round_prefer_floor");
  if (m == "round_prefer_floor") return NearestMode::kRoundPreferFloor;
  if (m == "round_prefer_ceil") return NearestMode::kRoundPreferCeil;
  if (m == "floor") return NearestMode::kFloor;
  if (m == "ceil") return NearestMode::kCeil;
  fail_node(node, "unknown nearest_mode '" + m + "' (expected round_prefer_floor, round_prefer_ceil, floor or ceil)");
}

// Output dim floor(in * scale), failing instead of overflowing on absurd scales.
int64_t scaled_dim(const Node& node, int64_t in, double scale) {
  const double out = std::floor(static_cast<double>(in) * scale);
  if (!(out < 9.0e15)) fail_node(node, "scale " + std::to_string(scale) + " gives an output dim that is too large");
  return static_cast<int64_t>(out);
}

// Checks the shape and that every non-empty output axis has input to sample from.
void finish_spec(const Node& node, ResizeSpec& s) {
  check_numel_fits(s.out, node);
  for (size_t d = 0; d < s.in.size(); ++d) {
    if (s.in[d] == 0 && s.out[d] > 0) {
      fail_node(node, "cannot resize axis " + std::to_string(d) + " of size 0 to " + std::to_string(s.out[d]));
    }
  }
}

bool uses_roi(const Node& node) {
  return node.attr_string("coordinate_transformation_mode", "") == "tf_crop_and_resize";
}

ResizeSpec plan_resize(const Node& node, const Shape& in, const Tensor* roi, const Tensor* scales,
                       const Tensor* sizes) {
  ResizeSpec s;
  s.mode = parse_mode(node);
  s.coord = parse_coord_mode(node);
  s.nearest = parse_nearest_mode(node);
  s.extrapolation_value = node.attr_float("extrapolation_value", 0.0f);
  s.cubic_coeff_a = node.attr_float("cubic_coeff_a", -0.75f);
  s.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  if (node.attr_int("antialias", 0) != 0) unsupported(node, "antialias=1 is not implemented");
  const int rank = static_cast<int>(in.size());
  // Opset 18 `axes`: the axes that roi/scales/sizes describe; the others keep their size.
  std::vector<int> axes;
  if (node.has_attr("axes")) {
    axes = normalize_axes(node.attr_ints("axes"), rank, node);
  } else {
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  }
  // An empty tensor stands for "not given" (opset 11/12 require the scales input even with sizes).
  if (scales && scales->numel() == 0) scales = nullptr;
  if (sizes && sizes->numel() == 0) sizes = nullptr;
  if ((scales != nullptr) == (sizes != nullptr))
    fail_node(node, "needs exactly one of scales (input 2) and sizes (input 3)");

  s.in = in;
  s.out = in;
  s.scale.assign(in.size(), 1.0);
  s.resized_length.assign(in.begin(), in.end());
  if (scales) {
    if (!is_float(scales->dtype())) fail_node(node, "scales must be a float tensor");
    if (static_cast<size_t>(scales->numel()) != axes.size()) {
      fail_node(node, "scales has " + std::to_string(scales->numel()) + " entries for " + std::to_string(axes.size()) +
                          " axes");
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      const size_t d = static_cast<size_t>(axes[k]);
      const double scale = scales->scalar_as_double(static_cast<int64_t>(k));
      if (!(scale > 0) || !std::isfinite(scale))
        fail_node(node, "scales must be positive, got " + std::to_string(scale));
      s.scale[d] = scale;
      s.resized_length[d] = static_cast<double>(in[d]) * scale;
      s.out[d] = scaled_dim(node, in[d], scale);
    }
  } else {
    const std::vector<int64_t> sz = int_values(node, *sizes, "sizes");
    if (sz.size() != axes.size()) {
      fail_node(node,
                "sizes has " + std::to_string(sz.size()) + " entries for " + std::to_string(axes.size()) + " axes");
    }
    for (int64_t v : sz) {
      if (v < 0) fail_node(node, "sizes " + shape_str(sz) + " has a negative entry");
    }
    const std::string policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      for (size_t k = 0; k < axes.size(); ++k) {
        const size_t d = static_cast<size_t>(axes[k]);
        s.out[d] = sz[k];
        s.resized_length[d] = static_cast<double>(sz[k]);
        s.scale[d] = in[d] > 0 ? static_cast<double>(sz[k]) / static_cast<double>(in[d]) : 1.0;
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      // One scale for all listed axes: the largest that fits in `sizes`, or the smallest that covers it.
      double common = policy == "not_larger" ? std::numeric_limits<double>::infinity() : 0.0;
      for (size_t k = 0; k < axes.size(); ++k) {
        const int64_t dim = in[static_cast<size_t>(axes[k])];
        if (dim == 0) continue;
        const double r = static_cast<double>(sz[k]) / static_cast<double>(dim);
        common = policy == "not_larger" ? std::min(common, r) : std::max(common, r);
      }
      if (!std::isfinite(common) || common <= 0) fail_node(node, "sizes " + shape_str(sz) + " give no usable scale");
      for (int a : axes) {
        const size_t d = static_cast<size_t>(a);
        s.scale[d] = common;
        s.out[d] = static_cast<int64_t>(std::nearbyint(common * static_cast<double>(in[d])));
        s.resized_length[d] = static_cast<double>(s.out[d]);
      }
    } else {
      fail_node(node,
                "unknown keep_aspect_ratio_policy '" + policy + "' (expected stretch, not_larger or not_smaller)");
    }
  }

  s.roi_start.assign(in.size(), 0.0);
  s.roi_end.assign(in.size(), 1.0);
  if (s.coord == CoordMode::kTfCropAndResize && roi && roi->numel() > 0) {
    if (static_cast<size_t>(roi->numel()) != 2 * axes.size()) {
      fail_node(node, "roi has " + std::to_string(roi->numel()) + " entries, expected 2 per axis (" +
                          std::to_string(2 * axes.size()) + ")");
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      s.roi_start[static_cast<size_t>(axes[k])] = roi->scalar_as_double(static_cast<int64_t>(k));
      s.roi_end[static_cast<size_t>(axes[k])] = roi->scalar_as_double(static_cast<int64_t>(k + axes.size()));
    }
  }
  finish_spec(node, s);
  return s;
}

// Upsample: scales from input 1 (opset 9) or the `scales` attribute (opset 7); output dims
// floor(in * scale); asymmetric coordinates, nearest rounds down.
ResizeSpec plan_upsample(const Node& node, const Shape& in, const Tensor* scales_input) {
  ResizeSpec s;
  s.mode = parse_mode(node);
  if (s.mode == InterpMode::kCubic) unsupported(node, "Upsample with mode 'cubic' is not implemented");
  s.coord = CoordMode::kAsymmetric;
  s.nearest = NearestMode::kFloor;
  std::vector<double> scales;
  if (scales_input) {
    if (!is_float(scales_input->dtype())) fail_node(node, "scales must be a float tensor");
    for (int64_t k = 0; k < scales_input->numel(); ++k) scales.push_back(scales_input->scalar_as_double(k));
  } else {
    if (!node.has_attr("scales")) fail_node(node, "needs scales (input 1 from opset 9, attribute before)");
    for (float v : node.attr_floats("scales")) scales.push_back(v);
  }
  if (scales.size() != in.size()) {
    fail_node(node, "scales has " + std::to_string(scales.size()) + " entries for an input of rank " +
                        std::to_string(in.size()));
  }
  s.in = in;
  s.out = in;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!(scales[d] > 0) || !std::isfinite(scales[d])) {
      fail_node(node, "scales must be positive, got " + std::to_string(scales[d]));
    }
    s.out[d] = scaled_dim(node, in[d], scales[d]);
  }
  s.scale = scales;
  s.resized_length.resize(in.size());
  for (size_t d = 0; d < in.size(); ++d) s.resized_length[d] = static_cast<double>(in[d]) * scales[d];
  s.roi_start.assign(in.size(), 0.0);
  s.roi_end.assign(in.size(), 1.0);
  finish_spec(node, s);
  return s;
}

// ---- coordinate transform ----------------------------------------------------------------
// The input coordinate that output index x along axis d samples (ONNX Resize formulas).
double source_coordinate(const ResizeSpec& s, size_t d, int64_t x_out) {
  const double x = static_cast<double>(x_out);
  const double scale = s.scale[d], in = static_cast<double>(s.in[d]), length = s.resized_length[d];
  switch (s.coord) {
    case CoordMode::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case CoordMode::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(s.out[d]) / length;
      const double offset = in / 2 * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    case CoordMode::kPytorchHalfPixel:
      return length > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CoordMode::kAlignCorners:
      return length == 1 ? 0.0 : x * (in - 1) / (length - 1);
    case CoordMode::kAsymmetric:
      return x / scale;
    case CoordMode::kTfHalfPixelForNN:
      return (x + 0.5) / scale;
    case CoordMode::kTfCropAndResize: {
      const double start = s.roi_start[d], end = s.roi_end[d];
      return length > 1 ? start * (in - 1) + x * (end - start) * (in - 1) / (length - 1)
                        : 0.5 * (start + end) * (in - 1);
    }
  }
  return 0.0;
}

// tf_crop_and_resize samples outside the input (or at a NaN coordinate, from a NaN roi)
// give the extrapolation value.
bool outside_input(const ResizeSpec& s, size_t d, double x) {
  return s.coord == CoordMode::kTfCropAndResize && !(x >= 0 && x <= static_cast<double>(s.in[d] - 1));
}

int64_t round_nearest(NearestMode mode, double x) {
  const double lower = std::floor(x);
  const bool halfway = x - lower == 0.5;
  switch (mode) {
    case NearestMode::kRoundPreferFloor:
      return static_cast<int64_t>(halfway ? lower : std::round(x));
    case NearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(halfway ? lower + 1 : std::round(x));
    case NearestMode::kFloor:
      return static_cast<int64_t>(lower);
    case NearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(x));
  }
  return 0;
}

// Per axis, the input index each output index copies (-1: extrapolation value).
std::vector<std::vector<int64_t>> nearest_maps(const ResizeSpec& s) {
  std::vector<std::vector<int64_t>> maps(s.in.size());
  for (size_t d = 0; d < s.in.size(); ++d) {
    for (int64_t j = 0; j < s.out[d]; ++j) {
      // Coordinates beyond the edges take the edge element; clamping first keeps the rounding
      // in int64 range.
      const double x = source_coordinate(s, d, j);
      const double clamped = std::clamp(x, -1.0, static_cast<double>(s.in[d]));
      maps[d].push_back(
          outside_input(s, d, x) ? -1 : std::clamp<int64_t>(round_nearest(s.nearest, clamped), 0, s.in[d] - 1));
    }
  }
  return maps;
}

// One output index of a 1-D linear pass: in[lo] * (1 - w_hi) + in[hi] * w_hi.
struct LinearTap {
  int64_t lo = 0, hi = 0;
  double w_hi = 0;
  bool outside = false;
};

std::vector<LinearTap> linear_taps(const ResizeSpec& s, size_t d) {
  std::vector<LinearTap> taps(static_cast<size_t>(s.out[d]));
  const int64_t last = s.in[d] - 1;
  for (int64_t j = 0; j < s.out[d]; ++j) {
    const double x = source_coordinate(s, d, j);
    LinearTap& t = taps[static_cast<size_t>(j)];
    t.outside = outside_input(s, d, x);
    if (t.outside) continue;
    // Neighbours beyond the edges repeat the edge element.
    const double lower = std::floor(x);
    const int64_t lo = static_cast<int64_t>(std::clamp(lower, -1.0, static_cast<double>(last) + 1));
    t.lo = std::clamp<int64_t>(lo, 0, last);
    t.hi = std::clamp<int64_t>(lo + 1, 0, last);
    t.w_hi = x - lower;
  }
  return taps;
}

bool is_identity(const std::vector<LinearTap>& taps, int64_t in_len) {
  if (static_cast<int64_t>(taps.size()) != in_len) return false;
  for (size_t j = 0; j < taps.size(); ++j) {
    const LinearTap& t = taps[j];
    if (t.outside || t.lo != static_cast<int64_t>(j) || t.w_hi != 0) return false;
  }
  return true;
}

// Writes interpolated values to `y`; integers round to nearest and saturate, rather than
// truncating interpolated values.
template <typename T, typename C>
void store_interpolated(const std::vector<C>& cur, Tensor& y) {
  T* py = y.data<T>();
  for (size_t i = 0; i < cur.size(); ++i) {
    if constexpr (std::is_integral_v<T>) {
      const double v = std::nearbyint(static_cast<double>(cur[i]));
      py[i] = v <= static_cast<double>(std::numeric_limits<T>::lowest()) ? std::numeric_limits<T>::lowest()
              : v >= static_cast<double>(std::numeric_limits<T>::max())  ? std::numeric_limits<T>::max()
                                                                         : static_cast<T>(v);
    } else if constexpr (std::is_same_v<T, Half>) {
      py[i] = static_cast<T>(static_cast<float>(cur[i]));
    } else {
      py[i] = static_cast<T>(cur[i]);
    }
  }
}

// Linear resize in compute type C (float for f32/f16, double otherwise): one pass per axis
// that changes, innermost first, each interpolating along that axis only.
template <typename T>
void resize_linear(const ResizeSpec& s, const Tensor& x, Tensor& y) {
  using C = std::conditional_t<std::is_same_v<T, float> || std::is_same_v<T, Half>, float, double>;
  const T* px = x.data<T>();
  std::vector<C> cur(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < cur.size(); ++i) cur[i] = static_cast<C>(px[i]);
  Shape shape = s.in;
  for (size_t d = shape.size(); d-- > 0;) {
    const std::vector<LinearTap> taps = linear_taps(s, d);
    if (is_identity(taps, shape[d])) continue;
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < d; ++k) outer *= shape[k];
    for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    const int64_t in_len = shape[d], out_len = static_cast<int64_t>(taps.size());
    std::vector<C> next(static_cast<size_t>(outer * out_len * inner));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < out_len; ++j) {
        const LinearTap& t = taps[static_cast<size_t>(j)];
        C* dst = next.data() + (o * out_len + j) * inner;
        if (t.outside) {
          std::fill(dst, dst + inner, static_cast<C>(s.extrapolation_value));
          continue;
        }
        const C* lo = cur.data() + (o * in_len + t.lo) * inner;
        const C* hi = cur.data() + (o * in_len + t.hi) * inner;
        const C w_hi = static_cast<C>(t.w_hi), w_lo = static_cast<C>(1.0 - t.w_hi);
        for (int64_t k = 0; k < inner; ++k) dst[k] = w_lo * lo[k] + w_hi * hi[k];
      }
    }
    cur = std::move(next);
    shape[d] = out_len;
  }
  store_interpolated<T>(cur, y);
}

// ---- cubic -------------------------------------------------------------------------------
// One output index of a 1-D cubic pass: sum_k in[idx[k]] * w[k] over four taps.
struct CubicTap {
  std::array<int64_t, 4> idx{};
  std::array<double, 4> w{};
  bool outside = false;
};

// The ONNX reference (onnx.reference.ops.op_resize): the taps are the four input positions
// nearest x (ties to the lower), chosen on the input edge-padded by two on each side, so the
// window is clamped to [-2, len + 1]; positions beyond the input read the edge element. The
// weights are the cubic kernel at distance `ratio` = x - floor(x), with ratio = 1 (not 0) for
// integral x, so the taps are x-2..x+1 there. exclude_outside zeroes the weights of taps
// outside [0, len) and renormalises the rest.
std::vector<CubicTap> cubic_taps(const ResizeSpec& s, size_t d) {
  std::vector<CubicTap> taps(static_cast<size_t>(s.out[d]));
  const int64_t len = s.in[d];
  const double a = s.cubic_coeff_a;
  for (int64_t j = 0; j < s.out[d]; ++j) {
    const double x = source_coordinate(s, d, j);
    CubicTap& t = taps[static_cast<size_t>(j)];
    t.outside = outside_input(s, d, x) || std::isnan(x);
    if (t.outside) continue;
    const double lower = std::floor(x);
    const double ratio = x == lower ? 1.0 : x - lower;
    const double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
    t.w = {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a, ((a + 2) * ratio - (a + 3)) * ratio * ratio + 1,
           ((a + 2) * q - (a + 3)) * q * q + 1, ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a};
    const double first = std::clamp(x == lower ? x - 2 : lower - 1, -2.0, static_cast<double>(len - 2));
    const int64_t start = static_cast<int64_t>(first);
    double sum = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int64_t i = start + static_cast<int64_t>(k);
      if (s.exclude_outside && (i < 0 || i >= len)) t.w[k] = 0;
      sum += t.w[k];
      t.idx[k] = std::clamp<int64_t>(i, 0, len - 1);
    }
    if (s.exclude_outside) {
      for (double& w : t.w) w /= sum;
    }
  }
  return taps;
}

bool is_identity(const std::vector<CubicTap>& taps, int64_t in_len) {
  if (static_cast<int64_t>(taps.size()) != in_len) return false;
  for (size_t j = 0; j < taps.size(); ++j) {
    const CubicTap& t = taps[j];
    if (t.outside) return false;
    // Every weight on input j, summing to exactly 1: the pass would copy.
    double sum = 0;
    for (size_t k = 0; k < 4; ++k) {
      if (t.idx[k] == static_cast<int64_t>(j)) {
        sum += t.w[k];
      } else if (t.w[k] != 0) {
        return false;
      }
    }
    if (sum != 1.0) return false;
  }
  return true;
}

// Cubic resize, computed in double (as the ONNX reference does): one pass per axis that
// changes, innermost first.
template <typename T>
void resize_cubic(const ResizeSpec& s, const Tensor& x, Tensor& y) {
  const T* px = x.data<T>();
  std::vector<double> cur(static_cast<size_t>(x.numel()));
  using L = std::conditional_t<std::is_same_v<T, Half>, float, T>;  // Half converts via float
  for (size_t i = 0; i < cur.size(); ++i) cur[i] = static_cast<double>(static_cast<L>(px[i]));
  Shape shape = s.in;
  for (size_t d = shape.size(); d-- > 0;) {
    const std::vector<CubicTap> taps = cubic_taps(s, d);
    if (is_identity(taps, shape[d])) continue;
    int64_t outer = 1, inner = 1;
    for (size_t k = 0; k < d; ++k) outer *= shape[k];
    for (size_t k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    const int64_t in_len = shape[d], out_len = static_cast<int64_t>(taps.size());
    std::vector<double> next(static_cast<size_t>(outer * out_len * inner));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < out_len; ++j) {
        const CubicTap& t = taps[static_cast<size_t>(j)];
        double* dst = next.data() + (o * out_len + j) * inner;
        if (t.outside) {
          std::fill(dst, dst + inner, static_cast<double>(s.extrapolation_value));
          continue;
        }
        const double* src[4];
        for (size_t k = 0; k < 4; ++k) src[k] = cur.data() + (o * in_len + t.idx[k]) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          dst[i] = t.w[0] * src[0][i] + t.w[1] * src[1][i] + t.w[2] * src[2][i] + t.w[3] * src[3][i];
        }
      }
    }
    cur = std::move(next);
    shape[d] = out_len;
  }
  store_interpolated<T>(cur, y);
}

void run_resize(const KernelContext& ctx, const ResizeSpec& s) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;  // per-axis tables of an empty output could still be huge along one axis
  if (s.mode == InterpMode::kNearest) {
    // The extrapolation value as one element of the input's dtype.
    Tensor fill(x.dtype(), {});
    convert_tensor(Tensor::scalar<float>(s.extrapolation_value), fill);
    gather_by_axis_maps(y.raw(), x.raw(), dtype_size(x.dtype()), x.shape(), nearest_maps(s), fill.raw());
    return;
  }
  const bool cubic = s.mode == InterpMode::kCubic;
  if (x.dtype() == DType::kBool) ctx.unsupported(cubic ? "cubic resize of bool tensors" : "linear resize of bool tensors");
  dispatch_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      if (cubic) {
        resize_cubic<T>(s, x, y);
      } else {
        resize_linear<T>(s, x, y);
      }
    }
  });
}

// ---- Resize / Upsample declarations ------------------------------------------------------
const Tensor* roi_value(const InferContext& ctx) {
  return uses_roi(ctx.node()) ? optional_input_value(ctx, 1) : nullptr;
}
const Tensor* roi_value(const KernelContext& ctx) { return uses_roi(ctx.node()) ? optional_input(ctx, 1) : nullptr; }

void infer_resize(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  const ResizeSpec s =
      plan_resize(ctx.node(), x.shape, roi_value(ctx), optional_input_value(ctx, 2), optional_input_value(ctx, 3));
  ctx.set_output(0, x.dtype, s.out);
}

void resize_kernel(KernelContext& ctx) {
  run_resize(ctx, plan_resize(ctx.node(), ctx.input(0).shape(), roi_value(ctx), optional_input(ctx, 2),
                              optional_input(ctx, 3)));
}

void infer_upsample(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  ctx.set_output(0, x.dtype, plan_upsample(ctx.node(), x.shape, optional_input_value(ctx, 1)).out);
}

void upsample_kernel(KernelContext& ctx) {
  run_resize(ctx, plan_upsample(ctx.node(), ctx.input(0).shape(), optional_input(ctx, 1)));
}

// Nearest only moves data. Linear reads 2 neighbours per interpolated axis: 2^k MACs per
// output element when k axes change size; cubic reads 4 (4^k).
OpCost resize_cost(const Node& node, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs) {
  OpCost c = data_movement_cost(node, inputs, outputs);
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "linear" || mode == "bilinear" || mode == "cubic") {
    const double per_axis = mode == "cubic" ? 4 : 2;
    double taps = 1;
    const Shape& in = inputs[0].shape;
    const Shape& out = outputs[0].shape;
    for (size_t d = 0; d < in.size() && d < out.size(); ++d) taps *= in[d] == out[d] ? 1 : per_axis;
    c.macs = taps * static_cast<double>(shape_numel(out));
  }
  return c;
}

}  // namespace

void register_resize_ops(OpRegistry& r) {
  OpSchema resize;
  resize.type = "Resize";
  resize.min_inputs = 1;
  resize.max_inputs = 4;
  resize.infer = infer_resize;
  resize.cost = resize_cost;
  resize.reference = resize_kernel;
  resize.doc = "Nearest, (N-)linear or (N-)cubic resize by scales or sizes, ONNX coordinate transforms.";
  r.add(std::move(resize));

  OpSchema upsample;
  upsample.type = "Upsample";
  upsample.min_inputs = 1;
  upsample.max_inputs = 2;
  upsample.infer = infer_upsample;
  upsample.cost = resize_cost;
  upsample.reference = upsample_kernel;
  upsample.doc = "Opset 7-9 upsampling (nearest/linear, asymmetric), run as Resize.";
  r.add(std::move(upsample));
}

}  // namespace xnn
