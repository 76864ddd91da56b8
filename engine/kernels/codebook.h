// Micro-kernels for weights stored as k-means codebook indices (Deep Compression's weight
// sharing): every weight is one of K <= 2^bits shared float centroids of its tensor, stored as a
// `bits`-bit index (engine/ops/codebook.cpp defines the ops). Rows are packed in a container of
// 2, 4 or 8 bits per code (the smallest that holds `bits`): a 2-bit container holds element 4j+u
// in bits 2u..2u+1 of byte j, a 4-bit one element 2j in the low nibble of byte j and 2j+1 in the
// high nibble, an 8-bit one a code per byte. (The entropy coder of `xnn-lab encode` squeezes the
// container's spare bits out on disk; in memory the container keeps decoding to shifts and masks.)
//
// The GEMM never materialises W: each row's codes are decoded 8 at a time into centroid values in
// registers (a permute for K <= 8 or K <= 16 centroids, a gather from the L1-resident table
// beyond) and multiplied into up to 4 rows of A, so the layer reads `container` bits per weight
// instead of 32.
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

// Bits per code of the storage container for `bits`-bit indices (bits in 1..8): 2, 4 or 8.
inline int codebook_container_bits(int bits) { return bits <= 2 ? 2 : bits <= 4 ? 4 : 8; }

// Bytes one row of `cols` codes takes.
inline int64_t codebook_row_bytes(int64_t cols, int bits) {
  const int per_byte = 8 / codebook_container_bits(bits);
  return (cols + per_byte - 1) / per_byte;
}

// The code of element `c` of a row.
inline uint8_t codebook_code(const uint8_t* row, int bits, int64_t c) {
  switch (codebook_container_bits(bits)) {
    case 2: return static_cast<uint8_t>((row[c >> 2] >> (2 * (c & 3))) & 3);
    case 4: return (c & 1) ? static_cast<uint8_t>(row[c >> 1] >> 4) : static_cast<uint8_t>(row[c >> 1] & 0x0F);
    default: return row[c];
  }
}

// Stores `code` as element `c` of a zero-initialised row.
inline void set_codebook_code(uint8_t* row, int bits, int64_t c, uint8_t code) {
  switch (codebook_container_bits(bits)) {
    case 2: row[c >> 2] = static_cast<uint8_t>(row[c >> 2] | (code << (2 * (c & 3)))); break;
    case 4: row[c >> 1] = static_cast<uint8_t>(row[c >> 1] | ((c & 1) ? (code << 4) : code)); break;
    default: row[c] = code;
  }
}

struct CodebookWeights {
  const uint8_t* codes = nullptr;     // [rows][row_bytes]
  int bits = 4;                       // index bits (1..8)
  int64_t rows = 0, cols = 0, row_bytes = 0;
  const float* centroids = nullptr;   // [num_centroids]; every code is < num_centroids
  int64_t num_centroids = 0;          // <= 2^bits
};

// out[c] = centroids[code(c)] for c in [0, cols).
void decode_codebook_row(const uint8_t* row, int bits, int64_t cols, const float* centroids, float* out);
// The same with AVX2; `table256` holds 256 floats: the num_centroids centroids, then zeros (the
// caller pads once, e.g. at kernel preparation).
void decode_codebook_row__avx2(const uint8_t* row, int bits, int64_t cols, const float* table256,
                               int64_t num_centroids, float* out);

// The definition: Y[m][n] = Σ_k A[m][k] · centroids[q[n][k]] + bias[n], summed in order k = 0,
// 1, ... in float. A is [m][cols] row-major, Y [m][rows]; bias may be null.
void codebook_gemm_reference(const float* a, int64_t m, const CodebookWeights& w, const float* bias, float* y);

// The fast path, split over output rows on `pool` (sums in another order: close to the
// reference, not bit-exact).
void f32_codebook_gemm(const float* a, int64_t m, const CodebookWeights& w, const float* bias, float* y,
                       ThreadPool* pool, Isa isa);
std::string codebook_gemm_kernel_name(int bits, Isa isa);  // "f32_cb4_gemm_4x8__avx2"

// Dots A[i]·centroids[q[n]] for A rows [0, m) (m <= 4) and output rows [n0, n1), written to
// dots[i * (n1 - n0) + (n - n0)]. The ISA paths.
void codebook_dots__scalar(const float* a, int64_t m, const CodebookWeights& w, int64_t n0, int64_t n1, float* dots);
void codebook_dots__avx2(const float* a, int64_t m, const CodebookWeights& w, int64_t n0, int64_t n1, float* dots);

}  // namespace xnn::kernels
