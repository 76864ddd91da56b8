// Micro-kernels and packers behind qs8_gemm (engine/kernels/qgemm.h). Internal: only qgemm*.cpp
// and the int8 GEMM tests/benchmarks include this.
//
// Packed layouts (KU = values per 32-bit lane: 2 for c2, 4 for c4; element type int16 for c2,
// int8 / uint8 for c4). G = ceil(K / KU) groups; k past K is zero in both operands.
//   W: panels of MR rows, panel p at p·G·MR·KU elements; inside it group g at g·MR·KU, row r at
//      r·KU, value u = W[p·MR + r][g·KU + u]. Rows past M are zero.
//   X: panels of NR columns, panel q at q·G·NR·KU elements; inside it group g at g·NR·KU, column
//      c at c·KU, value u = X[g·KU + u][j0 + q·NR + c]. Columns past the block are zero.
//
// A micro-kernel call computes one MR×NR tile over all G groups, requantises it and stores the
// rows < mr, columns < nr of Y (so edge tiles write nothing outside Y).
#pragma once
#include <cstddef>
#include <cstdint>

namespace xnn::kernels::internal {

struct QTileParams {
  const int32_t* init = nullptr;        // MR initial accumulators: bias − x_zp·rowsum (0 past M)
  const float* multiplier = nullptr;    // the multipliers of the tile's rows (mr valid)
  float lower = 0, upper = 0;           // requant_lower / requant_upper
  int32_t zero_point = 0;
  uint8_t qmin = 0;                     // lower + zero_point
};

using QGemmUkernelFn = void (*)(size_t mr, size_t nr, size_t groups, const void* w, const void* x,
                                const QTileParams& p, uint8_t* y, int64_t ldy);

#define XNN_QGEMM_UKERNEL(name)                                                                      \
  void name(size_t mr, size_t nr, size_t groups, const void* w, const void* x, const QTileParams& p, \
            uint8_t* y, int64_t ldy)

// X interleaved 4 values per column (qs8_gemm_interleaved): group g of column j is the 4 bytes at
// x + x_offsets[g] + 4·j, so a call's 16 columns of group g are 64 contiguous bytes read in place
// (x points at the tile's first column). Same W panels, tile and epilogue as QGemmUkernelFn.
using QGemmInterleavedUkernelFn = void (*)(size_t mr, size_t nr, size_t groups, const void* w, const uint8_t* x,
                                           const int64_t* x_offsets, const QTileParams& p, uint8_t* y, int64_t ldy);

#define XNN_QGEMM_INTERLEAVED_UKERNEL(name)                                                                      \
  void name(size_t mr, size_t nr, size_t groups, const void* w, const uint8_t* x, const int64_t* x_offsets, \
            const QTileParams& p, uint8_t* y, int64_t ldy)

// Where X's rows are: row r at base + r·ldx, or at base + offsets[r] when offsets is set (the
// implicit-GEMM convolution: each row a shifted view of the padded input, qconv.cpp).
struct QXRows {
  const uint8_t* base = nullptr;
  int64_t ldx = 0;
  const int64_t* offsets = nullptr;
  const uint8_t* row(int64_t r) const { return base + (offsets ? offsets[r] : r * ldx); }
};

// Packs X[0:k, j0:j0+nc] into ceil(nc / NR) panels at dst.
using QPackXFn = void (*)(const QXRows& x, int64_t k, int64_t j0, int64_t nc, void* dst);

#define XNN_QPACK_X(name) void name(const QXRows& x, int64_t k, int64_t j0, int64_t nc, void* dst)

// One packed layout and the kernels that read it.
struct QGemmKernelSet {
  int mr = 0, nr = 0, ku = 0;
  int elem_bytes = 0;              // bytes per packed value: 2 (c2) or 1 (c4)
  QGemmUkernelFn main = nullptr;
  QGemmUkernelFn narrow = nullptr;  // for a panel with at most nr / 2 valid columns; may be null
  QPackXFn pack_x = nullptr;
  const char* name = "";
  QGemmInterleavedUkernelFn interleaved = nullptr;  // X read in place (c4 layouts only); may be null
  const char* interleaved_name = "";
};

// AVX2 (qgemm_avx2.cpp; call only when isa_supported(Isa::kAvx2)).
inline constexpr int kAvx2C2Mr = 6;
inline constexpr int kAvx2C4Mr = 4;
inline constexpr int kAvx2Nr = 16;
XNN_QGEMM_UKERNEL(qs8_gemm_6x16c2__avx2);
XNN_QGEMM_UKERNEL(qs8_gemm_6x8c2__avx2);
XNN_QGEMM_UKERNEL(qs8_gemm_4x16c4__avx2);
XNN_QGEMM_UKERNEL(qs8_gemm_4x8c4__avx2);
XNN_QPACK_X(qs8_pack_x_16c2__avx2);
XNN_QPACK_X(qs8_pack_x_16c4__avx2);

// VNNI (call only when vnni_enabled()): the c4 layout with 6-row weight panels, any int8
// weights; X panels packed by qs8_pack_x_16c4__avx2. One body (qgemm_vnni_c4.h) in two
// encodings: AVX-VNNI (qgemm_avxvnni.cpp, cpu_features().avx_vnni) and AVX512-VNNI+VL on ymm
// (qgemm_avx512vnni.cpp, cpu_features().avx512_vnni).
inline constexpr int kVnniMr = 6;
XNN_QGEMM_UKERNEL(qs8_gemm_6x16c4__avxvnni);
XNN_QGEMM_UKERNEL(qs8_gemm_6x8c4__avxvnni);
XNN_QGEMM_UKERNEL(qs8_gemm_6x16c4__avx512vnni);
XNN_QGEMM_UKERNEL(qs8_gemm_6x8c4__avx512vnni);

// 512-bit VNNI (call only when vnni512_enabled(); qgemm_avx512vnni.cpp): the c4 layout with 16- or
// 8-row weight panels and the same 16-column X panels; zmm kernels for full panels, ymm (EVEX)
// for a panel with at most 8 valid columns.
inline constexpr int kVnni512Mr = 16;
inline constexpr int kVnni512SmallMr = 8;
inline constexpr int kMaxMr = 16;  // the largest MR of any layout
XNN_QGEMM_UKERNEL(qs8_gemm_16x16c4__avx512vnni);
XNN_QGEMM_UKERNEL(qs8_gemm_16x8c4__avx512vnni);
XNN_QGEMM_UKERNEL(qs8_gemm_8x16c4__avx512vnni);
XNN_QGEMM_UKERNEL(qs8_gemm_8x8c4__avx512vnni);
XNN_QGEMM_INTERLEAVED_UKERNEL(qs8_gemm_16x16c4_interleaved__avx512vnni);
XNN_QGEMM_INTERLEAVED_UKERNEL(qs8_gemm_8x16c4_interleaved__avx512vnni);

// Scalar (qgemm.cpp): 4x8c2 is the scalar ISA's layout; the others run AVX2-packed weights on a
// CPU without AVX2, on the same layouts.
inline constexpr int kScalarMr = 4;
inline constexpr int kScalarNr = 8;
XNN_QGEMM_UKERNEL(qs8_gemm_4x8c2__scalar);
XNN_QGEMM_UKERNEL(qs8_gemm_6x16c2__scalar);
XNN_QGEMM_UKERNEL(qs8_gemm_4x16c4__scalar);
XNN_QGEMM_UKERNEL(qs8_gemm_6x16c4__scalar);
XNN_QPACK_X(qs8_pack_x_8c2__scalar);
XNN_QPACK_X(qs8_pack_x_16c2__scalar);
XNN_QPACK_X(qs8_pack_x_16c4__scalar);

}  // namespace xnn::kernels::internal
