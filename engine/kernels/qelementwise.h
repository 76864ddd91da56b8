// Elementwise int8 kernels for the CPU backend, each with the semantics of its reference op
// (which the tests hold it to, bit for bit):
//   u8_qlinear_add   com.microsoft QLinearAdd on same-shape uint8 tensors:
//                    v = a_mult·float(a − a_zp) + b_mult·float(b − b_zp)   (two float products,
//                    one float add, in this order), clamped to [−y_zp, 255 − y_zp], rounded half
//                    to even, + y_zp; a_mult = a_scale / y_scale, b_mult = b_scale / y_scale.
//   f32_quantize_u8  QuantizeLinear to uint8 per tensor: v = x / scale (a float division),
//                    clamped to [−zp, 255 − zp], rounded half to even, + zp.
// Clamping before rounding gives what rounding then saturating gives (integer bounds, monotone
// rounding); after the clamp |v| <= 255, where adding and subtracting 1.5·2^23 rounds half to
// even exactly (the default rounding mode), as lrintf does, and the compiler vectorises it.
// The scalar ISA runs plain C++ for the baseline ISA (SSE2, no FMA contraction possible, as the
// reference ops are compiled); Isa::kAvx2 runs AVX2 loops with the same bytes
// (qelementwise_avx2.cpp: u8_qlinear_add__avx2, f32_quantize_u8__avx2). Split over the pool in
// chunks. The output may alias an input.
#pragma once
#include <cstdint>

#include "engine/core/thread_pool.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

struct QAddParams {
  float a_multiplier = 1, b_multiplier = 1;
  int32_t a_zero_point = 0, b_zero_point = 0, y_zero_point = 0;  // 0..255
};

void u8_qlinear_add(int64_t n, const uint8_t* a, const uint8_t* b, const QAddParams& p, uint8_t* y, ThreadPool* pool,
                    Isa isa);

void f32_quantize_u8(int64_t n, const float* x, float scale, int32_t zero_point, uint8_t* y, ThreadPool* pool,
                     Isa isa);

}  // namespace xnn::kernels
