// Int8 2-D convolution (NCHW, one image per call) on top of the int8 GEMM (qgemm.h), in the
// scheme of requantize.h: uint8 input with zero point x_zp, int8 OIHW weights (symmetric per
// output channel), int32 bias, per-output-channel requantisation and clamp (fused ReLU/ReLU6).
//
// Semantics: qs8_conv2d_reference is the definition. For output channel o of group g and output
// position (oy, ox)
//   acc = bias[o] + Σ_{c, ki, kj} W[o][c][ki][kj] · (in(g·Cin/G + c, oy·sh − pt + ki·dh,
//                                                          ox·sw − pl + kj·dw) − x_zp)
// where positions outside the image read as x_zp (so padding contributes nothing), then
// y = requantize(acc, rq.multiplier[o], ...). qs8_conv2d returns the same bytes.
//
// Algorithms (fixed by the shape when the weights are packed):
//   1×1, stride 1, no padding: GEMM on the input as is, per group (X = input [Cin/G × H·W]);
//   implicit GEMM (any stride): the input is copied once with its padding (x_zp), split into
//   sh × sw phase planes of Hs × Ws (phase (a, b) holds padded rows a, a + sh, ... and columns
//   b, b + sw, ...); X's row (c, ki, kj) is then one phase shifted by (ki·dh / sh, kj·dw / sw),
//   read in place through row offsets (qs8_gemm_rows) over oh × Ws columns, so nothing is
//   expanded kh·kw times. The Ws − ow columns past each output row's end are computed and
//   dropped when the result is copied out (2 of 58 on 56×56 maps at stride 1, 1 of 29 at
//   stride 2); the path is taken while they are at most a quarter of Ws;
//   implicit GEMM on 4-channel-interleaved input (the same shapes, input channels per group a
//   multiple of 4, weights packed for the 512-bit VNNI kernels): the phase planes are stored 4
//   channels per pixel ([C/4][phase][Hs][Ws][4]) and the weights' K reordered to (tap, channel),
//   so a group of 4 consecutive k is 4 channels at one tap and its 16 columns are 64 contiguous
//   bytes of the copy: qs8_gemm_interleaved reads them in place and X is never packed (the plain
//   implicit path packs oh × Ws × K bytes per call, kh·kw times the input);
//   anything else: uint8 im2col (rows (c, ki, kj), padding = x_zp) in blocks of output columns
//   that stay in L2 (per-thread scratch, slot 2), each followed by the GEMM of that block.
//   Threads take whole blocks when there are enough of them, else each block's GEMM is split.
// Depthwise 3×3 / 5×5 layers have their own direct kernel (qdepthwise.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/qgemm.h"
#include "engine/kernels/requantize.h"

namespace xnn::kernels {

struct QConvShape {
  int64_t in_channels = 0, in_h = 0, in_w = 0, out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  int64_t groups = 1;

  int64_t out_h() const { return (in_h + pad_t + pad_b - dilation_h * (kernel_h - 1) - 1) / stride_h + 1; }
  int64_t out_w() const { return (in_w + pad_l + pad_r - dilation_w * (kernel_w - 1) - 1) / stride_w + 1; }
  int64_t in_per_group() const { return in_channels / groups; }
  int64_t out_per_group() const { return out_channels / groups; }
  int64_t depth() const { return in_per_group() * kernel_h * kernel_w; }  // the GEMM's K
};

// Throws xnn::Error naming the field unless every size is positive, channels divide by groups,
// pads are >= 0 and the output is not empty.
void check_qconv_shape(const QConvShape& s);

// Weights OIHW [out_channels][in_channels / groups][kernel_h][kernel_w] and bias [out_channels]
// (or null) packed per group for one ISA, with the shape they were packed for.
class PackedQConvWeights {
 public:
  PackedQConvWeights(const QConvShape& s, const int8_t* weights, const int32_t* bias, Isa isa);
  const QConvShape& shape() const { return shape_; }
  const PackedQs8Weights& group(int64_t g) const { return groups_[static_cast<size_t>(g)]; }
  // 1×1, stride 1, no padding: the input is the GEMM's X as it is.
  bool direct_gemm() const { return direct_; }
  // Stride 1 otherwise, when the implicit GEMM's extra columns are few: X's rows are views of
  // the padded input at these K byte offsets (group 0's; a group adds its planes' offset).
  bool implicit_gemm() const { return !implicit_offsets_.empty(); }
  const int64_t* implicit_offsets() const { return implicit_offsets_.data(); }
  // The interleaved form of the implicit GEMM (then implicit_gemm() is false): per group of 4 k
  // (tap, 4 channels), its byte offset in group 0's interleaved copy.
  bool interleaved_gemm() const { return !interleaved_offsets_.empty(); }
  const int64_t* interleaved_offsets() const { return interleaved_offsets_.data(); }
  // e.g. "qs8_conv_im2col+qs8_gemm_6x16c2__avx2" (the first group's GEMM kernel),
  // "qs8_conv_implicit4c+qs8_gemm_16x16c4_interleaved__avx512vnni".
  std::string kernel_name() const;

 private:
  QConvShape shape_;
  bool direct_ = false;
  std::vector<int64_t> implicit_offsets_, interleaved_offsets_;
  std::vector<PackedQs8Weights> groups_;
};

// input [in_channels][in_h][in_w], output [out_channels][out_h][out_w]; rq.multiplier has
// out_channels entries. Steady state allocates nothing.
void qs8_conv2d(const PackedQConvWeights& w, const uint8_t* input, uint8_t x_zero_point, const QRequant& rq,
                uint8_t* output, ThreadPool* pool);

// The definition: direct loops, int64 accumulation (checked to fit int32), requantize().
void qs8_conv2d_reference(const QConvShape& s, const int8_t* weights, const int32_t* bias, const uint8_t* input,
                          uint8_t x_zero_point, const QRequant& rq, uint8_t* output);

}  // namespace xnn::kernels
