// im2col straight into the packed GEMM's B panel layout (f32_gemm_packed_b in gemm.h), for
// convolutions that run as weights × column matrix: each panel holds NR consecutive output
// positions; its row r is tap r = (c, ki, kj) of those positions (the input pixel, or 0 in the
// padding). Writing the panels directly replaces the row-major im2col matrix *and* the GEMM's
// per-call packing of it: the column matrix is built once, in the order the micro-kernel reads it.
#pragma once
#include <cstdint>

namespace xnn::kernels {

// One group of one image, NCHW: input [channels][in_h][in_w]; output positions p = oy·out_w + ox.
struct Im2colGeometry {
  int64_t channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_t = 0, pad_l = 0;
  int64_t depth() const { return channels * kernel_h * kernel_w; }  // K, the rows of a panel
};

// Output positions per im2col block for a column depth k: ~96 Ki floats (384 KB) of columns, so
// a block stays in L2 while the GEMM reads it; 64..1024 of them, a multiple of 16; at most n.
int64_t im2col_block_columns(int64_t k, int64_t n);

// Positions [p0, p0 + count) into ceil(count / nr) panels of depth() rows × nr floats at
// `panels` (panel j at panels + j·depth()·nr). Lanes past `count` in the last panel are 0.
void f32_im2col_panels__scalar(const Im2colGeometry& g, const float* input, int64_t p0, int64_t count, int64_t nr,
                               float* panels);

// ---- AVX-512 (im2col_avx512.cpp): call only when avx512_enabled() ------------------------------
// nr = 16: each panel row is one masked gather of 16 pixels (offsets relative to the tap's
// channel and kernel offset; lanes whose pixel falls in the padding masked to 0).
void f32_im2col_panels16__avx512(const Im2colGeometry& g, const float* input, int64_t p0, int64_t count,
                                 float* panels);

}  // namespace xnn::kernels
