// Direct convolution of few input channels over the depthwise building blocks (design in
// direct_conv.h).
#include "engine/kernels/direct_conv.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/kernels/depthwise.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {

bool f32_conv_direct_supported(int64_t kernel, int64_t stride, int64_t dilation) {
  return f32_dwconv_supported(kernel, stride, dilation);
}

// Measured single-thread ratios im2col+GEMM / direct on the 2-core VM (AVX-512 GEMM tiles, so
// conservative for AVX2-only CPUs): C_in 1 3x3 28x28 6.6x, C_in 1 5x5 3.4x, C_in 6 5x5 14x14
// 2.2x, C_in 12 5x5 28x28 2.6x, C_in 16 5x5 7x7 1.3x, C_in 4 3x3 s2 -> 14x14 1.0x; against:
// C_in 8 3x3 s2 0.96x, C_in 16 3x3 s2 0.8x, C_in 3 7x7 s2 224x224 0.87x (the GEMM's wide tiles
// win on large planes with many output channels), and 3x3 stride 1 beyond C_in 4 goes to
// Winograd (2.5-6x faster than direct).
bool f32_conv_direct_pays(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride, int64_t out_h,
                          int64_t out_w) {
  if (!f32_conv_direct_supported(kernel, stride, 1)) return false;
  const bool small_plane = out_h * out_w <= 32 * 32;
  if (in_channels <= 4) {
    if (stride == 1 || out_channels <= 16 || small_plane) return true;
    // The AVX-512 kernel (16 output channels in the lanes) also wins the large stride-2 RGB
    // stems: --tune picked it 3 times out of 3 for MobileNetV2's, EfficientNet-B0's (3->32 3x3),
    // ShuffleNetV2's (3->24) and ResNet-18's (3->64 7x7) at 224x224; for SqueezeNet's 3->64 3x3
    // too (3 of 3, min 0.47-0.63 ms against im2col's 0.52-0.69) since it takes two blocks of
    // 16 output channels per pass (before, --tune picked im2col + GEMM there). The rule reads
    // the CPU (avx512_enabled, which XNN_ISA caps), not a caller's Isa: a caller forcing
    // Isa::kScalar on an AVX-512 CPU gets the scalar direct path for these stems, correct but
    // slower than im2col would be.
    return avx512_enabled();
  }
  return kernel >= 5 && stride == 1 && in_channels <= 16 && small_plane;
}

bool direct_conv_c16(const DirectConvParams& p, Isa isa) {
  return isa == Isa::kAvx2 && isa_supported(Isa::kAvx2) && avx512_enabled() && p.in_channels <= 16;
}

// Measured one thread, min of 50 (stem / c16): 3->16 3x3 s2 224x224 104 / 174 us, 3->64 335 / 568,
// 3->32 205 / 247, 3->64 7x7 s2 1411 / 1940, LeNet's 1->6 5x5 at 28x28 3.3 / 7.5, 1->16 3x3 at
// 28x28 3.3 / 5.1; on an 8-pixel row most lanes idle (3->32 at 8x8 2.5 / 1.6), and from 6 input
// channels the c16 kernel's shared broadcasts win (LeNet's 6->16 5x5 5.5-6.6 / 8.5-9.7).
bool direct_conv_stem(const DirectConvParams& p, Isa isa) {
  return direct_conv_c16(p, isa) && p.in_channels <= 4 && p.out_w > 8;
}

std::string conv_direct_kernel_name(const DirectConvParams& p, Isa isa) {
  if (!direct_conv_c16(p, isa)) return conv_direct_kernel_name(p.kernel, p.stride, isa);
  const std::string k = std::to_string(p.kernel);
  return "f32_conv" + k + "x" + k + "s" + std::to_string(p.stride) +
         (direct_conv_stem(p, isa) ? "_direct_4x64__avx512" : "_direct_c16__avx512");
}

std::string conv_direct_kernel_name(int64_t kernel, int64_t stride, Isa isa) {
  const std::string k = std::to_string(kernel);
  const bool avx2 = isa == Isa::kAvx2 && isa_supported(Isa::kAvx2);
  return "f32_conv" + k + "x" + k + "s" + std::to_string(stride) + "_direct" + (avx2 ? "__avx2" : "__scalar");
}

int64_t conv_direct_band_rows(const DirectConvParams& p) {
  const int64_t k = p.kernel, s = p.stride;
  const int64_t row_floats = (p.out_w - 1) * s + k + 8 * s;
  const int64_t rows_in = std::max<int64_t>(k, 16384 / std::max<int64_t>(1, p.in_channels * row_floats));
  return std::max<int64_t>(1, (rows_in - k) / s + 1);
}

void f32_conv_direct(const DirectConvParams& p, const float* input, const float* weights, const float* bias,
                     const float* residual, const Activation& act, float* output, ThreadPool* pool, Isa isa) {
  XNN_CHECK(f32_conv_direct_supported(p.kernel, p.stride, 1),
            "f32_conv_direct: kernel must be 3, 5 or 7 and stride 1 or 2");
  XNN_CHECK(p.pad_t >= 0 && p.pad_l >= 0, "f32_conv_direct: negative padding");
  XNN_CHECK(p.in_channels > 0, "f32_conv_direct: no input channels");
  XNN_CHECK((p.out_channel_stride == 0 && p.out_row0 == 0) || direct_conv_stem(p, isa),
            "f32_conv_direct: an output layout other than plain planes needs the AVX-512 stem kernel");
  if (p.out_channels <= 0 || p.out_h <= 0 || p.out_w <= 0) return;
  const int64_t k = p.kernel, s = p.stride, cin = p.in_channels;
  if (direct_conv_c16(p, isa)) {
    // Bands of output rows whose padded input rows take at most ~64 KB, each task all output
    // channels of its band (one copy of the band's input for every block of 16); at least 4
    // tasks per thread, from more bands, else from splitting the channels into groups of blocks.
    const int64_t blocks = (p.out_channels + 15) / 16;
    int64_t band = conv_direct_band_rows(p);
    const int64_t threads = pool ? pool->threads() : 1;
    const int64_t tasks_wanted = threads > 1 ? 4 * threads : 1;
    band = std::min(band, std::max<int64_t>(1, (p.out_h + tasks_wanted - 1) / tasks_wanted));
    const int64_t bands = (p.out_h + band - 1) / band;
    int64_t groups = bands >= tasks_wanted ? 1 : std::min(blocks, (tasks_wanted + bands - 1) / bands);
    const int64_t blocks_per_group = (blocks + groups - 1) / groups;
    groups = (blocks + blocks_per_group - 1) / blocks_per_group;
    const auto kernel = direct_conv_stem(p, isa) ? f32_conv_direct_stem__avx512 : f32_conv_direct_c16__avx512;
    parallel_for(pool, groups * bands, [&](int64_t t) {
      const int64_t oh0 = (t % bands) * band, co_begin = (t / bands) * blocks_per_group * 16;
      const int64_t co_end = std::min(p.out_channels, co_begin + blocks_per_group * 16);
      kernel(p, co_begin, co_end, oh0, std::min(p.out_h, oh0 + band), input, weights, bias, residual, act, output);
    });
    return;
  }
  DepthwiseParams geometry{cin, p.in_h, p.in_w, p.out_h, p.out_w, k, s, p.pad_t, p.pad_l};
  const DwPadRow pad_row = dwconv_pad_row(geometry);

  // Row blocks of about 1K outputs keep one block's padded rows (C_in of them) and the output
  // rows being accumulated in L1; channel blocks only when row blocks cannot feed the threads.
  const int64_t rows_per_block = std::min(p.out_h, dwconv_chunk_rows(p.out_w));
  const int64_t row_blocks = (p.out_h + rows_per_block - 1) / rows_per_block;
  const int64_t threads = pool ? pool->threads() : 1;
  int64_t channel_blocks = 1;
  if (threads > 1 && row_blocks < 4 * threads) {
    channel_blocks = std::min(p.out_channels, (4 * threads + row_blocks - 1) / row_blocks);
  }
  const int64_t channels_per_block = (p.out_channels + channel_blocks - 1) / channel_blocks;
  channel_blocks = (p.out_channels + channels_per_block - 1) / channels_per_block;

  const int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w, kk = k * k;
  parallel_for(pool, row_blocks * channel_blocks, [&](int64_t t) {
    const int64_t oh0 = (t / channel_blocks) * rows_per_block;
    const int64_t rows = std::min(p.out_h, oh0 + rows_per_block) - oh0;
    const int64_t co0 = (t % channel_blocks) * channels_per_block;
    const int64_t co1 = std::min(p.out_channels, co0 + channels_per_block);
    const int64_t buf_rows = (rows - 1) * s + k;
    const int64_t channel_floats = buf_rows * pad_row.row_floats;
    float* buf = thread_scratch_f32(static_cast<size_t>(cin * channel_floats), 2);
    for (int64_t ci = 0; ci < cin; ++ci) {
      f32_dwconv_pad_rows(pad_row, input + ci * in_plane, p.in_h, oh0 * s - p.pad_t, buf_rows, buf + ci * channel_floats,
                          isa);
    }
    DwRows a;
    a.kernel = k;
    a.stride = s;
    a.in_stride = pad_row.row_floats;
    a.odd_offset = pad_row.odd_offset;
    a.out_w = p.out_w;
    a.rows = rows;
    const Activation none{};
    for (int64_t co = co0; co < co1; ++co) {
      float* out = output + co * out_plane + oh0 * p.out_w;
      for (int64_t ci = 0; ci < cin; ++ci) {
        a.in = buf + ci * channel_floats;
        a.weights = weights + (co * cin + ci) * kk;
        a.bias = ci == 0 && bias ? bias[co] : 0.0f;
        a.residual = ci > 0 ? out : (residual ? residual + co * out_plane + oh0 * p.out_w : nullptr);
        a.out = out;
        f32_dwconv_rows(a, ci == cin - 1 ? act : none, isa);
      }
    }
  });
}

}  // namespace xnn::kernels
