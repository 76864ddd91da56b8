// The training kernels (engine/kernels/training_kernels.h): the scalar path against plain
// definitions written here, and the AVX2 path bit-identical to the scalar one (the header's
// promise), on lengths around the vector widths and on data with ties, zeros and NaNs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/kernels/training_kernels.h"

namespace xnn::kernels {
namespace {

std::vector<float> data(int64_t n, unsigned seed, bool specials) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  if (specials) {
    for (size_t i = 0; i < v.size(); i += 5) v[i] = std::round(v[i]);  // ties and exact zeros
    for (size_t i = 3; i < v.size(); i += 17) v[i] = std::numeric_limits<float>::quiet_NaN();
  }
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

const std::vector<int64_t> kLengths = {0, 1, 7, 8, 15, 16, 17, 31, 33, 49, 196, 784, 1001};

bool have_avx2() { return isa_supported(Isa::kAvx2); }

// The fused activations, their values and derivatives as training_kernels.h defines them.
const std::vector<Activation> kActs = {Activation{},         Activation::relu(),
                                       Activation::clip(0, 6), Activation::clip(-1.5f, 0.5f),
                                       Activation::leaky_relu(0.1f), Activation{ActKind::kHardSwish},
                                       Activation{ActKind::kHardSigmoid, 0.2f, 0.5f}};

float act_value(float z, const Activation& a) {
  switch (a.kind) {
    case ActKind::kRelu: return z > 0 ? z : 0.0f;
    case ActKind::kClip: return z < a.alpha ? a.alpha : (z > a.beta ? a.beta : z);
    case ActKind::kLeakyRelu: return z >= 0 ? z : z * a.alpha;
    case ActKind::kHardSwish: return z * std::min(1.0f, std::max(0.0f, z / 6.0f + 0.5f));
    case ActKind::kHardSigmoid: return std::min(1.0f, std::max(0.0f, a.alpha * z + a.beta));
    default: return z;
  }
}

float act_grad(float z, float g, const Activation& a) {
  switch (a.kind) {
    case ActKind::kRelu: return z > 0 ? g : 0.0f;
    case ActKind::kClip: return z > a.alpha && z < a.beta ? g : 0.0f;
    case ActKind::kLeakyRelu: return z > 0 ? g : a.alpha * g;
    case ActKind::kHardSwish: return z < -3.0f ? 0.0f : (z <= 3.0f ? g * (z / 3.0f + 0.5f) : g);
    case ActKind::kHardSigmoid: {
      const float t = a.alpha * z + a.beta;
      return t > 0 && t < 1 ? a.alpha * g : 0.0f;
    }
    default: return g;
  }
}

TEST(TrainingKernels, SumsMatchDefinitionAndAreBitIdenticalAcrossIsas) {
  for (int64_t n : kLengths) {
    const std::vector<float> x = data(n, 1, false), dy = data(n, 2, false);
    float s = 0, q = 0;
    f32_shifted_sums(x.data(), n, 0.25f, &s, &q, Isa::kScalar);
    double es = 0, eq = 0;
    for (float v : x) es += v - 0.25, eq += (v - 0.25) * (v - 0.25);
    EXPECT_NEAR(s, es, 1e-4 * (1 + std::sqrt(static_cast<double>(n)))) << n;
    EXPECT_NEAR(q, eq, 1e-4 * (1 + eq)) << n;
    if (have_avx2()) {
      float s2 = 0, q2 = 0;
      f32_shifted_sums(x.data(), n, 0.25f, &s2, &q2, Isa::kAvx2);
      EXPECT_EQ(std::memcmp(&s, &s2, 4), 0) << n;
      EXPECT_EQ(std::memcmp(&q, &q2, 4), 0) << n;
    }
    // z = 2.5·x − 0.5 spans every activation's segments (HardSwish's ±3, Clip's bounds).
    for (const Activation& act : kActs) {
      SCOPED_TRACE(std::string(act_kind_name(act.kind)) + " n=" + std::to_string(n));
      float a = 0, b = 0;
      f32_bn_grad_sums(x.data(), dy.data(), n, 0.1f, 2.5f, -0.5f, act, &a, &b, Isa::kScalar);
      double ea = 0, eb = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double dz = act_grad(x[static_cast<size_t>(i)] * 2.5f - 0.5f, dy[static_cast<size_t>(i)], act);
        ea += dz, eb += dz * (x[static_cast<size_t>(i)] - 0.1);
      }
      EXPECT_NEAR(a, ea, 1e-4 * (1 + std::sqrt(static_cast<double>(n))));
      EXPECT_NEAR(b, eb, 1e-4 * (1 + std::sqrt(static_cast<double>(n))));
      if (!have_avx2()) continue;
      float a2 = 0, b2 = 0;
      f32_bn_grad_sums(x.data(), dy.data(), n, 0.1f, 2.5f, -0.5f, act, &a2, &b2, Isa::kAvx2);
      EXPECT_EQ(std::memcmp(&a, &a2, 4), 0);
      EXPECT_EQ(std::memcmp(&b, &b2, 4), 0);
    }
  }
}

TEST(TrainingKernels, ElementwisePassesMatchDefinitionOnBothIsas) {
  for (int64_t n : kLengths) {
    const std::vector<float> x = data(n, 4, true), dy = data(n, 5, false), r = data(n, 6, true), m = data(n, 7, false);
    for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
      if (!isa_supported(isa)) continue;
      for (const Activation& act : kActs) {
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + act_kind_name(act.kind) + " n=" + std::to_string(n));
        std::vector<float> y(x.size()), want(x.size());
        f32_scale_shift(x.data(), n, 1.5f, -0.25f, act, y.data(), isa);
        for (size_t i = 0; i < x.size(); ++i) want[i] = act_value(x[i] * 1.5f - 0.25f, act);
        if (act.kind == ActKind::kHardSwish || act.kind == ActKind::kHardSigmoid) {
          // Written here with min/max, which treat NaN differently: compare finite inputs.
          for (size_t i = 0; i < x.size(); ++i)
            if (!std::isnan(x[i])) {
              EXPECT_EQ(y[i], want[i]) << i;
            }
        } else {
          EXPECT_TRUE(same_bits(y, want));
        }
        for (bool stream : {false, true}) {
          f32_bn_grad_apply(x.data(), dy.data(), n, 0.1f, 1.5f, -0.25f, act, 0.7f, 0.05f, 0.3f, y.data(), stream, isa);
          for (size_t i = 0; i < x.size(); ++i)
            want[i] = 0.7f * (act_grad(x[i] * 1.5f - 0.25f, dy[i], act) - 0.05f - (x[i] - 0.1f) * 0.3f);
          EXPECT_TRUE(same_bits(y, want)) << "stream " << stream;
          // From an odd float offset: the streaming path's unaligned head.
          if (n > 1) {
            f32_bn_grad_apply(x.data() + 1, dy.data() + 1, n - 1, 0.1f, 1.5f, -0.25f, act, 0.7f, 0.05f, 0.3f,
                              y.data() + 1, stream, isa);
            y[0] = want[0];
            EXPECT_TRUE(same_bits(y, want)) << "stream " << stream << ", unaligned";
          }
        }
      }
      std::vector<float> y(x.size()), want(x.size());
      f32_relu_grad(r.data(), dy.data(), n, y.data(), isa);
      for (size_t i = 0; i < x.size(); ++i) want[i] = r[i] > 0 ? dy[i] : 0.0f;
      EXPECT_TRUE(same_bits(y, want));
      f32_vmul(dy.data(), m.data(), n, y.data(), isa);
      for (size_t i = 0; i < x.size(); ++i) want[i] = dy[i] * m[i];
      EXPECT_TRUE(same_bits(y, want));
    }
  }
}

TEST(TrainingKernels, DropoutMaskDrawsTheDocumentedBitsOnBothIsas) {
  for (uint64_t threshold : {uint64_t{0}, uint64_t{1} << 31, uint64_t{3000000000u}, uint64_t{1} << 32}) {
    for (int64_t first : {int64_t{0}, int64_t{6}, int64_t{1000}}) {
      for (int64_t n : {1, 2, 7, 8, 9, 31, 100}) {
        std::vector<float> want(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          uint64_t x = 77 + static_cast<uint64_t>((first + i) / 2) + 0x9E3779B97F4A7C15ull;
          x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
          x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
          x ^= x >> 31;
          const uint64_t u = (first + i) % 2 ? x >> 32 : x & 0xFFFFFFFFu;
          want[static_cast<size_t>(i)] = u >= threshold ? 2.5f : 0.0f;
        }
        for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
          if (!isa_supported(isa)) continue;
          std::vector<float> got(static_cast<size_t>(n), -1.0f);
          f32_dropout_mask(77, first, n, threshold, 2.5f, got.data(), isa);
          EXPECT_TRUE(same_bits(got, want)) << isa_name(isa) << " threshold " << threshold << " first " << first << " n " << n;
        }
      }
    }
  }
}

TEST(TrainingKernels, DepthwiseWeightGradientMatchesDefinitionAndIsasAgree) {
  struct Plane {
    int64_t h, w, k, stride, pad_t, pad_l;
  };
  for (const Plane& pl : std::vector<Plane>{{14, 14, 3, 1, 1, 1}, {13, 11, 3, 2, 1, 1}, {14, 14, 5, 2, 2, 2},
                                            {9, 30, 7, 1, 3, 3}, {6, 7, 3, 1, 0, 0}, {28, 28, 5, 1, 2, 2}}) {
    const int64_t oh = (pl.h + 2 * pl.pad_t - pl.k) / pl.stride + 1, ow = (pl.w + 2 * pl.pad_l - pl.k) / pl.stride + 1;
    const std::vector<float> x = data(pl.h * pl.w, 20, false), dy = data(oh * ow, 21, false);
    std::vector<double> want(static_cast<size_t>(pl.k * pl.k), 0.0);
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t i = 0; i < pl.k; ++i)
          for (int64_t j = 0; j < pl.k; ++j) {
            const int64_t iy = oy * pl.stride + i - pl.pad_t, ix = ox * pl.stride + j - pl.pad_l;
            if (iy >= 0 && iy < pl.h && ix >= 0 && ix < pl.w)
              want[static_cast<size_t>(i * pl.k + j)] += static_cast<double>(dy[static_cast<size_t>(oy * ow + ox)]) * x[static_cast<size_t>(iy * pl.w + ix)];
          }
    std::vector<float> got[2];
    for (int isa_i = 0; isa_i < 2; ++isa_i) {
      const Isa isa = isa_i ? Isa::kAvx2 : Isa::kScalar;
      if (!isa_supported(isa)) continue;
      std::vector<float> scratch(static_cast<size_t>(f32_dwconv_wgrad_scratch_floats(oh, ow, pl.k, pl.stride)));
      std::vector<float> acc(static_cast<size_t>(pl.k * pl.k * 8), 0.0f);
      // Two planes into the same lanes: the second (the same data again) doubles every sum.
      for (int rep = 0; rep < 2; ++rep)
        f32_dwconv_wgrad_plane(x.data(), pl.h, pl.w, dy.data(), oh, ow, pl.k, pl.stride, pl.pad_t, pl.pad_l,
                               scratch.data(), acc.data(), isa);
      got[isa_i].assign(static_cast<size_t>(pl.k * pl.k), 0.0f);
      f32_dwconv_wgrad_finish(acc.data(), pl.k, got[isa_i].data());
      for (size_t t = 0; t < want.size(); ++t) EXPECT_NEAR(got[isa_i][t], 2 * want[t], 1e-4 * (1 + std::fabs(want[t]))) << t;
    }
    if (!got[1].empty()) {
      EXPECT_TRUE(same_bits(got[0], got[1])) << "k " << pl.k << " stride " << pl.stride;
    }
  }
}

TEST(TrainingKernels, MaxPoolArgmaxFollowsTheFirstMaximumRuleAndRoutesGradients) {
  for (int64_t ow : {1, 3, 7, 8, 9, 14, 16, 23}) {
    std::vector<float> r0 = data(2 * ow + 1, 10, true), r1 = data(2 * ow + 1, 11, true);
    // Force ties in some windows: equal values must keep the first tap.
    for (int64_t j = 0; j < ow; j += 3) r0[static_cast<size_t>(2 * j + 1)] = r0[static_cast<size_t>(2 * j)];
    for (Isa isa : {Isa::kScalar, Isa::kAvx2}) {
      if (!isa_supported(isa)) continue;
      SCOPED_TRACE(std::string(isa_name(isa)) + " ow=" + std::to_string(ow));
      std::vector<float> out(static_cast<size_t>(ow) + 1, -7.0f);
      std::vector<uint8_t> idx(static_cast<size_t>(ow) + 1, 99);
      f32_maxpool2x2_argmax_row(r0.data(), r1.data(), ow, out.data(), idx.data(), isa);
      EXPECT_EQ(out[static_cast<size_t>(ow)], -7.0f);  // nothing written past ow
      EXPECT_EQ(idx[static_cast<size_t>(ow)], 99);
      for (int64_t j = 0; j < ow; ++j) {
        const float taps[4] = {r0[static_cast<size_t>(2 * j)], r0[static_cast<size_t>(2 * j + 1)],
                               r1[static_cast<size_t>(2 * j)], r1[static_cast<size_t>(2 * j + 1)]};
        int best = 0;
        for (int t = 1; t < 4; ++t)
          if (taps[t] > taps[best]) best = t;  // strictly greater: first maximum, NaN seed sticks
        EXPECT_EQ(idx[static_cast<size_t>(j)], best) << j;
        EXPECT_EQ(std::memcmp(&out[static_cast<size_t>(j)], &taps[best], 4), 0) << j;
      }
      const std::vector<float> g = data(ow, 12, false);
      std::vector<float> d0(static_cast<size_t>(2 * ow) + 1, -7.0f), d1(static_cast<size_t>(2 * ow) + 1, -7.0f);
      f32_maxpool2x2_grad_row(g.data(), idx.data(), ow, d0.data(), d1.data(), isa);
      EXPECT_EQ(d0[static_cast<size_t>(2 * ow)], -7.0f);
      EXPECT_EQ(d1[static_cast<size_t>(2 * ow)], -7.0f);
      for (int64_t j = 0; j < ow; ++j) {
        const float got[4] = {d0[static_cast<size_t>(2 * j)], d0[static_cast<size_t>(2 * j + 1)],
                              d1[static_cast<size_t>(2 * j)], d1[static_cast<size_t>(2 * j + 1)]};
        for (int t = 0; t < 4; ++t)
          EXPECT_EQ(got[t], t == idx[static_cast<size_t>(j)] ? g[static_cast<size_t>(j)] : 0.0f) << j << " tap " << t;
      }
    }
  }
}

}  // namespace
}  // namespace xnn::kernels
