#include "engine/ops/op_helpers.h"

#include <algorithm>

namespace xnn {

OpSchema make_schema(const char* type, int min_inputs, int max_inputs, InferFn infer, KernelFn kernel, CostFn cost,
                     const char* doc) {
  OpSchema s;
  s.type = type;
  s.min_inputs = min_inputs;
  s.max_inputs = max_inputs;
  s.infer = std::move(infer);
  s.reference = std::move(kernel);
  s.cost = std::move(cost);
  s.doc = doc;
  return s;
}

int normalize_axis(int64_t axis, int rank, const Node& node) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max(rank, 1)) {
    throw Error(node.describe() + ": axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  }
  return static_cast<int>(a);
}

Shape broadcast_shapes(std::span<const Shape> shapes, const Node& node) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    const size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[off + i];
      const int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (const Shape& x : shapes) all += (all.empty() ? "" : " and ") + shape_str(x);
      throw Error(node.describe() + ": shapes " + all + " cannot be broadcast together");
    }
  }
  return out;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const Node& node) {
  const Shape both[2] = {a, b};
  return broadcast_shapes(std::span<const Shape>(both, 2), node);
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t s = 1;
  const size_t off = out.size() - in.size();
  for (size_t i = in.size(); i-- > 0;) {
    strides[off + i] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return strides;
}

BroadcastWalker::BroadcastWalker(const Shape& out, std::vector<std::vector<int64_t>> strides)
    : out_(out), strides_(std::move(strides)), offsets_(strides_.size(), 0), index_(out.size(), 0) {
  inner_ = out_.empty() ? 1 : out_.back();
  done_ = shape_numel(out_) == 0;
}

void BroadcastWalker::next_outer() {
  if (out_.size() <= 1) {
    done_ = true;
    return;
  }
  for (size_t d = out_.size() - 1; d-- > 0;) {
    ++index_[d];
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] += strides_[k][d];
    if (index_[d] < out_[d]) return;
    for (size_t k = 0; k < strides_.size(); ++k) offsets_[k] -= strides_[k][d] * out_[d];
    index_[d] = 0;
  }
  done_ = true;
}

WindowGeometry window_geometry(const Node& node, const Shape& in, const std::vector<int64_t>& kernel,
                               bool ceil_mode) {
  const size_t n = in.size();
  WindowGeometry g;
  g.kernel = kernel;
  if (kernel.size() != n) {
    throw Error(node.describe() + ": kernel has " + std::to_string(kernel.size()) + " dims, input has " +
                std::to_string(n) + " spatial dims");
  }
  g.strides = node.attr_ints("strides", std::vector<int64_t>(n, 1));
  g.dilations = node.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  if (g.strides.size() != n || g.dilations.size() != n || pads.size() != 2 * n) {
    throw Error(node.describe() + ": strides/dilations/pads do not match " + std::to_string(n) + " spatial dims");
  }
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] <= 0 || g.dilations[i] <= 0 || kernel[i] <= 0)
      throw Error(node.describe() + ": strides, dilations and kernel sizes must be positive");
    if (pads[i] < 0 || pads[i + n] < 0) throw Error(node.describe() + ": negative pads are not supported");
    // Bound the attributes so the window arithmetic below cannot overflow int64.
    constexpr int64_t kMaxGeometry = int64_t{1} << 24;
    if (g.strides[i] > kMaxGeometry || g.dilations[i] > kMaxGeometry || kernel[i] > kMaxGeometry ||
        pads[i] > kMaxGeometry || pads[i + n] > kMaxGeometry || in[i] > (int64_t{1} << 40)) {
      throw Error(node.describe() + ": strides, dilations, kernel sizes and pads must be <= 2^24");
    }
  }
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  g.pads_begin.assign(pads.begin(), pads.begin() + static_cast<long>(n));
  g.pads_end.assign(pads.begin() + static_cast<long>(n), pads.end());
  g.out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t eff = (kernel[i] - 1) * g.dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in[i] + g.strides[i] - 1) / g.strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + eff - in[i]);
      const int64_t small = total / 2, big = total - small;
      g.pads_begin[i] = auto_pad == "SAME_UPPER" ? small : big;
      g.pads_end[i] = auto_pad == "SAME_UPPER" ? big : small;
      g.out[i] = out;
    } else if (auto_pad == "VALID") {
      g.pads_begin[i] = g.pads_end[i] = 0;
      g.out[i] = (in[i] - eff) / g.strides[i] + 1;
      if (in[i] < eff) g.out[i] = 0;
    } else if (auto_pad == "NOTSET" || auto_pad.empty()) {
      const int64_t span = in[i] + g.pads_begin[i] + g.pads_end[i] - eff;
      if (span < 0) {
        throw Error(node.describe() + ": window of " + std::to_string(eff) + " does not fit padded input of " +
                    std::to_string(in[i] + g.pads_begin[i] + g.pads_end[i]));
      }
      if (ceil_mode) {
        int64_t out = (span + g.strides[i] - 1) / g.strides[i] + 1;
        // The last window must start inside the input or left padding (ONNX/PyTorch rule).
        if ((out - 1) * g.strides[i] >= in[i] + g.pads_begin[i]) --out;
        g.out[i] = out;
      } else {
        g.out[i] = span / g.strides[i] + 1;
      }
    } else {
      throw Error(node.describe() + ": unknown auto_pad '" + auto_pad + "'");
    }
  }
  return g;
}

}  // namespace xnn
