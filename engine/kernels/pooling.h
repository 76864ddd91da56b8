// fp32 NCHW pooling kernels for the CPU backend: MaxPool 2-D, AveragePool 2-D (any kernel,
// stride and pads; dilation 1) and GlobalAveragePool, with the reference ops' semantics
// (engine/ops/pool.cpp), which the tests hold them to:
//   - max: taps in row-major window order, the first tap inside the input seeds the maximum and a
//     later tap replaces it only when strictly greater (so a NaN seed sticks, a later NaN is
//     skipped); a window wholly in padding gives -FLT_MAX;
//   - average: float sum in window order divided by the tap count (count_include_pad counts
//     padding taps, never taps beyond the end padding that ceil_mode can add); 0 for an empty
//     window;
//   - global average: double sum, divided, rounded to float once.
// Output sizes (ceil_mode, auto_pad) are the caller's: it passes out_h/out_w and the pads.
//
// Work is split over (image, channel) planes. AVX2 vectorises max and average pools with width
// stride 1 or 2 (and kernel height <= 16) along the output width, 8 outputs per ymm; stride 2
// deinterleaves even/odd input columns with in-lane shuffles and undoes the lane order once per
// 8 outputs. The 3×3 and 2×2 stride-2 max pools have their own row kernels (fewer loads); on
// AVX-512 CPUs the K×3 stride-2 max pools take a zmm row kernel (16 outputs per vector, the row's
// last block masked), and small planes with 16 channels in the zmm lanes instead
// (f32_maxpool2d_c16__avx512: windows of 9 taps or more, output rows of at most 16, or 32
// without a zmm row kernel).
// Windows that cross the left/right border, and other geometries, run the scalar path.
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

struct Pool2dParams {
  int64_t planes = 0;  // N * C
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;  // pad_b/pad_r: count_include_pad only
};

// x [planes][in_h][in_w] -> y [planes][out_h][out_w].
void f32_maxpool2d(const Pool2dParams& p, const float* x, float* y, ThreadPool* pool, Isa isa);
// One plane (p.planes ignored) on the calling thread, with the row kernels (never the c16 one):
// for a caller that pools a band of rows of each plane as it produces them (conv_direct_maxpool.h).
void f32_maxpool2d_plane(const Pool2dParams& p, const float* x, float* y, Isa isa);
void f32_avgpool2d(const Pool2dParams& p, bool count_include_pad, const float* x, float* y, ThreadPool* pool,
                   Isa isa);
// x [planes][plane_size] -> y [planes].
void f32_global_avgpool(int64_t planes, int64_t plane_size, const float* x, float* y, ThreadPool* pool, Isa isa);

// The kernel that runs for these parameters: "f32_maxpool2d_3x3s2__avx2", "f32_maxpool2d__avx2",
// "f32_maxpool2d__scalar", "f32_avgpool2d__avx2", "f32_global_avgpool__scalar", ...
std::string maxpool2d_kernel_name(const Pool2dParams& p, Isa isa);
std::string avgpool2d_kernel_name(const Pool2dParams& p, Isa isa);
std::string global_avgpool_kernel_name(Isa isa);

// ---- AVX2 (pooling_avx2.cpp): call only when isa_supported(Isa::kAvx2) ------------------------
// One output row segment of 8 * blocks outputs of a K×K stride-2 max pool (K = 3 or 2): rows[r]
// points at the first window's leftmost input column in the r-th input row inside the input
// (nrows >= 1, top to bottom); reads only the windows' columns, [0, 16 * blocks + K - 3].
void f32_maxpool2d_3x3s2_row__avx2(const float* const* rows, int64_t nrows, int64_t blocks, float* out);
void f32_maxpool2d_2x2s2_row__avx2(const float* const* rows, int64_t nrows, int64_t blocks, float* out);
// Fewer than 8 outputs of a 2×2 stride-2 max pool (a row's rest after the blocks of 8, or all of
// a small map's row: LeNet's 10x10 -> 5x5), 4 at a time in xmm, then one by one; reads only the
// windows' columns, [0, 2 * count).
void f32_maxpool2d_2x2s2_rest__avx2(const float* const* rows, int64_t nrows, int64_t count, float* out);
// ---- AVX-512 (pooling_avx512.cpp): call only when avx512_enabled() ---------------------------
// `count` outputs of a K×3 stride-2 max pool (any count: 16 per zmm, the last block masked),
// rows as above; reads only the windows' columns, [0, 2 * count].
void f32_maxpool2d_3x3s2_row__avx512(const float* const* rows, int64_t nrows, int64_t count, float* out);
// Planes [c0, c0 + 16) ∩ [0, planes) of a max pool with any geometry, 16 planes in the zmm
// lanes (f32_maxpool2d takes it for small planes; scratch slot 2).
void f32_maxpool2d_c16__avx512(const Pool2dParams& p, int64_t c0, const float* x, float* y);
// The same for any kernel size with stride_w 1 or 2 (max and average; average divides each
// window's sum, taken in window order, by `divisor`).
void f32_maxpool2d_row__avx2(const float* const* rows, int64_t nrows, int64_t kernel_w, int64_t stride_w,
                             int64_t blocks, float* out);
void f32_avgpool2d_row__avx2(const float* const* rows, int64_t nrows, int64_t kernel_w, int64_t stride_w,
                             int64_t blocks, float divisor, float* out);
// Mean of n floats, accumulated in double.
float f32_global_avgpool_plane__avx2(const float* x, int64_t n);

}  // namespace xnn::kernels
