// f32_transpose (engine/kernels/transpose.h): both ISAs against the definition, exact, over
// shapes around the 8×8 tile (partial tiles on either edge) and with row strides wider than the
// matrix (nothing outside it is read or written).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "engine/kernels/transpose.h"

namespace xnn::kernels {
namespace {

TEST(Transpose, BothIsasMatchTheDefinitionExactly) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<Isa> isas{Isa::kScalar};
  if (isa_supported(Isa::kAvx2)) isas.push_back(Isa::kAvx2);
  for (int trial = 0; trial < 80; ++trial) {
    const int64_t rows = 1 + rng() % 40, cols = 1 + rng() % 40;
    const int64_t ld_src = cols + rng() % 3, ld_dst = rows + rng() % 3;
    std::vector<float> src(static_cast<size_t>(rows * ld_src));
    for (float& v : src) v = value(rng);
    for (Isa isa : isas) {
      const float sentinel = -7.0f;
      std::vector<float> dst(static_cast<size_t>(cols * ld_dst), sentinel);
      f32_transpose(rows, cols, src.data(), ld_src, dst.data(), ld_dst, isa);
      for (int64_t j = 0; j < cols; ++j) {
        for (int64_t i = 0; i < ld_dst; ++i) {
          const float want = i < rows ? src[static_cast<size_t>(i * ld_src + j)] : sentinel;
          ASSERT_EQ(dst[static_cast<size_t>(j * ld_dst + i)], want)
              << rows << "x" << cols << " at (" << j << ", " << i << ") isa " << isa_name(isa);
        }
      }
    }
  }
}

}  // namespace
}  // namespace xnn::kernels
