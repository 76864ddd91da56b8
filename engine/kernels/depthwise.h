// fp32 NCHW depthwise convolution (group = channels, one filter per channel), 3×3, 5×5 and 7×7,
// stride 1 and 2, dilation 1, any padding; bias, residual and activation fused in the epilogue:
//   out = act(conv(input, weights) + bias + residual).
//
// Design. Work is split over (channel, block of output rows) tasks. A task copies the input rows
// it needs into a per-thread padded buffer (scratch slot 2), zero rows above/below the image and
// zero columns left/right of it, so the row kernels never test a border and never read outside
// the input. For stride 2 the buffer stores each row deinterleaved, even columns then odd ones:
// tap kw of output column x is then E[x + kw/2] or O[x + kw/2], a plain unaligned load, so the
// stride-2 kernels cost the same loads as the stride-1 ones. Rows are copied in chunks just
// before the row-kernel call that reads them (~1K outputs per call), so they are still in L1; a
// small plane (14×14, 7×7) is one chunk, which keeps per-call overhead off the late layers.
//
// The row kernels compute groups of R output rows (R = 4) along the output width, 8 outputs per
// ymm (5×5 and 7×7: 16 per step): each padded input row is loaded once per group and feeds every output
// row of the group that uses it, which roughly halves the loads per FMA compared with one row at
// a time. The last partial vector of a row is computed in full from the padded buffer and stored
// masked. The scalar kernels share the buffer and the summation order (bias, then taps row by
// row).
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

struct DepthwiseParams {
  int64_t channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel = 3;  // 3, 5 or 7
  int64_t stride = 1;  // 1 or 2
  int64_t pad_t = 0, pad_l = 0;
  // Where the input rows live (honoured by f32_dwconv_c16__avx512 only, which a fused producer
  // feeds a band of rows at a time): image row r of channel c at input + c * in_channel_stride +
  // (r - in_row0) * in_w. Defaults: whole planes.
  int64_t in_channel_stride = 0;  // 0: in_h * in_w
  int64_t in_row0 = 0;
  // Likewise for the output rows (a fused consumer reads them a band at a time): output row r of
  // channel c at output + c * out_channel_stride + (r - out_row0) * out_w; no residual then.
  int64_t out_channel_stride = 0;  // 0: out_h * out_w
  int64_t out_row0 = 0;
};

// Kernel 3, 5 or 7, stride 1 or 2, dilation 1.
bool f32_dwconv_supported(int64_t kernel, int64_t stride, int64_t dilation);

// One image: input [channels][in_h][in_w], weights [channels][kernel][kernel], bias [channels]
// or null, residual (output's layout) or null and may be `output` itself; output
// [channels][out_h][out_w]. Rows/columns beyond the input (bottom/right padding) read as zero.
void f32_dwconv(const DepthwiseParams& p, const float* input, const float* weights, const float* bias,
                const float* residual, const Activation& act, float* output, ThreadPool* pool, Isa isa);

// "f32_dwconv3x3s1__avx2", "f32_dwconv5x5s2__scalar", ...; with the parameters, the
// channels-in-lanes variants are named "f32_dwconv7x7s1c8__avx2" (AVX2, small planes) and
// "f32_dwconv3x3s2c16__avx512".
std::string dwconv_kernel_name(int64_t kernel, int64_t stride, Isa isa);
std::string dwconv_kernel_name(const DepthwiseParams& p, Isa isa);

// Consecutive output rows of one channel, read from the padded buffer.
struct DwRows {
  int64_t kernel = 3, stride = 1;
  const float* in = nullptr;   // padded row holding the first tap row of the first output row
  int64_t in_stride = 0;       // floats between padded rows
  int64_t odd_offset = 0;      // stride 2: where the odd columns start within a padded row
  const float* weights = nullptr;  // kernel × kernel
  float bias = 0;
  const float* residual = nullptr;  // the rows' residual (stride out_w), or null
  float* out = nullptr;             // the rows (stride out_w)
  int64_t out_w = 0;
  int64_t rows = 1;
};
// Reads columns [0, round_up(out_w, 8) + kernel - 1) of each padded row (stride 1; stride 2:
// [0, round_up(out_w, 8) + (kernel - 1) / 2) of each half).
void f32_dwconv_rows__avx2(const DwRows& r, const Activation& act);

// One row of the padded buffer: padded column q holds input column q - pad_l (zero outside
// [0, in_w)). Stride 1 stores columns [0, row_floats) in order; stride 2 stores the even
// columns [0, 2 * odd_offset) at 0 and the odd ones at odd_offset (row_floats = 2 * odd_offset).
// row_floats and odd_offset are multiples of 8.
struct DwPadRow {
  int64_t stride = 1, in_w = 0, pad_l = 0, row_floats = 0, odd_offset = 0;
};
// Padded rows for input rows [ih, ih + count) of a plane of in_h rows (rows outside are zero),
// stored row_floats apart from dst.
void f32_dwconv_pad_rows__avx2(const DwPadRow& r, const float* plane, int64_t in_h, int64_t ih, int64_t count,
                               float* dst);

// Small planes (output rows of at most 4 columns, or 8 with 5×5 and 7×7 kernels:
// dwconv_channels_in_lanes) waste most lanes of a row kernel and most taps on padding, so on
// AVX2 they run with 8 channels in the lanes instead: a block's input transposed to a
// zero-padded HWC8 buffer (in_h8 × in_w8 pixels × 8), its weights to [k·k][8] and its bias to 8
// floats; each output pixel is a chain of 8-wide FMAs over the kernel rows that meet the image;
// the result, with the residual already transposed into out8 (has_residual) and the activation
// applied, is transposed back. The scalar path keeps the row kernels.
struct DwChannelBlock {
  int64_t kernel = 3, stride = 1, pad_t = 0;
  int64_t in_h = 0;             // the image's rows (taps below it are skipped)
  int64_t in_w8 = 0;            // pixels per padded row of in8 (column 0 = padded column 0)
  int64_t out_h = 0, out_w = 0;
  const float* in8 = nullptr;   // [rows][in_w8][8], padded row 0 = input row -pad_t
  const float* w8 = nullptr;    // [k * k][8]
  const float* bias8 = nullptr; // [8]
  bool has_residual = false;    // out8 holds the residual on entry
  float* out8 = nullptr;        // [out_h][out_w][8]
};
bool dwconv_channels_in_lanes(const DepthwiseParams& p, Isa isa);
void f32_dwconv_c8_block__avx2(const DwChannelBlock& b, const Activation& act);

// AVX-512 (depthwise_avx512.cpp): 16 channels in the zmm lanes at every plane size and stride,
// through a ring of padded HWC16 input rows and 16×16 transposes in and out (design in that
// file). f32_dwconv takes it whenever avx512_enabled() and isa is kAvx2 (dwconv_c16); one call
// computes channels [c0, c0 + 16) ∩ [0, channels) and output rows [oh0, oh1).
bool dwconv_c16(const DepthwiseParams& p, Isa isa);
void f32_dwconv_c16__avx512(const DepthwiseParams& p, int64_t c0, int64_t oh0, int64_t oh1, const float* input,
                            const float* weights, const float* bias, const float* residual, const Activation& act,
                            float* output);

// The pieces f32_dwconv is built from, for drivers that reuse them (the direct convolution of
// few input channels, direct_conv.h): the padded-row layout for p's geometry, the padded rows
// and the row kernels on either ISA (scalar: same buffer, same summation order), and how many
// output rows one row-kernel call should take (about 1K outputs, multiple of 4).
DwPadRow dwconv_pad_row(const DepthwiseParams& p);
void f32_dwconv_pad_rows(const DwPadRow& r, const float* plane, int64_t in_h, int64_t ih, int64_t count, float* dst,
                         Isa isa);
void f32_dwconv_rows(const DwRows& r, const Activation& act, Isa isa);
int64_t dwconv_chunk_rows(int64_t out_w);

}  // namespace xnn::kernels
