// The blocking shared by the weight-only GEMMs (row-wise codes in row_quantized.cpp, codebook
// indices in codebook.cpp): output rows in blocks of 64 across threads, A taken 4 rows at a time
// so each coded weight row is decoded once per 4 rows of A. The scheme supplies the dot
// products of a block and how a dot becomes an output.
#pragma once
#include <algorithm>
#include <cstdint>

#include "engine/core/thread_pool.h"

namespace xnn::kernels {

inline constexpr int64_t kWeightOnlyRowBlock = 64;
inline constexpr int64_t kWeightOnlyABlock = 4;

// dots(i0, mb, n0, n1, float* d): d[i * (n1 - n0) + (n - n0)] = A[i0 + i] · W[n] for i < mb <= 4.
// finish(i, n0, n1, const float* d_i): writes Y[i][n0:n1] from that A row's dots.
template <typename DotsFn, typename FinishFn>
void weight_only_gemm_blocks(int64_t m, int64_t rows, ThreadPool* pool, const DotsFn& dots, const FinishFn& finish) {
  const int64_t blocks = (rows + kWeightOnlyRowBlock - 1) / kWeightOnlyRowBlock;
  parallel_for(pool, blocks, [&](int64_t b) {
    const int64_t n0 = b * kWeightOnlyRowBlock, n1 = std::min(rows, n0 + kWeightOnlyRowBlock), width = n1 - n0;
    float d[kWeightOnlyABlock * kWeightOnlyRowBlock];
    for (int64_t i0 = 0; i0 < m; i0 += kWeightOnlyABlock) {
      const int64_t mb = std::min(kWeightOnlyABlock, m - i0);
      dots(i0, mb, n0, n1, d);
      for (int64_t i = 0; i < mb; ++i) finish(i0 + i, n0, n1, d + i * width);
    }
  });
}

}  // namespace xnn::kernels
