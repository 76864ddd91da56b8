// Int8 matrix–vector product with an int32 result, for the CPU backend's quantised linear
// layers with one row of activations (a classifier's last layer): there the packed GEMM
// (qgemm.h) would pad the single column to a whole 8-column panel.
//
//   acc[j] = init[j] + Σ_k w[j][k]·x[k]     for j < n
// with int8 weights (read as they are: the layer is memory-bound, one byte per weight) and int16
// activations centred on their zero point per call (|x| <= 255). Exact in int32 when
// |init| + 128·255·K < 2^31 (qs8_gemm_max_depth gives the bound). Plain C++ for the baseline
// ISA (XNN_ISA=scalar); with AVX2 16 products per vpmaddwd, four rows per activation load
// (qgemv_avx2.cpp); with AVX-512 (avx512_enabled()) 32 per instruction (qgemv_avx512.cpp). Rows
// are split over the pool.
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/thread_pool.h"

namespace xnn::kernels {

// w: n rows of k int8 (row stride ldw); init: n values or null for 0.
void qs8_gemv(int64_t n, int64_t k, const int8_t* w, int64_t ldw, const int16_t* x, const int32_t* init, int32_t* acc,
              ThreadPool* pool);

// "qs8_gemv__avx512", "qs8_gemv__avx2" or "qs8_gemv__scalar".
std::string qs8_gemv_kernel_name();

namespace internal {
// Rows [j0, j1) with AVX2 (call only when best_isa() is kAvx2).
void qs8_gemv_rows__avx2(int64_t j0, int64_t j1, int64_t k, const int8_t* w, int64_t ldw, const int16_t* x,
                         const int32_t* init, int32_t* acc);
// Rows [j0, j1) with AVX-512BW (call only when avx512_enabled()).
void qs8_gemv_rows__avx512(int64_t j0, int64_t j1, int64_t k, const int8_t* w, int64_t ldw, const int16_t* x,
                           const int32_t* init, int32_t* acc);
}  // namespace internal

}  // namespace xnn::kernels
