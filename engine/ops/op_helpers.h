// Small helpers shared by op declarations: axis normalisation, ONNX multidirectional
// broadcasting, and a strided index walker so reference kernels broadcast without
// per-element division chains.
#pragma once
#include <span>
#include <vector>

#include "engine/core/op_registry.h"

namespace xnn {

// An OpSchema with the common fields set (arity counts are inputs; one output). Op files wrap
// it in their own short builders.
OpSchema make_schema(const char* type, int min_inputs, int max_inputs, InferFn infer, KernelFn kernel,
                     CostFn cost = {}, const char* doc = "");

// Maps a possibly negative axis into [0, rank); throws naming the node if out of range.
int normalize_axis(int64_t axis, int rank, const Node& node);

// ONNX multidirectional (numpy) broadcasting of several shapes; throws naming the node.
Shape broadcast_shapes(std::span<const Shape> shapes, const Node& node);
Shape broadcast_shapes(const Shape& a, const Shape& b, const Node& node);

// Element strides of `in` when read as if broadcast to `out` (0 on broadcast dims). `in` is
// right-aligned with `out` as in numpy.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Walks every index of `out` in row-major order, keeping one linear offset per input.
// Usage: for (BroadcastWalker w(out, {s0, s1}); !w.done(); w.next()) f(w.offset(0), w.offset(1));
// The innermost dimension is exposed so kernels can run a tight inner loop:
// inner_size(), inner_stride(k) and advance_outer() for that pattern.
class BroadcastWalker {
 public:
  BroadcastWalker(const Shape& out, std::vector<std::vector<int64_t>> strides);
  int64_t inner_size() const { return inner_; }
  int64_t inner_stride(size_t k) const { return strides_[k].empty() ? 0 : strides_[k].back(); }
  int64_t offset(size_t k) const { return offsets_[k]; }
  bool done() const { return done_; }
  void next_outer();  // advances past one whole innermost row

 private:
  Shape out_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> index_;
  int64_t inner_ = 1;
  bool done_ = false;
};

// out[i] = f(a[..], b[..]) with a and b broadcast multidirectionally to out's shape; the common
// helper for binary elementwise ops. A/B/R element types; f(a, b) -> R. `out` may be the same
// tensor as `a` when `a` already has out's shape (each element is read before it is written at
// the same index), which is how variadic ops fold their inputs in place.
template <typename A, typename B, typename R, typename F>
void broadcast_binary(const Tensor& a, const Tensor& b, Tensor& out, F&& f) {
  const A* pa = static_cast<const A*>(a.raw());
  const B* pb = static_cast<const B*>(b.raw());
  R* po = static_cast<R*>(out.raw());
  if (a.shape() == out.shape() && b.shape() == out.shape()) {
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  if (out.numel() == 0) return;
  BroadcastWalker w(out.shape(), {broadcast_strides(a.shape(), out.shape()),
                                  broadcast_strides(b.shape(), out.shape())});
  const int64_t n = w.inner_size(), sa = w.inner_stride(0), sb = w.inner_stride(1);
  int64_t o = 0;
  for (; !w.done(); w.next_outer()) {
    const A* ra = pa + w.offset(0);
    const B* rb = pb + w.offset(1);
    for (int64_t i = 0; i < n; ++i) po[o + i] = f(ra[i * sa], rb[i * sb]);
    o += n;
  }
}

// Ternary counterpart of broadcast_binary (Where): out[i] = f(a, b, c) with all three inputs
// broadcast multidirectionally to `out`. Same walking scheme: a tight loop over the innermost
// dimension, strides 0 where an input is broadcast.
template <typename A, typename B, typename C, typename R, typename F>
void broadcast_ternary(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& out, F&& f) {
  const A* pa = static_cast<const A*>(a.raw());
  const B* pb = static_cast<const B*>(b.raw());
  const C* pc = static_cast<const C*>(c.raw());
  R* po = static_cast<R*>(out.raw());
  if (a.shape() == out.shape() && b.shape() == out.shape() && c.shape() == out.shape()) {
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i], pc[i]);
    return;
  }
  if (out.numel() == 0) return;
  BroadcastWalker w(out.shape(), {broadcast_strides(a.shape(), out.shape()),
                                  broadcast_strides(b.shape(), out.shape()),
                                  broadcast_strides(c.shape(), out.shape())});
  const int64_t n = w.inner_size(), sa = w.inner_stride(0), sb = w.inner_stride(1), sc = w.inner_stride(2);
  int64_t o = 0;
  for (; !w.done(); w.next_outer()) {
    const A* ra = pa + w.offset(0);
    const B* rb = pb + w.offset(1);
    const C* rc = pc + w.offset(2);
    for (int64_t i = 0; i < n; ++i) po[o + i] = f(ra[i * sa], rb[i * sb], rc[i * sc]);
    o += n;
  }
}

// Conv/pool spatial geometry from ONNX attributes (kernel_shape, strides, dilations, pads,
// auto_pad) for `spatial` spatial dims. Output sizes use floor (or ceil with ceil_mode).
struct WindowGeometry {
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end, out;
};
WindowGeometry window_geometry(const Node& node, const Shape& input_spatial,
                               const std::vector<int64_t>& kernel, bool ceil_mode);

}  // namespace xnn
