// fp16 / bf16 rounding kernels (numeric emulation of simulated targets): the AVX2 paths must give
// exactly the scalar results, and the scalar fp16 path is Half's conversion (round to nearest even).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "engine/core/half.h"
#include "engine/kernels/float_rounding.h"

namespace xnn::kernels {
namespace {

std::vector<float> tricky_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65520.0f, 65519.99f, 1e9f, -1e9f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 5.96e-8f, 2.98e-8f, 2.99e-8f, 6.1e-5f, 6.09e-5f,
                          std::numeric_limits<float>::denorm_min(), 1.00048828125f /* half-ulp tie at 1 */,
                          1.00146484375f /* tie, odd */, 3.0e38f, -3.3895314e38f};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 5000; ++i) {  // random bit patterns: every exponent, NaNs included
    uint32_t x = bits(rng);
    float f;
    std::memcpy(&f, &x, 4);
    v.push_back(f);
  }
  return v;
}

bool same_bits_or_both_nan(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

TEST(ElementwiseFloatRounding, F16ScalarIsHalfConversion) {
  std::vector<float> v = tricky_values();
  std::vector<float> r = v;
  round_to_f16_inplace(r.data(), static_cast<int64_t>(r.size()), Isa::kScalar);
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_TRUE(same_bits_or_both_nan(r[i], Half::to_float(Half::from_float(v[i])))) << v[i];
  }
  EXPECT_EQ(r[2], 1.0f);
  EXPECT_EQ(r[18], 1.0f);            // tie rounds to even (down)
  EXPECT_EQ(r[19], 1.001953125f);    // tie rounds to even (up)
  EXPECT_TRUE(std::isinf(r[5]));     // above the largest half: overflow
}

TEST(ElementwiseFloatRounding, Avx2MatchesScalarBitExactly) {
  if (!isa_supported(Isa::kAvx2) || !cpu_features().f16c) GTEST_SKIP() << "no AVX2/F16C";
  const std::vector<float> v = tricky_values();
  for (size_t n : {v.size(), size_t{7}, size_t{9}, size_t{1}}) {  // tails too
    std::vector<float> a(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)), b = a, c = a, d = a;
    round_to_f16_inplace(a.data(), static_cast<int64_t>(n), Isa::kScalar);
    round_to_f16_inplace(b.data(), static_cast<int64_t>(n), Isa::kAvx2);
    round_to_bf16_inplace(c.data(), static_cast<int64_t>(n), Isa::kScalar);
    round_to_bf16_inplace(d.data(), static_cast<int64_t>(n), Isa::kAvx2);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(same_bits_or_both_nan(a[i], b[i])) << "fp16 of " << v[i];
      ASSERT_TRUE(same_bits_or_both_nan(c[i], d[i])) << "bf16 of " << v[i];
    }
  }
}

TEST(ElementwiseFloatRounding, Bf16KeepsEightBitsOfMantissa) {
  std::vector<float> v = {1.0f, 1.00390625f /* tie: even -> 1 */, 1.01171875f /* tie: odd -> up */, 3.14159265f,
                          std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
  round_to_bf16_inplace(v.data(), static_cast<int64_t>(v.size()), Isa::kScalar);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], 1.0f);
  EXPECT_EQ(v[2], 1.015625f);
  EXPECT_EQ(v[3], 3.140625f);
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_TRUE(std::isinf(v[5]));
}

}  // namespace
}  // namespace xnn::kernels
