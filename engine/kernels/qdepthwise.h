// Int8 NCHW depthwise convolution (one filter per channel), 3×3, 5×5 and 7×7, stride 1 and 2,
// dilation 1, any padding, in the scheme of engine/kernels/requantize.h: uint8 input with zero
// point x_zp, int8 weights [channels][k][k] (symmetric per channel), int32 bias, per-channel
// requantisation to uint8 with the clamp [qmin, qmax] (fused ReLU / ReLU6).
//
// (DepthwiseParams is the fp32 kernel's struct; it is only read here.)
//
// Semantics: qs8_dwconv_reference is the definition. For channel c and output (oy, ox)
//   acc = bias[c] + Σ_{kh,kw} w[c][kh][kw] · (in(oy·s − pad_t + kh, ox·s − pad_l + kw) − x_zp)
// where positions outside the image read as x_zp (so padding contributes nothing, as a real zero
// does), then y = requantize(acc, rq.multiplier[c], ...). The AVX2 kernels return the same bytes.
//
// Design (mirrors the fp32 depthwise.h). Tasks are (channel, block of output rows). A task copies
// the input rows it needs into a per-thread padded uint8 buffer (scratch slot 2), padding with
// x_zp, just before the rows are used, so the row kernels never test a border. With padding =
// x_zp the zero point costs nothing per tap: acc = (bias − x_zp·Σw) + Σ w·in_padded, the first
// term the accumulators' initial value. The row kernels widen 16 padded
// columns to int16 per load (vpmovzxbw) and multiply with vpmaddwd, two taps of one kernel row
// per 32-bit lane (exact: |w·x| <= 128·255):
//   stride 1, 16 outputs per step: the load at padded column x + 2t holds the pairs
//     (x + 2i + 2t, x + 2i + 2t + 1): taps (2t, 2t + 1) of even output x + 2i, and taps
//     (2t − 1, 2t) of odd output x + 2i + 1. Each load feeds both with different weight pairs
//     ((w[2t], w[2t+1]) and (w[2t−1], w[2t]), w outside the row = 0): (k + 1) / 2 loads per
//     kernel row. The even and odd results interleave back into order as int16 pairs.
//   stride 2, 8 outputs per vector: the load at padded column 2x + 2t holds taps (2t, 2t + 1) of
//     outputs x..x+7 directly.
// Each padded row feeds every output row of a group of R rows that uses it (as fp32). The
// requantisation runs on the accumulators; the last partial vector of a row is computed from
// the padded buffer in full and only its valid bytes are stored. On CPUs with AVX512-VNNI and
// VBMI the row kernels are qs8_dwconv*__avx512vnni instead: 16 outputs per zmm, each lane's 4
// taps gathered by one byte permute and multiplied by one vpdpbusd (qdepthwise_avx512vnni.cpp).
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/depthwise.h"
#include "engine/kernels/requantize.h"

namespace xnn::kernels {

// Kernel 3, 5 or 7, stride 1 or 2, dilation 1.
bool qs8_dwconv_supported(int64_t kernel, int64_t stride, int64_t dilation);

// One image: input [channels][in_h][in_w] uint8, weights [channels][kernel][kernel] int8, bias
// [channels] int32 or null, output [channels][out_h][out_w] uint8; rq.multiplier has `channels`
// entries. Rows/columns beyond the input (bottom/right padding) read as x_zp. p as for f32_dwconv.
// Isa::kScalar (or a CPU without AVX2) runs the reference loops, split over the same tasks.
void qs8_dwconv(const DepthwiseParams& p, const uint8_t* input, uint8_t x_zero_point, const int8_t* weights,
                const int32_t* bias, const QRequant& rq, uint8_t* output, ThreadPool* pool, Isa isa);

// The definition (direct loops, int64 accumulation checked to fit int32).
void qs8_dwconv_reference(const DepthwiseParams& p, const uint8_t* input, uint8_t x_zero_point, const int8_t* weights,
                          const int32_t* bias, const QRequant& rq, uint8_t* output);

// Whether Isa::kAvx2 runs the VNNI row kernels here: vnni512_enabled() and AVX512-VBMI.
bool qs8_dwconv_vnni_enabled();

// "qs8_dwconv3x3s1__avx512vnni", "qs8_dwconv3x3s1__avx2", "qs8_dwconv5x5s2__scalar", ...
std::string qs8_dwconv_kernel_name(int64_t kernel, int64_t stride, Isa isa);

namespace internal {

// Consecutive output rows of one channel, read from the padded buffer.
struct QDwRows {
  int64_t kernel = 3, stride = 1;
  const uint8_t* in = nullptr;  // padded row holding the first tap row of the first output row
  int64_t in_stride = 0;        // bytes between padded rows
  // Per kernel row kh, (kernel + 1) / 2 weight pairs (low int16 = first tap) for the even /
  // direct outputs, then as many for the odd outputs of stride 1 (see the header comment).
  const int32_t* weight_pairs = nullptr;
  // For the VNNI kernel: per kernel row kh, (kernel + 3) / 4 int32 of 4 int8 taps each (taps
  // 4q..4q+3 of the row, 0 past its end).
  const int32_t* weight_quads = nullptr;
  int32_t init = 0;  // bias − x_zp·Σw
  float multiplier = 1, lower = 0, upper = 255;  // requant_lower / requant_upper
  int32_t zero_point = 0;
  uint8_t qmin = 0;  // lower + zero_point
  uint8_t* out = nullptr;  // the rows (stride out_w)
  int64_t out_w = 0;
  int64_t rows = 1;
};

// The padded row width (a multiple of 16) the AVX2 row kernels read: columns
// [0, round_up(out_w, 16) + kernel − 1) for stride 1, [0, 2·round_up(out_w, 16) + kernel − 1) for 2.
// Padded column q holds input column q − pad_l, x_zp outside the image.
int64_t qs8_dwconv_padded_width(int64_t out_w, int64_t kernel, int64_t stride);

// AVX2 (qdepthwise_avx2.cpp): the row kernels, and the padded rows (`width` bytes apart) of
// input rows [ih, ih + count) of one in_h × in_w plane.
void qs8_dwconv_rows__avx2(const QDwRows& r);
// AVX512-VNNI + VBMI (qdepthwise_avx512vnni.cpp; only when qs8_dwconv_vnni_enabled()): the same
// rows from the same padded buffer, 16 outputs per vpdpbusd.
void qs8_dwconv_rows__avx512vnni(const QDwRows& r);
// qs8_dwconv's argument checks (throws an Error naming `what`), shared with qs8_dwconv_flat.
void qs8_dwconv_check_params(const DepthwiseParams& p, const QRequant& rq, const int32_t* bias, const char* what);
void qs8_dwconv_pad_rows__avx2(const uint8_t* plane, int64_t in_h, int64_t in_w, int64_t pad_l, uint8_t x_zero_point,
                               int64_t ih, int64_t count, int64_t width, uint8_t* dst);

}  // namespace internal
}  // namespace xnn::kernels
