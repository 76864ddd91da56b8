// Pooling ops: MaxPool (with optional Indices), AveragePool, GlobalAveragePool, GlobalMaxPool.
// Windowed pools handle 1-3 spatial dims through Spatial3; the taps of each window that fall
// inside the input are computed once per output coordinate and dim (TapTable), so the inner
// loops visit only real input cells without bounds checks.
#include <algorithm>
#include <limits>
#include <vector>

#include "engine/ops/nn_common.h"

namespace xnn {
namespace {

struct PoolParams {
  int64_t planes = 0;  // N * C: every (image, channel) plane is pooled independently
  Spatial3 geo;
  Shape out_shape;
};

template <typename Ctx>
PoolParams pool_params(const Ctx& ctx, const Shape& x, const char* op) {
  spatial_rank_or_fail(ctx, x, op);
  const std::vector<int64_t> kernel = ctx.node().attr_ints("kernel_shape");
  if (kernel.empty()) ctx.fail("required attribute 'kernel_shape' is missing");
  const bool ceil_mode = ctx.node().attr_int("ceil_mode", 0) != 0;
  const Shape in_spatial(x.begin() + 2, x.end());
  const WindowGeometry g = window_geometry(ctx.node(), in_spatial, kernel, ceil_mode);
  PoolParams p;
  p.planes = x[0] * x[1];
  p.geo = to_spatial3(g, in_spatial);
  p.out_shape = {x[0], x[1]};
  p.out_shape.insert(p.out_shape.end(), g.out.begin(), g.out.end());
  return p;
}

// For each output coordinate along one spatial dim: the window taps that land inside the input
// (`valid`), and how many land inside input + padding (`padded_count`, AveragePool's divisor with
// count_include_pad; taps beyond the end padding, possible with ceil_mode, never count).
struct TapTable {
  std::vector<IndexRange> valid;
  std::vector<int64_t> padded_count;
};

std::array<TapTable, 3> tap_tables(const Spatial3& s) {
  std::array<TapTable, 3> tables;
  for (size_t d = 0; d < 3; ++d) {
    for (int64_t o = 0; o < s.out[d]; ++o) {
      const int64_t start = o * s.stride[d] - s.pad_begin[d];
      tables[d].valid.push_back(valid_range(start, s.dilation[d], s.in[d], s.kernel[d]));
      const int64_t padded_extent = s.in[d] + s.pad_begin[d] + s.pad_end[d];
      tables[d].padded_count.push_back(
          valid_range(start + s.pad_begin[d], s.dilation[d], padded_extent, s.kernel[d]).size());
    }
  }
  return tables;
}

// Input coordinate of tap k of the window at output coordinate o along dim d.
inline int64_t input_coord(const Spatial3& s, size_t d, int64_t o, int64_t k) {
  return o * s.stride[d] - s.pad_begin[d] + k * s.dilation[d];
}

// ---- MaxPool ---------------------------------------------------------------------------------

// MaxPool is defined for floats and 8-bit integers.
template <typename Ctx, typename F>
void dispatch_maxpool_dtype(const Ctx& ctx, DType t, F&& f) {
  switch (t) {
    case DType::kF32: return f.template operator()<float>();
    case DType::kF64: return f.template operator()<double>();
    case DType::kI8: return f.template operator()<int8_t>();
    case DType::kU8: return f.template operator()<uint8_t>();
    default: check_float_dtype(ctx, t, "input X");
  }
}

void infer_max_pool(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  dispatch_maxpool_dtype(ctx, x.dtype, []<typename T>() {});  // rejects what we cannot run
  const int64_t storage_order = ctx.node().attr_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) ctx.fail("storage_order must be 0 or 1");
  const PoolParams p = pool_params(ctx, x.shape, "MaxPool");
  ctx.set_output(0, x.dtype, p.out_shape);
  ctx.set_output(1, DType::kI64, p.out_shape);
}

OpCost window_pool_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  c.macs = static_cast<double>(shape_numel(out[0].shape)) *
           static_cast<double>(shape_numel(node.attr_ints("kernel_shape")));
  return c;
}

// Indices (optional) follow ONNX: offsets into the flattened input, counting N and C but not
// padding; spatial offsets row-major, or column-major with storage_order = 1.
template <typename T>
void max_pool_kernel(const PoolParams& p, bool column_major, const T* x, T* y, int64_t* indices) {
  const Spatial3& s = p.geo;
  const std::array<TapTable, 3> taps = tap_tables(s);
  const int64_t in_size = s.in_size(), out_size = s.out_size();
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    const T* xp = x + plane * in_size;
    int64_t o = plane * out_size;
    for (int64_t od = 0; od < s.out[0]; ++od) {
      const IndexRange rd = taps[0].valid[static_cast<size_t>(od)];
      for (int64_t oh = 0; oh < s.out[1]; ++oh) {
        const IndexRange rh = taps[1].valid[static_cast<size_t>(oh)];
        for (int64_t ow = 0; ow < s.out[2]; ++ow, ++o) {
          const IndexRange rw = taps[2].valid[static_cast<size_t>(ow)];
          T best = std::numeric_limits<T>::lowest();
          int64_t best_d = -1, best_h = -1, best_w = -1;
          for (int64_t kd = rd.begin; kd < rd.end; ++kd) {
            const int64_t id = input_coord(s, 0, od, kd);
            for (int64_t kh = rh.begin; kh < rh.end; ++kh) {
              const int64_t ih = input_coord(s, 1, oh, kh);
              const T* row = xp + (id * s.in[1] + ih) * s.in[2];
              for (int64_t kw = rw.begin; kw < rw.end; ++kw) {
                const int64_t iw = input_coord(s, 2, ow, kw);
                if (row[iw] > best || best_w < 0) {
                  best = row[iw];
                  best_d = id, best_h = ih, best_w = iw;
                }
              }
            }
          }
          y[o] = best;
          if (!indices) continue;
          if (best_w < 0) {
            indices[o] = -1;  // a window entirely in padding
          } else {
            const int64_t spatial = column_major ? best_d + (best_h + best_w * s.in[1]) * s.in[0]
                                                 : (best_d * s.in[1] + best_h) * s.in[2] + best_w;
            indices[o] = plane * in_size + spatial;
          }
        }
      }
    }
  }
}

void run_max_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const PoolParams p = pool_params(ctx, x.shape(), "MaxPool");
  const bool column_major = ctx.node().attr_int("storage_order", 0) == 1;
  int64_t* indices = ctx.has_output(1) ? ctx.output(1).data<int64_t>() : nullptr;
  dispatch_maxpool_dtype(ctx, x.dtype(), [&]<typename T>() {
    max_pool_kernel<T>(p, column_major, x.data<T>(), ctx.output(0).data<T>(), indices);
  });
}

// ---- AveragePool -----------------------------------------------------------------------------

void infer_average_pool(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  check_float_dtype(ctx, x.dtype, "input X");
  ctx.set_output(0, x.dtype, pool_params(ctx, x.shape, "AveragePool").out_shape);
}

template <typename T>
void average_pool_kernel(const PoolParams& p, bool count_include_pad, const T* x, T* y) {
  const Spatial3& s = p.geo;
  const std::array<TapTable, 3> taps = tap_tables(s);
  const int64_t in_size = s.in_size(), out_size = s.out_size();
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    const T* xp = x + plane * in_size;
    int64_t o = plane * out_size;
    for (int64_t od = 0; od < s.out[0]; ++od) {
      const IndexRange rd = taps[0].valid[static_cast<size_t>(od)];
      for (int64_t oh = 0; oh < s.out[1]; ++oh) {
        const IndexRange rh = taps[1].valid[static_cast<size_t>(oh)];
        for (int64_t ow = 0; ow < s.out[2]; ++ow, ++o) {
          const IndexRange rw = taps[2].valid[static_cast<size_t>(ow)];
          T sum = 0;
          for (int64_t kd = rd.begin; kd < rd.end; ++kd) {
            const int64_t id = input_coord(s, 0, od, kd);
            for (int64_t kh = rh.begin; kh < rh.end; ++kh) {
              const T* row = xp + (id * s.in[1] + input_coord(s, 1, oh, kh)) * s.in[2];
              for (int64_t kw = rw.begin; kw < rw.end; ++kw) sum += row[input_coord(s, 2, ow, kw)];
            }
          }
          const int64_t count = count_include_pad ? taps[0].padded_count[static_cast<size_t>(od)] *
                                                        taps[1].padded_count[static_cast<size_t>(oh)] *
                                                        taps[2].padded_count[static_cast<size_t>(ow)]
                                                  : rd.size() * rh.size() * rw.size();
          y[o] = count > 0 ? sum / static_cast<T>(count) : T(0);  // 0: a window entirely in padding
        }
      }
    }
  }
}

void run_average_pool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const PoolParams p = pool_params(ctx, x.shape(), "AveragePool");
  const bool count_include_pad = ctx.node().attr_int("count_include_pad", 0) != 0;
  dispatch_float(ctx, x.dtype(), [&]<typename T>() {
    average_pool_kernel<T>(p, count_include_pad, x.data<T>(), ctx.output(0).data<T>());
  });
}

// ---- GlobalAveragePool, GlobalMaxPool --------------------------------------------------------

void infer_global_pool(InferContext& ctx) {
  const TensorInfo& x = ctx.input(0);
  check_float_dtype(ctx, x.dtype, "input X");
  if (x.shape.size() < 3) ctx.fail("expects input of rank >= 3 (N, C, spatial...), got " + shape_str(x.shape));
  Shape out(x.shape.size(), 1);
  out[0] = x.shape[0];
  out[1] = x.shape[1];
  ctx.set_output(0, x.dtype, out);
}

OpCost global_pool_cost(const Node& node, std::span<const TensorInfo> in, std::span<const TensorInfo> out) {
  OpCost c = default_cost(node, in, out);
  c.macs = static_cast<double>(shape_numel(in[0].shape));
  return c;
}

// Reduces every (image, channel) plane to one value with `reduce(plane, size)`.
template <typename Reduce>
void global_pool(KernelContext& ctx, Reduce reduce) {
  const Tensor& x = ctx.input(0);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t plane_size = planes == 0 ? 0 : x.numel() / planes;
  dispatch_float(ctx, x.dtype(), [&]<typename T>() {
    const T* px = x.data<T>();
    T* py = ctx.output(0).data<T>();
    for (int64_t i = 0; i < planes; ++i) py[i] = reduce(px + i * plane_size, plane_size);
  });
}

void run_global_average_pool(KernelContext& ctx) {
  global_pool(ctx, []<typename T>(const T* v, int64_t n) {
    double sum = 0;  // double: planes can be large and the mean is the oracle for optimised kernels
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(v[i]);
    return static_cast<T>(n > 0 ? sum / static_cast<double>(n) : 0.0);
  });
}

void run_global_max_pool(KernelContext& ctx) {
  global_pool(ctx, []<typename T>(const T* v, int64_t n) {
    T best = n > 0 ? v[0] : T(0);
    for (int64_t i = 1; i < n; ++i) best = v[i] > best ? v[i] : best;
    return best;
  });
}

OpSchema pool_schema(const char* type, InferFn infer, CostFn cost, KernelFn kernel, const char* doc) {
  OpSchema s;
  s.type = type;
  s.infer = std::move(infer);
  s.cost = std::move(cost);
  s.reference = std::move(kernel);
  s.doc = doc;
  return s;
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  OpSchema max_pool = pool_schema("MaxPool", infer_max_pool, window_pool_cost, run_max_pool,
                                  "max over windows (1-3 spatial dims); optional i64 Indices output");
  max_pool.max_outputs = 2;
  r.add(std::move(max_pool));
  r.add(pool_schema("AveragePool", infer_average_pool, window_pool_cost, run_average_pool,
                    "mean over windows (1-3 spatial dims), count_include_pad, ceil_mode"));
  r.add(pool_schema("GlobalAveragePool", infer_global_pool, global_pool_cost, run_global_average_pool,
                    "mean over all spatial dims"));
  r.add(pool_schema("GlobalMaxPool", infer_global_pool, global_pool_cost, run_global_max_pool,
                    "max over all spatial dims"));
}

}  // namespace xnn
