// The row loop both SIMD int8 GEMV kernels share (qgemv_avx2.cpp, qgemv_avx512.cpp): rows [j0, j1)
// in blocks of four (one activation load feeds four rows), then the rest one at a time, each
// row's result added to its init with a wrapping int32 add, as the scalar loop's sum wraps.
// Plain C++, so each kernel file instantiates it under its own target flags.
#pragma once
#include <cstdint>

namespace xnn::kernels::internal {

// dot(r, row, out): the dot products of `r` (4 or 1) rows starting at `row` with the activations.
template <class Dot>
inline void qs8_gemv_rows_in_blocks(int64_t j0, int64_t j1, const int8_t* w, int64_t ldw, const int32_t* init,
                                    int32_t* acc, Dot dot) {
  int32_t s[4];
  const auto add = [&](int64_t j, int32_t v) {
    acc[j] = static_cast<int32_t>(static_cast<uint32_t>(init ? init[j] : 0) + static_cast<uint32_t>(v));
  };
  int64_t j = j0;
  for (; j + 4 <= j1; j += 4) {
    dot(4, w + j * ldw, s);
    for (int r = 0; r < 4; ++r) add(j + r, s[r]);
  }
  for (; j < j1; ++j) {
    dot(1, w + j * ldw, s);
    add(j, s[0]);
  }
}

}  // namespace xnn::kernels::internal
