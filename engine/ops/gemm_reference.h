// The reference matrix multiply shared by Gemm, MatMul, Conv (through im2col) and ConvTranspose.
// It is the oracle for optimised kernels and also runs whole models in tests, so it is written
// to be fast with plain C++ rather than naive: i-k-j loop order (the inner loop is a contiguous
// axpy over a row of B into a row of C, which compilers vectorise) and blocking over k and j so
// the panel of B reused by every row of A stays in cache.
#pragma once
#include <algorithm>
#include <cstdint>

namespace xnn {

// C[M,N] += A[M,K] * B[K,N]; all row-major with leading dimensions lda, ldb, ldc (elements).
// Accumulates into C: callers initialise C (zeros, a bias, beta * C, ...).
template <typename T>
void gemm_reference(int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb, T* C,
                    int64_t ldc) {
  // A kBlockK x kBlockN panel of B is 256 KB for floats (fits L2); a kBlockN row segment of C is
  // 2 KB (fits L1).
  constexpr int64_t kBlockK = 128;
  constexpr int64_t kBlockN = 512;
  for (int64_t j0 = 0; j0 < N; j0 += kBlockN) {
    const int64_t nb = std::min(kBlockN, N - j0);
    for (int64_t k0 = 0; k0 < K; k0 += kBlockK) {
      const int64_t k1 = std::min(K, k0 + kBlockK);
      for (int64_t i = 0; i < M; ++i) {
        T* __restrict c = C + i * ldc + j0;
        const T* a = A + i * lda;
        for (int64_t k = k0; k < k1; ++k) {
          const T aik = a[k];
          const T* __restrict b = B + k * ldb + j0;
          for (int64_t j = 0; j < nb; ++j) c[j] += aik * b[j];
        }
      }
    }
  }
}

}  // namespace xnn
