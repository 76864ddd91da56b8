#include "engine/kernels/pattern_conv.h"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>

#include "engine/core/error.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {

std::optional<PatternConvWeights> PatternConvWeights::from_dense(int64_t cout, int64_t cin, const float* w,
                                                                 int max_taps, int64_t channel_block) {
  XNN_CHECK(channel_block >= 1, "PatternConvWeights: channel block must be >= 1");
  XNN_CHECK(max_taps >= 1 && max_taps <= kMaxPatternTaps, "PatternConvWeights: max_taps outside [1, 5]");
  XNN_CHECK(cout >= 0 && cin >= 0 && cin < (int64_t{1} << 31), "PatternConvWeights: bad channel counts");
  // Masks of every kernel first: decline before building anything.
  std::vector<uint16_t> masks(static_cast<size_t>(cout * cin));
  int taps = 1;
  for (int64_t i = 0; i < cout * cin; ++i) {
    uint16_t m = 0;
    for (int t = 0; t < 9; ++t) {
      if (w[i * 9 + t] != 0.0f) m = static_cast<uint16_t>(m | (1u << t));
    }
    const int count = std::popcount(static_cast<unsigned>(m));
    if (count > max_taps) return std::nullopt;
    taps = std::max(taps, count);
    masks[static_cast<size_t>(i)] = m;
  }
  PatternConvWeights p;
  p.cout_ = cout, p.cin_ = cin, p.taps_ = taps;
  std::map<uint16_t, uint16_t> ids;
  for (uint16_t m : masks) {
    if (m == 0 || ids.count(m)) continue;
    XNN_CHECK(p.patterns_.size() < 65535, "PatternConvWeights: too many patterns");
    ids[m] = static_cast<uint16_t>(p.patterns_.size());
    p.patterns_.push_back(m);
    std::array<uint8_t, kMaxPatternTaps> pos{};
    int n = 0;
    for (int t = 0; t < 9; ++t) {
      if (m & (1u << t)) pos[static_cast<size_t>(n++)] = static_cast<uint8_t>(t);
    }
    for (int j = n; j < kMaxPatternTaps; ++j) pos[static_cast<size_t>(j)] = pos[static_cast<size_t>(n - 1)];
    p.pattern_taps_.push_back(pos);
  }
  p.channel_block_ = channel_block;
  p.channel_blocks_ = (cin + channel_block - 1) / channel_block;
  p.entry_start_.push_back(0);
  std::vector<int64_t> order(static_cast<size_t>(cin));
  for (int64_t o = 0; o < cout; ++o) {
    const uint16_t* mo = masks.data() + o * cin;
    // The filter's kept kernels by channel block, then grouped by pattern (same tap offsets
    // back to back), then by channel.
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (a / channel_block != b / channel_block) return a < b;
      const uint16_t ma = mo[a], mb = mo[b];
      return (ma ? ids[ma] : 65535) < (mb ? ids[mb] : 65535);
    });
    int64_t next_block = 1;
    for (int64_t c : order) {
      for (; next_block <= c / channel_block; ++next_block) {
        p.entry_start_.push_back(static_cast<int64_t>(p.entry_channel_.size()));
      }
      const uint16_t m = mo[c];
      if (m == 0) continue;
      const uint16_t id = ids[m];
      p.entry_channel_.push_back(static_cast<int32_t>(c));
      p.entry_pattern_.push_back(id);
      const auto& pos = p.pattern_taps_[id];
      const int n = std::popcount(static_cast<unsigned>(m));
      for (int j = 0; j < taps; ++j) p.entry_weights_.push_back(j < n ? w[(o * cin + c) * 9 + pos[static_cast<size_t>(j)]] : 0.0f);
    }
    for (; next_block <= p.channel_blocks_; ++next_block) {
      p.entry_start_.push_back(static_cast<int64_t>(p.entry_channel_.size()));
    }
  }
  return p;
}

double PatternConvWeights::connectivity_sparsity() const {
  const int64_t total = cout_ * cin_;
  return total ? 1.0 - static_cast<double>(kept_kernels()) / static_cast<double>(total) : 0.0;
}

double PatternConvWeights::work_fraction() const {
  const int64_t total = cout_ * cin_ * 9;
  return total ? static_cast<double>(kept_kernels() * taps_) / static_cast<double>(total) : 0.0;
}

size_t PatternConvWeights::bytes() const {
  return entry_weights_.size() * sizeof(float) + entry_channel_.size() * sizeof(int32_t) +
         entry_pattern_.size() * sizeof(uint16_t) + entry_start_.size() * sizeof(int64_t) +
         patterns_.size() * (sizeof(uint16_t) + kMaxPatternTaps);
}

int64_t pattern_channel_block(int64_t oh, int64_t ow) {
  // The AVX2 tile for this width (pattern_conv_avx2.cpp): V vectors × R rows, R·V <= 8.
  const int64_t v = std::clamp<int64_t>((ow + 7) / 8, 1, 4);
  const int64_t r = std::min<int64_t>(v == 1 ? 8 : v == 2 ? 4 : 2, std::max<int64_t>(oh, 1));
  const int64_t bytes_per_channel = (r + 2) * (v * 8 + 2) * 4;
  return std::clamp<int64_t>((int64_t{32} << 10) / bytes_per_channel, 16, 64);
}

PatternPadLayout pattern_pad_layout(const PatternConvShape& s) {
  PatternPadLayout l;
  l.rows = s.oh + 2;
  // Output columns are computed in whole vectors of 8, reading up to 2 columns past them.
  l.row_stride = (s.ow + 7) / 8 * 8 + 8;
  l.plane = l.rows * l.row_stride;
  return l;
}

void f32_patconv3x3_block__scalar(const PatternConvWeights& w, const PatternConvShape& s, const PatternPadLayout& l,
                                  const float* xpad, int64_t o0, int64_t o1, int64_t r0, int64_t r1, float* y,
                                  const PatternConvEpilogue& ep) {
  const int taps = w.taps();
  float* acc = thread_scratch_f32(static_cast<size_t>(s.ow), 3);
  for (int64_t o = o0; o < o1; ++o) {
    for (int64_t r = r0; r < r1; ++r) {
      std::fill(acc, acc + s.ow, ep.bias ? ep.bias[o] : 0.0f);
      for (int64_t e = w.entry_begin(o); e < w.entry_begin(o + 1, 0); ++e) {
        const float* plane = xpad + w.entry_channel()[e] * l.plane + r * l.row_stride;
        const auto& pos = w.pattern_taps(w.entry_pattern()[e]);
        const float* wt = w.entry_weights() + e * taps;
        for (int t = 0; t < taps; ++t) {
          const float* src = plane + (pos[static_cast<size_t>(t)] / 3) * l.row_stride + pos[static_cast<size_t>(t)] % 3;
          for (int64_t x = 0; x < s.ow; ++x) acc[x] += wt[t] * src[x];
        }
      }
      float* yr = y + (o * s.oh + r) * s.ow;
      const float* res = ep.residual ? ep.residual + (o * s.oh + r) * s.ow : nullptr;
      for (int64_t x = 0; x < s.ow; ++x) {
        const float v = acc[x];
        yr[x] = apply_activation_scalar(res ? v + res[x] : v, ep.act);
      }
    }
  }
}

void f32_patconv3x3(const PatternConvWeights& w, const PatternConvShape& s, const float* x, float* y,
                    const PatternConvEpilogue& ep, ThreadPool* pool, Isa isa) {
  const PatternPadLayout l = pattern_pad_layout(s);
  const int64_t cin = w.cin(), cout = w.cout();
  float* xpad = thread_scratch_f32(static_cast<size_t>(cin * l.plane), 2);
  // Padded copy: padded[yy][xx] = x[yy - pad_top][xx - pad_left], zero outside.
  parallel_for(pool, cin, [&](int64_t c) {
    const float* src = x + c * s.h * s.w;
    float* dst = xpad + c * l.plane;
    for (int64_t yy = 0; yy < l.rows; ++yy) {
      float* d = dst + yy * l.row_stride;
      const int64_t iy = yy - s.pad_top;
      std::fill(d, d + l.row_stride, 0.0f);
      if (iy < 0 || iy >= s.h) continue;
      // xx = ix + pad_left; row_stride >= ow + 8 > w + pad_left, so the whole row fits.
      std::copy(src + iy * s.w, src + (iy + 1) * s.w, d + s.pad_left);
    }
  });
  // Tasks: row bands × blocks of 16 filters, band-major. Each task walks its band in tiles and
  // runs its filters on each tile (input reuse from L1), so one band spanning the whole output
  // is best; with several threads and few filter blocks, bands of >= 8 rows make more tasks.
  const int threads = pool ? pool->threads() : 1;
  int64_t oblock = 16, band = s.oh;
  const int64_t want = 4 * static_cast<int64_t>(threads);
  if (threads > 1 && (cout + oblock - 1) / oblock < want) {
    const int64_t split = (want * oblock + cout - 1) / cout;
    band = std::max<int64_t>(8, (s.oh + split - 1) / split);
  }
  const int64_t bands = (s.oh + band - 1) / band;
  while (threads > 1 && oblock > 4 && bands * ((cout + oblock - 1) / oblock) < want) oblock /= 2;
  const int64_t oblocks = (cout + oblock - 1) / oblock;
  parallel_for(pool, bands * oblocks, [&](int64_t i) {
    const int64_t b = i / oblocks, ob = i % oblocks;
    const int64_t r0 = b * band, r1 = std::min(s.oh, r0 + band);
    const int64_t o0 = ob * oblock, o1 = std::min(cout, o0 + oblock);
    if (isa == Isa::kAvx2) {
      f32_patconv3x3_block__avx2(w, s, l, xpad, o0, o1, r0, r1, y, ep);
    } else {
      f32_patconv3x3_block__scalar(w, s, l, xpad, o0, o1, r0, r1, y, ep);
    }
  });
}

std::string patconv_kernel_name(Isa isa) {
  return isa == Isa::kAvx2 ? "f32_patconv3x3_2x32__avx2" : "f32_patconv3x3_1x8__scalar";
}

}  // namespace xnn::kernels
