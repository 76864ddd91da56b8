// fp32 NCHW direct convolution for few input channels (group 1): a network's first layer on
// 1-channel or RGB images, where im2col + GEMM has K = C_in·k² of 9-27 and spends its time
// packing rather than multiplying. 3×3, 5×5 and 7×7, stride 1 and 2, dilation 1, any padding;
// bias, residual and activation fused:  out = act(conv(input, weights) + bias + residual).
//
// Design. Output channel co is the sum over input channels ci of a depthwise-style pass of
// filter (co, ci) over input plane ci, so this driver reuses the depthwise building blocks
// (depthwise.h): the padded rows of every input channel are built once per block of output
// rows and shared by all output channels; each (co, ci) pass is one call of the depthwise row
// kernel, the first with the bias (and residual), the others accumulating into the output rows
// (residual = output), the last with the activation. Tasks are (block of output rows, block of
// output channels); the blocks of output channels exist only to feed a second thread when
// there are few row blocks. Work per output is C_in·k² FMAs in registers plus C_in re-reads of
// the row being accumulated, which is why this pays for few input channels and not for deep
// layers (f32_conv_direct_pays). On AVX-512 CPUs a convolution of at most 16 input channels
// runs the c16 kernel below instead (output channels in the lanes, one pass over the output).
#pragma once
#include <cstdint>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

struct DirectConvParams {
  int64_t in_channels = 0, out_channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel = 3;  // 3, 5 or 7
  int64_t stride = 1;  // 1 or 2
  int64_t pad_t = 0, pad_l = 0;
  // The output's layout, for a caller that takes a band of rows into its own buffer (only the
  // stem kernel, direct_conv_stem, honours them): output row oy of channel co at
  // output + co·out_channel_stride + (oy − out_row0)·out_w; 0 = out_h·out_w (a plain plane).
  int64_t out_channel_stride = 0, out_row0 = 0;
};

// Kernel 3, 5 or 7, stride 1 or 2, dilation 1 (the depthwise row kernels' set).
bool f32_conv_direct_supported(int64_t kernel, int64_t stride, int64_t dilation);

// One image: input [in_channels][in_h][in_w], weights [out_channels][in_channels][k][k], bias
// [out_channels] or null, residual (output's layout) or null and may be `output` itself; output
// [out_channels][out_h][out_w]. Rows/columns beyond the input (bottom/right padding) read as 0.
void f32_conv_direct(const DirectConvParams& p, const float* input, const float* weights, const float* bias,
                     const float* residual, const Activation& act, float* output, ThreadPool* pool, Isa isa);

// Whether the direct kernel should take this group-1 convolution (square kernel, equal strides,
// dilation 1) rather than im2col + GEMM or Winograd: the CPU backend's and the trainer's rule
// (direct_conv.cpp has the measurements behind it).
bool f32_conv_direct_pays(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride, int64_t out_h,
                          int64_t out_w);

// "f32_conv3x3s2_direct__avx2", "f32_conv5x5s1_direct__scalar", ...; with the parameters, the
// AVX-512 variants are named "f32_conv5x5s1_direct_c16__avx512" and (at most 4 input channels)
// "f32_conv3x3s2_direct_4x64__avx512".
std::string conv_direct_kernel_name(int64_t kernel, int64_t stride, Isa isa);
std::string conv_direct_kernel_name(const DirectConvParams& p, Isa isa);

// AVX-512 (direct_conv_avx512.cpp): 16 output channels in the zmm lanes, each tap one FMA of a
// broadcast input value with a weight vector, all C_in·k² taps of a pixel in one register, the
// output written once through 16×16 transposes. f32_conv_direct takes it whenever
// avx512_enabled(), isa is kAvx2 and C_in <= 16 (direct_conv_c16); one call computes output
// channels [co_begin, co_end) (in blocks of 16 from co_begin, over one padded copy of the input
// band) and output rows [oh0, oh1).
bool direct_conv_c16(const DirectConvParams& p, Isa isa);
// Output rows per call of the AVX-512 kernels (a band) whose zero-padded input rows, all
// channels, take about 64 KB (L1-sized), at least one.
int64_t conv_direct_band_rows(const DirectConvParams& p);

// AVX-512 (direct_conv_stem_avx512.cpp), for at most 4 input channels (RGB and grey stems):
// output pixels in the lanes, register tiles of 4 output channels × 64 pixels of a row, stored
// straight into the NCHW output. f32_conv_direct takes it in place of the c16 kernel when
// direct_conv_stem holds; the arguments are the c16 kernel's.
bool direct_conv_stem(const DirectConvParams& p, Isa isa);
void f32_conv_direct_stem__avx512(const DirectConvParams& p, int64_t co_begin, int64_t co_end, int64_t oh0,
                                  int64_t oh1, const float* input, const float* weights, const float* bias,
                                  const float* residual, const Activation& act, float* output);
void f32_conv_direct_c16__avx512(const DirectConvParams& p, int64_t co_begin, int64_t co_end, int64_t oh0, int64_t oh1,
                                 const float* input, const float* weights, const float* bias, const float* residual,
                                 const Activation& act, float* output);

}  // namespace xnn::kernels
