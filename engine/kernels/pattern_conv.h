// Pattern-sparse 3×3 convolution (stride 1, dilation 1, group 1, NCHW) for pattern-pruned
// weights (compress/prune/pattern_prune.h; PatDNN, Niu et al., ASPLOS'20): every 3×3 kernel of
// the layer is either all zero (its input-channel connection pruned) or keeps at most a few
// taps (e.g. 4 of 9) laid out in one of a small library of patterns.
//
// Compact storage: per output channel (filter), its kept kernels only, sorted by input-channel
// block, then by pattern id (same tap offsets back to back), each
// as (input channel, pattern id, `taps` weights); a pattern is a 9-bit mask of the kept taps and
// the library holds the distinct masks of the layer. Kernels keeping fewer taps than `taps` are
// padded with zero weights, so the inner loop has one trip count for the whole layer.
//
// Kernel (direct convolution, vectorised over the output width): the input is copied once into
// a zero-padded buffer (rows rounded to 8 floats), so a tap (dy, dx) of a pattern is one
// constant offset dy·row_stride + dx from the output position, whatever the pixel.
// For a tile of R output rows × V·8 output columns of one filter, R·V accumulators stay in
// registers while the filter's kept kernels of one input-channel block are walked: per tap,
// broadcast its weight and FMA it with the R·V input vectors at the tap's offset. The filters of
// a block run on the same tile one after the other, so the tile's input rows of the channel
// block (16-64 channels × (R + 2) rows × (V·8 + 2) floats) are read from L1 by all of them;
// partial sums wait in a small per-thread tile buffer between channel blocks. Work is exactly
// (kept taps) × outputs, so connectivity pruning (fewer kept kernels) skips work entirely.
// Threads take (row band, filter block) tasks.
//
// Detection is from the constant weights at preparation (exact zeros; -0.0f counts as zero):
// the CPU backend (engine/backends/cpu/pattern_conv_cpu.cpp) takes a 3×3 conv when every
// kernel has at most kMaxPatternTaps nonzeros and the kept work pays against the dense kernel.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

constexpr int kMaxPatternTaps = 5;

class PatternConvWeights {
 public:
  // From dense weights [cout × cin × 3 × 3] (row-major OIHW). Null when some kernel has more
  // than max_taps nonzeros (max_taps in [1, kMaxPatternTaps]). channel_block: input channels
  // per block (pattern_channel_block() chooses it for a shape).
  static std::optional<PatternConvWeights> from_dense(int64_t cout, int64_t cin, const float* w,
                                                      int max_taps = kMaxPatternTaps, int64_t channel_block = 16);

  int64_t cout() const { return cout_; }
  int64_t cin() const { return cin_; }
  int taps() const { return taps_; }  // weights stored per kept kernel (the layer's max nonzeros, >= 1)
  // The pattern library: 9-bit masks (bit 3·ky + kx) of the kept kernels' taps, distinct.
  const std::vector<uint16_t>& patterns() const { return patterns_; }
  // Tap positions (ky·3 + kx) of pattern p, `taps` of them (padding taps repeat the last one
  // with weight 0).
  const std::array<uint8_t, kMaxPatternTaps>& pattern_taps(int p) const { return pattern_taps_[static_cast<size_t>(p)]; }

  // Input channels are taken in blocks of channel_block() (a block's rows of the padded input
  // stay in L1 while every filter of a tile walks it). Kept kernels of filter o in channel block
  // b: entries [entry_begin(o, b), entry_begin(o, b + 1)); entry_begin(o, channel_blocks()) ==
  // entry_begin(o + 1, 0).
  int64_t channel_block() const { return channel_block_; }
  int64_t channel_blocks() const { return channel_blocks_; }
  int64_t entry_begin(int64_t o, int64_t b = 0) const {
    return entry_start_[static_cast<size_t>(o * channel_blocks_ + b)];
  }
  int64_t kept_kernels() const { return static_cast<int64_t>(entry_channel_.size()); }
  const int32_t* entry_channel() const { return entry_channel_.data(); }
  const uint16_t* entry_pattern() const { return entry_pattern_.data(); }
  const float* entry_weights() const { return entry_weights_.data(); }  // `taps` per entry

  // Share of the cout × cin kernels pruned entirely (connectivity sparsity).
  double connectivity_sparsity() const;
  // Stored taps / (cout × cin × 9): the share of the dense MACs the kernel performs.
  double work_fraction() const;
  size_t bytes() const;  // memory held by the compact form

 private:
  int64_t cout_ = 0, cin_ = 0, channel_block_ = 16, channel_blocks_ = 0;
  int taps_ = 1;
  std::vector<uint16_t> patterns_;
  std::vector<std::array<uint8_t, kMaxPatternTaps>> pattern_taps_;
  std::vector<int64_t> entry_start_;
  std::vector<int32_t> entry_channel_;
  std::vector<uint16_t> entry_pattern_;
  std::vector<float> entry_weights_;
};

struct PatternConvShape {
  int64_t h = 0, w = 0;        // input plane
  int64_t oh = 0, ow = 0;      // output plane
  int64_t pad_top = 0, pad_left = 0;
};

struct PatternConvEpilogue {
  const float* bias = nullptr;      // cout, or null
  const float* residual = nullptr;  // cout × oh × ow (one image), added before act
  Activation act;
};

// One image: y [cout × oh × ow] = epilogue(conv3x3(x [cin × h × w])). Uses this thread's
// scratch slot 2 for the padded input.
void f32_patconv3x3(const PatternConvWeights& w, const PatternConvShape& s, const float* x, float* y,
                    const PatternConvEpilogue& ep, ThreadPool* pool, Isa isa);
std::string patconv_kernel_name(Isa isa);  // "f32_patconv3x3_2x32__avx2", "f32_patconv3x3_1x8__scalar"

// Input channels per block for an output size: as many as keep one tile's input rows within
// ~32 KiB of L1 (16..64).
int64_t pattern_channel_block(int64_t oh, int64_t ow);

// The padded input layout shared by the ISA paths (floats): per input channel the zero-padded
// plane, rows rounded up to 8 floats plus 8. (Three copies shifted by 0/1/2 columns, so that
// every load is aligned, measured slower: 3x the L1 footprint and copying cost more than the
// cache-line splits of the unaligned loads.)
struct PatternPadLayout {
  int64_t rows = 0, row_stride = 0, plane = 0;
};
PatternPadLayout pattern_pad_layout(const PatternConvShape& s);

// Output rows [r0, r1) of filters [o0, o1) from the padded input (the ISA paths; epilogue included).
void f32_patconv3x3_block__scalar(const PatternConvWeights& w, const PatternConvShape& s, const PatternPadLayout& l,
                                  const float* xpad, int64_t o0, int64_t o1, int64_t r0, int64_t r1, float* y,
                                  const PatternConvEpilogue& ep);
void f32_patconv3x3_block__avx2(const PatternConvWeights& w, const PatternConvShape& s, const PatternPadLayout& l,
                                const float* xpad, int64_t o0, int64_t o1, int64_t r0, int64_t r1, float* y,
                                const PatternConvEpilogue& ep);

}  // namespace xnn::kernels
