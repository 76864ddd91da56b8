// Micro-kernels for weights stored row-wise as unsigned 4- or 8-bit codes with a float scale
// and offset per row (w = scale · q + offset; engine/ops/row_quantized.cpp defines the ops).
// 4-bit rows pack element 2j in the low nibble of byte j and 2j+1 in the high nibble.
//
// The GEMM never materialises W: Y[m][n] = scale[n] · (A[m] · q[n]) + offset[n] · ΣA[m] + bias[n],
// so each weight byte is read once per block of A rows and widened in registers — the layer
// stays bound by reading 1 (int8) or 0.5 (int4) bytes per weight instead of 4.
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

// Bytes one row of `cols` codes of `bits` (4 or 8) takes.
inline int64_t row_quantized_bytes(int64_t cols, int bits) { return bits == 4 ? (cols + 1) / 2 : cols; }

// The code of element `c` of a row.
inline uint8_t row_code(const uint8_t* row, int bits, int64_t c) {
  if (bits == 8) return row[c];
  const uint8_t b = row[c >> 1];
  return (c & 1) ? static_cast<uint8_t>(b >> 4) : static_cast<uint8_t>(b & 0x0F);
}

// out[c] = scale · q[c] + offset for c in [0, cols).
void dequantize_row(const uint8_t* row, int bits, int64_t cols, float scale, float offset, float* out);

struct RowQuantizedWeights {
  const uint8_t* codes = nullptr;  // [rows][row_bytes]
  int bits = 8;
  int64_t rows = 0, cols = 0, row_bytes = 0;
  const float* scale = nullptr;    // [rows]
  const float* offset = nullptr;   // [rows]
};

// The definition: Y[m][n] = Σ_k A[m][k] · (scale[n] · q[n][k] + offset[n]) + bias[n], summed in
// order k = 0, 1, ... in float. A is [m][cols] row-major, Y [m][rows]; bias may be null.
void row_quantized_gemm_reference(const float* a, int64_t m, const RowQuantizedWeights& w, const float* bias, float* y);

// The fast path (the factored form above), split over output rows on `pool`.
void f32_rowq_gemm(const float* a, int64_t m, const RowQuantizedWeights& w, const float* bias, float* y,
                   ThreadPool* pool, Isa isa);
std::string rowq_gemm_kernel_name(int bits, Isa isa);  // "f32_rowq8_gemm_4x8__avx2"

// Output rows [n0, n1) for A rows [0, m) (m <= 4), writing the raw dots A[m]·q[n] to
// dots[mi * (n1 - n0) + (n - n0)]. The ISA paths.
void rowq_dots__scalar(const float* a, int64_t m, const RowQuantizedWeights& w, int64_t n0, int64_t n1, float* dots);
void rowq_dots__avx2(const float* a, int64_t m, const RowQuantizedWeights& w, int64_t n0, int64_t n1, float* dots);

}  // namespace xnn::kernels
