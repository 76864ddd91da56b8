// fp32 direct convolution feeding a max pool, computed in bands of rows so the convolution's
// output never leaves the cache: a network's stem and the pool after it (SqueezeNet's 3->64 3×3
// stride 2 and 3×3 stride-2 pool, ResNet's 7×7 stem and pool), whose 3.2 MB intermediate is
// otherwise written out by the convolution and read back from L3 by the pool.
//
// Per thread: a contiguous range of pool output rows, walked in bands. For each band the stem
// kernel (f32_conv_direct_stem__avx512, through DirectConvParams::out_channel_stride and
// out_row0) computes the convolution rows the band's windows read and it has not computed yet
// into a per-thread buffer (scratch slot 3: [channels][band rows][conv out_w]), the rows the
// previous band still shares (pool kernel − stride of them) are kept by moving them to the
// buffer's front, and the pool's row kernels (f32_maxpool2d_plane) read the band from there.
// Results equal the two ops run one after the other, bit for bit: every convolution output and
// every window maximum is computed by the same code in the same order.
// AVX-512 only (conv_direct_maxpool_supported): the stem kernel is the one that writes bands.
#pragma once
#include <cstdint>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/direct_conv.h"
#include "engine/kernels/pooling.h"

namespace xnn::kernels {

// Whether the fused driver runs this pair: the stem kernel takes the convolution (direct_conv_stem)
// and the pool reads all of it (planes = out_channels, in_h × in_w = out_h × out_w).
bool conv_direct_maxpool_supported(const DirectConvParams& conv, const Pool2dParams& pool, Isa isa);

// Pool output rows per band: as many as keep the band's convolution rows (all channels) within
// about 384 KB, at least one.
int64_t conv_direct_maxpool_band_rows(const DirectConvParams& conv, const Pool2dParams& pool);

// One image: input [conv.in_channels][in_h][in_w], weights [out_channels][in_channels][k][k],
// bias [out_channels] or null, act the convolution's activation; output [out_channels][pool
// out_h][pool out_w].
void f32_conv_direct_maxpool(const DirectConvParams& conv, const float* weights, const float* bias,
                             const Activation& act, const Pool2dParams& pool, const float* input, float* output,
                             ThreadPool* thread_pool, Isa isa);

}  // namespace xnn::kernels
