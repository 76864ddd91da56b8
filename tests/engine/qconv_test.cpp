// Int8 convolution (engine/kernels/qconv.h): the reference against a double-precision
// computation, and the 1×1 direct GEMM and the im2col + GEMM paths against the reference byte for
// byte, on both ISAs: kernel sizes, strides, dilations, asymmetric padding (padding reads the
// input zero point), groups, column blocks split over 2 threads; shape errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
#include "engine/kernels/qconv.h"

namespace xnn::kernels {
namespace {

struct ConvData {
  std::vector<uint8_t> x;
  std::vector<int8_t> w;
  std::vector<int32_t> bias;
  std::vector<float> mult;
  uint8_t x_zp = 0;
  QRequant rq;
};

ConvData make_data(const QConvShape& s, std::mt19937& rng, int w_bound = 127) {
  ConvData d;
  std::uniform_int_distribution<int> u8(0, 255), s8(-w_bound, w_bound), b(-20000, 20000);
  d.x.resize(static_cast<size_t>(s.in_channels * s.in_h * s.in_w));
  d.w.resize(static_cast<size_t>(s.out_channels * s.depth()));
  d.bias.resize(static_cast<size_t>(s.out_channels));
  d.mult.resize(static_cast<size_t>(s.out_channels));
  for (uint8_t& v : d.x) v = static_cast<uint8_t>(u8(rng));
  for (int8_t& v : d.w) v = static_cast<int8_t>(s8(rng));
  for (int32_t& v : d.bias) v = b(rng);
  std::uniform_real_distribution<float> m(0.004f, 0.06f);
  for (float& v : d.mult) v = m(rng) / std::sqrt(static_cast<float>(s.depth()));
  d.x_zp = static_cast<uint8_t>(u8(rng));
  d.rq.multiplier = d.mult.data();
  d.rq.zero_point = u8(rng);
  if (rng() % 2) {
    d.rq.qmin = static_cast<uint8_t>(d.rq.zero_point);  // fused Relu
  }
  return d;
}

std::string describe(const QConvShape& s) {
  return "cin " + std::to_string(s.in_channels) + " " + std::to_string(s.in_h) + "x" + std::to_string(s.in_w) +
         " cout " + std::to_string(s.out_channels) + " k " + std::to_string(s.kernel_h) + "x" +
         std::to_string(s.kernel_w) + " s " + std::to_string(s.stride_h) + "," + std::to_string(s.stride_w) + " d " +
         std::to_string(s.dilation_h) + "," + std::to_string(s.dilation_w) + " pads " + std::to_string(s.pad_t) +
         "," + std::to_string(s.pad_l) + "," + std::to_string(s.pad_b) + "," + std::to_string(s.pad_r) + " g " +
         std::to_string(s.groups);
}

void check_conv(const QConvShape& s, Isa isa, ThreadPool* pool, std::mt19937& rng, int w_bound = 127) {
  const ConvData d = make_data(s, rng, w_bound);
  const size_t n = static_cast<size_t>(s.out_channels * s.out_h() * s.out_w());
  std::vector<uint8_t> want(n), got(n + 16, 0xA5);
  qs8_conv2d_reference(s, d.w.data(), d.bias.data(), d.x.data(), d.x_zp, d.rq, want.data());
  const PackedQConvWeights packed(s, d.w.data(), d.bias.data(), isa);
  qs8_conv2d(packed, d.x.data(), d.x_zp, d.rq, got.data(), pool);
  for (size_t i = n; i < got.size(); ++i) ASSERT_EQ(got[i], 0xA5) << "store past the output: " << describe(s);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(int{got[i]}, int{want[i]}) << packed.kernel_name() << " " << describe(s) << " at " << i;
}

QConvShape shape(int64_t cin, int64_t h, int64_t w, int64_t cout, int64_t k, int64_t stride = 1, int64_t pad = 0,
                 int64_t groups = 1) {
  QConvShape s;
  s.in_channels = cin, s.in_h = h, s.in_w = w, s.out_channels = cout;
  s.kernel_h = s.kernel_w = k;
  s.stride_h = s.stride_w = stride;
  s.pad_t = s.pad_l = s.pad_b = s.pad_r = pad;
  s.groups = groups;
  return s;
}

TEST(QConvReference, MatchesDoublePrecisionWithinRounding) {
  std::mt19937 rng(1);
  QConvShape s = shape(5, 9, 8, 6, 3, 2, 1);
  s.pad_r = 2;
  s.dilation_w = 2;
  const ConvData d = make_data(s, rng);
  std::vector<uint8_t> y(static_cast<size_t>(s.out_channels * s.out_h() * s.out_w()));
  qs8_conv2d_reference(s, d.w.data(), d.bias.data(), d.x.data(), d.x_zp, d.rq, y.data());
  int64_t off = 0;
  for (int64_t o = 0; o < s.out_channels; ++o) {
    for (int64_t oy = 0; oy < s.out_h(); ++oy) {
      for (int64_t ox = 0; ox < s.out_w(); ++ox) {
        double acc = d.bias[static_cast<size_t>(o)];
        for (int64_t c = 0; c < s.in_channels; ++c) {
          for (int64_t ki = 0; ki < 3; ++ki) {
            for (int64_t kj = 0; kj < 3; ++kj) {
              const int64_t iy = oy * 2 - 1 + ki, ix = ox * 2 - 1 + kj * 2;
              if (iy < 0 || iy >= s.in_h || ix < 0 || ix >= s.in_w) continue;  // padding: real zero
              acc += d.w[static_cast<size_t>(((o * s.in_channels + c) * 3 + ki) * 3 + kj)] *
                     (static_cast<double>(d.x[static_cast<size_t>((c * s.in_h + iy) * s.in_w + ix)]) - d.x_zp);
            }
          }
        }
        const double q = std::nearbyint(acc * d.mult[static_cast<size_t>(o)]) + d.rq.zero_point;
        const double want = std::clamp(q, static_cast<double>(d.rq.qmin), static_cast<double>(d.rq.qmax));
        const int got = y[static_cast<size_t>((o * s.out_h() + oy) * s.out_w() + ox)];
        ASSERT_LE(std::fabs(got - want), 1.0) << "o " << o << " (" << oy << ", " << ox << ")";
        off += got != want;
      }
    }
  }
  EXPECT_LE(off, 2);
}

class QConvIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "ISA not supported on this CPU";
  }
  Isa isa() const { return GetParam(); }
};

TEST_P(QConvIsa, PointwiseUsesTheInputAsGemmOperand) {
  std::mt19937 rng(2);
  for (const QConvShape& s : {shape(16, 7, 9, 24, 1), shape(3, 1, 1, 5, 1), shape(12, 5, 5, 9, 1, 1, 0, 3)}) {
    const ConvData d = make_data(s, rng);
    EXPECT_TRUE(PackedQConvWeights(s, d.w.data(), d.bias.data(), isa()).direct_gemm());
    check_conv(s, isa(), nullptr, rng);
    if (HasFatalFailure()) return;
  }
  // Strided 1×1 goes through the implicit GEMM (stride-2 phase planes: 5 columns, none extra);
  // a 5×5 kernel on a 5×5 map without padding through im2col (4 of 5 phase columns extra).
  const QConvShape strided = shape(8, 9, 9, 8, 1, 2);
  const ConvData d = make_data(strided, rng);
  const PackedQConvWeights packed(strided, d.w.data(), d.bias.data(), isa());
  EXPECT_FALSE(packed.direct_gemm());
  // With 512-bit VNNI and channels in fours: its interleaved form (nothing packed per call).
  const bool interleaved = isa() == Isa::kAvx2 && vnni512_enabled();
  EXPECT_EQ(packed.implicit_gemm(), !interleaved);
  EXPECT_EQ(packed.interleaved_gemm(), interleaved);
  EXPECT_EQ(packed.kernel_name().rfind(interleaved ? "qs8_conv_implicit4c+qs8_gemm_" : "qs8_conv_implicit+qs8_gemm_", 0),
            0u)
      << packed.kernel_name();
  check_conv(strided, isa(), nullptr, rng);
  const QConvShape wide = shape(4, 5, 5, 8, 5);
  const ConvData dw = make_data(wide, rng);
  const PackedQConvWeights packed_wide(wide, dw.w.data(), dw.bias.data(), isa());
  EXPECT_FALSE(packed_wide.implicit_gemm());
  EXPECT_EQ(packed_wide.kernel_name().rfind("qs8_conv_im2col+qs8_gemm_", 0), 0u) << packed_wide.kernel_name();
  check_conv(wide, isa(), nullptr, rng);
}

// Random kernels (square and not), strides, dilations, asymmetric padding and groups.
// Random size, kernel, strides, dilations and pads for s; false when the kernel does not fit.
template <typename Dist>
bool random_geometry(QConvShape& s, std::mt19937& rng, Dist& hw, Dist& kdim, Dist& stride, Dist& dil, Dist& pad) {
  s.in_h = hw(rng), s.in_w = hw(rng);
  s.kernel_h = kdim(rng), s.kernel_w = kdim(rng);
  s.stride_h = stride(rng), s.stride_w = stride(rng);
  s.dilation_h = dil(rng), s.dilation_w = dil(rng);
  s.pad_t = pad(rng), s.pad_l = pad(rng), s.pad_b = pad(rng), s.pad_r = pad(rng);
  return s.in_h + s.pad_t + s.pad_b >= s.dilation_h * (s.kernel_h - 1) + 1 &&
         s.in_w + s.pad_l + s.pad_r >= s.dilation_w * (s.kernel_w - 1) + 1;
}

TEST_P(QConvIsa, RandomShapesMatchReference) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> kdim(1, 4), stride(1, 3), dil(1, 2), pad(0, 3), hw(1, 17), grp(1, 3),
      per_group(1, 6);
  ThreadPool pool(2);
  int done = 0;
  while (done < 60) {
    QConvShape s;
    s.groups = grp(rng);
    s.in_channels = s.groups * per_group(rng);
    s.out_channels = s.groups * per_group(rng);
    if (!random_geometry(s, rng, hw, kdim, stride, dil, pad)) continue;
    check_conv(s, isa(), done % 2 ? &pool : nullptr, rng, done % 3 ? 127 : 64);
    if (HasFatalFailure()) return;
    ++done;
  }
}

// ResNet-like 3×3 layers, reduced: K = 1152 makes column blocks of 224 outputs, so 30×30 has 5
// blocks and 2 threads take whole blocks; 14×14 has one block and splits its GEMM instead.
TEST_P(QConvIsa, ColumnBlocksOverTwoThreads) {
  std::mt19937 rng(4);
  ThreadPool pool(2);
  for (const QConvShape& s : {shape(128, 30, 30, 8, 3, 1, 1), shape(64, 14, 14, 40, 3, 2, 1),
                              shape(32, 28, 28, 16, 3, 1, 1)}) {
    check_conv(s, isa(), &pool, rng);
    if (HasFatalFailure()) return;
    check_conv(s, isa(), nullptr, rng, 64);
    if (HasFatalFailure()) return;
  }
}

// The interleaved implicit GEMM (512-bit VNNI, input channels per group in fours): random
// strides, dilations, pads and groups, tiles that run past the last output row, 1 and 2 threads,
// full-range and 7-bit weights; every shape bit-exact against the reference.
TEST_P(QConvIsa, InterleavedImplicitGemmMatchesReference) {
  if (isa() != Isa::kAvx2 || !vnni512_enabled()) GTEST_SKIP() << "needs 512-bit VNNI";
  std::mt19937 rng(5);
  std::uniform_int_distribution<int64_t> kdim(1, 5), stride(1, 3), dil(1, 2), pad(0, 2), hw(2, 40), grp(1, 2),
      quads(1, 5), cout(1, 40);
  ThreadPool pool(2);
  int done = 0, tries = 0;
  while (done < 60 && ++tries < 10000) {
    QConvShape s;
    s.groups = grp(rng);
    s.in_channels = s.groups * 4 * quads(rng);
    s.out_channels = s.groups * cout(rng);
    if (!random_geometry(s, rng, hw, kdim, stride, dil, pad)) continue;
    const ConvData d = make_data(s, rng);
    if (!PackedQConvWeights(s, d.w.data(), d.bias.data(), isa()).interleaved_gemm()) continue;
    check_conv(s, isa(), done % 2 ? &pool : nullptr, rng, done % 3 ? 127 : 64);
    if (HasFatalFailure()) return;
    ++done;
  }
  EXPECT_EQ(done, 60);
  // ResNet-18's shapes, reduced in channels: 3x3 on 56 and 7 (2 of 9 columns extra), stride 2.
  for (const QConvShape& s : {shape(64, 56, 56, 16, 3, 1, 1), shape(512, 7, 7, 24, 3, 1, 1),
                              shape(128, 28, 28, 16, 3, 2, 1), shape(4, 9, 9, 8, 7, 2, 3)}) {
    check_conv(s, isa(), &pool, rng);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(QConv, QConvIsa, ::testing::Values(Isa::kScalar, Isa::kAvx2),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

TEST(QConvShapeCheck, RejectsBadShapesNamingTheField) {
  const auto message = [](const QConvShape& s) {
    try {
      check_qconv_shape(s);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  QConvShape s = shape(4, 8, 8, 6, 3);
  EXPECT_EQ(message(s), "");
  QConvShape bad = s;
  bad.groups = 4;  // 6 output channels
  EXPECT_NE(message(bad).find("multiples of groups"), std::string::npos) << message(bad);
  bad = s;
  bad.stride_w = 0;
  EXPECT_NE(message(bad).find("stride_w"), std::string::npos) << message(bad);
  bad = s;
  bad.in_h = 2;  // 3×3 kernel on 2 rows without padding
  EXPECT_NE(message(bad).find("larger than the padded input"), std::string::npos) << message(bad);
  bad = s;
  bad.pad_l = -1;
  EXPECT_NE(message(bad).find("negative padding"), std::string::npos) << message(bad);
  const std::vector<int8_t> w(static_cast<size_t>(6 * 4 * 9));
  bad = s;
  bad.groups = 4;
  EXPECT_THROW(PackedQConvWeights(bad, w.data(), nullptr, Isa::kScalar), Error);
}

}  // namespace
}  // namespace xnn::kernels
