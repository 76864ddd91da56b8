// 2-D float transpose: dst[j][i] = src[i][j] for a rows × cols source (row strides ld_src and
// ld_dst in floats). The sparse batched linear layer (engine/backends/cpu/sparse_cpu.cpp) moves
// X [M × K] to Xᵀ and Yᵀ back to Y with it on every run; a plain double loop reads or writes
// with a large stride and cost ~20% of a 64×784→300 layer at 80% zeros.
//
// AVX2: 8×8 tiles transposed in registers (unpack, shuffle, 128-bit permute: 24 shuffles per 64
// floats), rows and columns past the last full tile by the scalar loop. Exact copies: the two
// paths give identical results.
#pragma once
#include <cstdint>

#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

void f32_transpose(int64_t rows, int64_t cols, const float* src, int64_t ld_src, float* dst, int64_t ld_dst, Isa isa);

void f32_transpose__scalar(int64_t r0, int64_t r1, int64_t c0, int64_t c1, const float* src, int64_t ld_src,
                           float* dst, int64_t ld_dst);
// Full 8×8 tiles of rows [0, rows8) × columns [0, cols8) (multiples of 8).
void f32_transpose_8x8__avx2(int64_t rows8, int64_t cols8, const float* src, int64_t ld_src, float* dst,
                             int64_t ld_dst);

}  // namespace xnn::kernels
