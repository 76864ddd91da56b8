#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/aligned_vector.h"
#include "engine/core/tensor.h"

namespace xnn {

TEST(Tensor, AllocatesAlignedZeroedStorage) {
  Tensor t(DType::kF32, {2, 3, 5});
  EXPECT_EQ(t.numel(), 30);
  EXPECT_EQ(t.nbytes(), 120u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kTensorAlignment, 0u);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
}

// Packed weights in AlignedVector start on a cache line, also after growth and for byte vectors.
TEST(AlignedVector, StorageStartsOnACacheLineAfterEveryReallocation) {
  AlignedVector<float> f;
  AlignedVector<uint8_t> b;
  for (int i = 0; i < 1000; ++i) {
    f.push_back(static_cast<float>(i));
    b.push_back(static_cast<uint8_t>(i));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(f.data()) % kCacheLineBytes, 0u) << i;
    ASSERT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kCacheLineBytes, 0u) << i;
  }
  EXPECT_EQ(f[999], 999.0f);
  EXPECT_EQ(b[300], static_cast<uint8_t>(300));
  const AlignedVector<float> copy = f;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(copy.data()) % kCacheLineBytes, 0u);
  EXPECT_EQ(copy, f);
}

TEST(Tensor, ViewsShareStorageWithoutCopy) {
  Tensor t = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {3, 2});
  Tensor r = t.reshaped({6});
  Tensor s = t.slice_outer(1, 3);
  EXPECT_EQ(r.raw(), t.raw());
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.data<int32_t>()[0], 2);
  s.data<int32_t>()[0] = 42;
  EXPECT_EQ(t.data<int32_t>()[2], 42);
  EXPECT_THROW(t.reshaped({4}), Error);
  EXPECT_THROW(t.slice_outer(2, 4), Error);
}

TEST(Tensor, WrongDtypeAccessThrows) {
  Tensor t(DType::kI64, {1});
  EXPECT_THROW(t.data<float>(), Error);
}

TEST(Tensor, ConvertFollowsCastSemantics) {
  Tensor f = Tensor::from_vector<float>({-1.7f, 0.0f, 2.9f, 1e20f}, {4});
  Tensor i(DType::kI32, {4});
  convert_tensor(f, i);
  EXPECT_EQ(i.data<int32_t>()[0], -1);
  EXPECT_EQ(i.data<int32_t>()[2], 2);
  EXPECT_EQ(i.data<int32_t>()[3], std::numeric_limits<int32_t>::max());
  Tensor b(DType::kBool, {4});
  convert_tensor(f, b);
  EXPECT_FALSE(b.data<bool>()[1]);
  EXPECT_TRUE(b.data<bool>()[0]);
}

TEST(Half, RoundTripsAndRoundsToNearestEven) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f}) {
    EXPECT_EQ(static_cast<float>(Half(v)), v) << v;
  }
  EXPECT_EQ(static_cast<float>(Half(1.0f + 1.0f / 4096)), 1.0f);  // halfway below -> even
  EXPECT_TRUE(std::isinf(static_cast<float>(Half(1e6f))));
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nanf("")))));
}

}  // namespace xnn
