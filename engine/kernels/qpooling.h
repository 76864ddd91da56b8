// uint8 NCHW pooling for the CPU backend: MaxPool 2-D and QLinearGlobalAveragePool.
//
// MaxPool 2-D (int8 graphs pool their uint8 activations
// directly: max commutes with the monotone dequantisation, so the output keeps the input's
// scale and zero point). Semantics of the reference MaxPool (engine/ops/pool.cpp) on uint8:
// the maximum over the window's taps inside the input, dilation 1; a window wholly in padding
// gives 0 (uint8's lowest). Any kernel, stride and pads (Pool2dParams as for f32_maxpool2d; the
// caller gives out_h/out_w, so ceil_mode and auto_pad are its business).
//
// Separable: per output row, the element-wise maximum of the window's input rows, then the
// sliding maximum of kernel_w neighbours along that row (both loops the compiler vectorises to
// pmaxub, 16 columns per instruction), read at each output's window start; outputs whose window
// crosses the left/right border take their window directly; with stride 2 the read at every
// second position is a packuswb of the even bytes (16 outputs per step; the strided byte loop
// was ResNet-18's int8 max pool's main cost). Planes are split over the pool. Baseline ISA (SSE2).
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/pooling.h"

namespace xnn::kernels {

// x [planes][in_h][in_w] -> y [planes][out_h][out_w]. Steady state allocates nothing
// (per-thread scratch rows, slots 2 and 3).
void u8_maxpool2d(const Pool2dParams& p, const uint8_t* x, uint8_t* y, ThreadPool* pool);

inline std::string u8_maxpool2d_kernel_name() { return "u8_maxpool2d__scalar"; }

// com.microsoft QLinearGlobalAveragePool on NCHW uint8 (its reference's arithmetic, so bit for
// bit): per plane, the exact integer sum s = Σ (x − x_zp), mean = double(x_scale)·s / count in
// double, y = saturate(round_half_even(mean / double(y_scale)) + y_zp). The sum is a uint8 sum
// the compiler vectorises, minus x_zp·count. x [planes][plane_size] -> y [planes].
struct QGlobalAvgPoolParams {
  float x_scale = 1, y_scale = 1;
  int32_t x_zero_point = 0, y_zero_point = 0;  // 0..255
};
void u8_global_avgpool(int64_t planes, int64_t plane_size, const uint8_t* x, const QGlobalAvgPoolParams& p, uint8_t* y,
                       ThreadPool* pool);

inline std::string u8_global_avgpool_kernel_name() { return "u8_global_avgpool__scalar"; }

}  // namespace xnn::kernels
