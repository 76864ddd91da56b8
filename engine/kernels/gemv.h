// fp32 matrix-vector product for batch-1 fully-connected layers: y[i] = act(W[i,:]·x + b[i]).
// The GEMM pads N=1 to a 16-wide panel and packs B per call; a row-major dot product per
// output reads each weight once, which is all a memory-bound GEMV can do.
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

// W is [rows][k] row-major (row stride ldw), x has k elements; bias may be null.
void f32_gemv(int64_t rows, int64_t k, const float* w, int64_t ldw, const float* x, const float* bias,
              const Activation& act, float* y, ThreadPool* pool, Isa isa);
std::string gemv_kernel_name(Isa isa);  // "f32_gemv_4x8__avx2"

// Rows [r0, r1) on one thread (the ISA paths).
void f32_gemv_rows__scalar(int64_t r0, int64_t r1, int64_t k, const float* w, int64_t ldw, const float* x, float* y);
void f32_gemv_rows__avx2(int64_t r0, int64_t r1, int64_t k, const float* w, int64_t ldw, const float* x, float* y);

}  // namespace xnn::kernels
