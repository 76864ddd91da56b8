// The per-chunk loops behind qelementwise.h's kernels, per ISA. Internal: qelementwise*.cpp and
// the tests that compare the ISAs include this.
#pragma once
#include <cstdint>

namespace xnn::kernels::internal {

// Baseline x86-64 (qelementwise.cpp): the definition the vector chunks reproduce byte for byte.
void u8_qlinear_add_chunk__scalar(int64_t n, const uint8_t* a, const uint8_t* b, float ma, float mb, int32_t za,
                                  int32_t zb, int32_t zy, uint8_t* y);
void f32_quantize_u8_chunk__scalar(int64_t n, const float* x, float scale, int32_t zp, uint8_t* y);

// AVX2 (qelementwise_avx2.cpp; call only when isa_supported(Isa::kAvx2)).
void u8_qlinear_add_chunk__avx2(int64_t n, const uint8_t* a, const uint8_t* b, float ma, float mb, int32_t za,
                                int32_t zb, int32_t zy, uint8_t* y);
void f32_quantize_u8_chunk__avx2(int64_t n, const float* x, float scale, int32_t zp, uint8_t* y);

}  // namespace xnn::kernels::internal
