// fp32 1×1 convolution feeding a depthwise convolution (and a depthwise convolution feeding a
// 1×1 one, f32_dwconv_conv1x1 below), computed in bands of rows so the intermediate tensor never
// leaves the cache: the expansion and depthwise pair of MobileNet-style
// inverted bottlenecks (MobileNetV2/V3, EfficientNet), whose expanded tensor (96×112×112: 4.8 MB)
// is written to memory by the 1×1 GEMM and read back by the depthwise conv when run as two ops.
//
// Per thread: a contiguous range of depthwise output rows, walked in bands. For each band the 1×1
// GEMM computes the input rows it needs and has not computed yet into a per-thread buffer
// (scratch slot 3: [channels][band rows][in_w]), the rows the previous band still shares (k − s
// of them) are kept by moving them to the buffer's front, and the AVX-512 depthwise kernel
// (f32_dwconv_c16__avx512) reads the band from there (DepthwiseParams::in_channel_stride,
// in_row0). Threads recompute only the shared rows at their range's start.
//
// Results are those of f32_gemm followed by f32_dwconv up to fp32 rounding: each output of
// either stage is summed in the same order, except where a band's last GEMM panel is narrow
// enough for the column kernel (f32_gemm_16x8__avx512 splits k into two chains for <= 4 columns).
// AVX-512 only (conv1x1_dwconv_supported): the AVX2 depthwise kernels read whole planes.
#pragma once
#include <cstdint>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/depthwise.h"
#include "engine/kernels/gemm.h"

namespace xnn::kernels {

// The 1×1 stage: weights packed as A, optional bias, activation, and (after a depthwise stage
// only: f32_dwconv_conv1x1) a residual in its output's layout.
struct Conv1x1Stage {
  const PackedA* weights = nullptr;
  const float* bias = nullptr;
  Activation act;
  const float* residual = nullptr;
};

// The depthwise stage: geometry (in_channel_stride and in_row0 left 0: the driver sets them),
// weights [channels][k][k], bias [channels] or null, residual (output layout) or null.
struct DwconvStage {
  DepthwiseParams params;
  const float* weights = nullptr;
  const float* bias = nullptr;
  const float* residual = nullptr;
  Activation act;
};

// Whether the fused driver runs this pair: AVX-512 depthwise kernels (isa kAvx2 on a CPU with
// AVX-512, not under XNN_ISA=avx2), weights packed for the zmm GEMM.
bool conv1x1_dwconv_supported(const PackedA& weights, const DepthwiseParams& dw, Isa isa);

// Output rows of the depthwise stage per band: as many as keep the band's input rows (all
// channels) within about 384 KB, at least one.
int64_t conv1x1_dwconv_band_rows(const DepthwiseParams& dw);

// One image: input [weights.depth()][in_h][in_w], output [channels][out_h][out_w].
void f32_conv1x1_dwconv(const Conv1x1Stage& expand, const DwconvStage& dw, const float* input, float* output,
                        ThreadPool* pool);

// The other order, a depthwise conv whose output only a 1x1 conv reads (an inverted bottleneck's
// depthwise and projection): per band of depthwise output rows (all channels, about 384 KB, scratch
// slot 3) the depthwise kernel writes the band (DepthwiseParams::out_channel_stride, out_row0)
// and the 1x1 GEMM reads it in place for the same rows of its output. The projection's small M
// (24-32 output channels) makes it bound by reading its input, which then comes from L2.
// The depthwise stage has no residual.
bool dwconv_conv1x1_supported(const DepthwiseParams& dw, const PackedA& weights, Isa isa);
int64_t dwconv_conv1x1_band_rows(const DepthwiseParams& dw);
// One image: input [channels][in_h][in_w], output [project.weights->rows()][out_h][out_w].
void f32_dwconv_conv1x1(const DwconvStage& dw, const Conv1x1Stage& project, const float* input, float* output,
                        ThreadPool* pool);

}  // namespace xnn::kernels
