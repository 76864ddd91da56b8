// Pieces shared by the neural-network op family (conv.cpp, gemm.cpp, pool.cpp,
// normalization.cpp, softmax.cpp): their registration entry points, and the spatial geometry
// that convolution and pooling kernels walk.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "engine/ops/op_helpers.h"

namespace xnn {

// One per file; register_nn_ops (nn_ops.cpp) calls them all.
void register_conv_ops(OpRegistry& r);
void register_gemm_ops(OpRegistry& r);
void register_pool_ops(OpRegistry& r);
void register_normalization_ops(OpRegistry& r);
void register_softmax_ops(OpRegistry& r);
void register_quantization_ops(OpRegistry& r);       // QuantizeLinear, DequantizeLinear, ...
void register_quantized_matmul_ops(OpRegistry& r);   // MatMulInteger, QLinearMatMul
void register_quantized_conv_ops(OpRegistry& r);     // ConvInteger, QLinearConv
void register_quantized_contrib_ops(OpRegistry& r);  // com.microsoft QGemm, QLinearAdd, ...; after pools
void register_row_quantized_ops(OpRegistry& r);      // ai.xnn RowQuantizedGather/Gemm (weight-only)
void register_codebook_ops(OpRegistry& r);           // ai.xnn CodebookGather/Gemm (weight-only k-means)
void register_fake_quantize_ops(OpRegistry& r);       // ai.xnn FakeQuantize (quantisation-aware training)

// Floor/ceil of a / b for b > 0 (C++ division truncates toward zero, wrong for negative a).
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// A half-open index range [begin, end); empty when begin >= end.
struct IndexRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return std::max<int64_t>(0, end - begin); }
};

// The x in [0, count) for which `base + x * step` lies in [0, limit), with step > 0. This is how
// kernels hoist padding checks out of inner loops: e.g. for one kernel tap k of a convolution,
// the output positions o whose input position o*stride + k*dilation - pad is inside the input.
inline IndexRange valid_range(int64_t base, int64_t step, int64_t limit, int64_t count) {
  IndexRange r;
  r.begin = std::clamp<int64_t>(ceil_div(-base, step), 0, count);
  r.end = std::clamp<int64_t>(floor_div(limit - 1 - base, step) + 1, r.begin, count);
  return r;
}

// Window geometry with the spatial dims padded to exactly three (depth, height, width) by
// leading unit dims (size 1, kernel 1, stride 1, no padding), so one loop nest serves 1-D,
// 2-D and 3-D convolution and pooling.
constexpr int kMaxSpatialDims = 3;
struct Spatial3 {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1},
      pad_begin{0, 0, 0}, pad_end{0, 0, 0};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
};

// Pads `g` (as window_geometry returns it for `input_spatial`) to three dims.
inline Spatial3 to_spatial3(const WindowGeometry& g, const Shape& input_spatial) {
  Spatial3 s;
  const size_t lead = kMaxSpatialDims - input_spatial.size();
  for (size_t i = 0; i < input_spatial.size(); ++i) {
    s.in[lead + i] = input_spatial[i];
    s.out[lead + i] = g.out[i];
    s.kernel[lead + i] = g.kernel[i];
    s.stride[lead + i] = g.strides[i];
    s.dilation[lead + i] = g.dilations[i];
    s.pad_begin[lead + i] = g.pads_begin[i];
    s.pad_end[lead + i] = g.pads_end[i];
  }
  return s;
}

// "expected 1-3 spatial dims" check shared by conv and pooling: input rank is 2 + spatial.
template <typename Ctx>
int spatial_rank_or_fail(const Ctx& ctx, const Shape& x, const char* what) {
  const int spatial = static_cast<int>(x.size()) - 2;
  if (spatial < 1) {
    ctx.fail(std::string(what) + " expects input of rank >= 3 (N, C, spatial...), got " + shape_str(x));
  }
  if (spatial > kMaxSpatialDims) {
    ctx.unsupported(std::string(what) + " with " + std::to_string(spatial) + " spatial dims (at most 3 supported)");
  }
  return spatial;
}

// Element types: nn kernels are written for f32 and f64 (templates); f16 is a legal ONNX type
// we have no kernel for yet, anything else is not a legal input for these ops.
template <typename Ctx>
void check_float_dtype(const Ctx& ctx, DType t, const char* what) {
  if (t == DType::kF32 || t == DType::kF64) return;
  if (t == DType::kF16) ctx.unsupported(std::string(what) + " of dtype f16 (only f32 and f64 are implemented)");
  ctx.fail(std::string(what) + " has dtype " + std::string(dtype_name(t)) + ", expected f32 or f64");
}

// Calls f.template operator()<T>() with T = float or double; other dtypes as check_float_dtype.
template <typename Ctx, typename F>
void dispatch_float(const Ctx& ctx, DType t, F&& f) {
  if (t == DType::kF32) return f.template operator()<float>();
  if (t == DType::kF64) return f.template operator()<double>();
  check_float_dtype(ctx, t, "input");
}

}  // namespace xnn
