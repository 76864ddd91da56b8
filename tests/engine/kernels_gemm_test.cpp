// Tests for the packed fp32 GEMM (engine/kernels/gemm.h): every ISA's micro-kernel against a naive
// double-precision oracle, over tail sizes (M, N, K around MR/NR/KC/NC), strided operands, ldc > n,
// each epilogue and several thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/gemm.h"

namespace xnn::kernels {
namespace {

// An operand stored in a buffer with arbitrary strides; at() addresses it like MatrixRef.
struct Operand {
  std::vector<float> buf;
  MatrixRef ref;
};

// rows × cols filled with uniform [-1, 1). layout: 'r' row-major, 'p' row-major with padded rows,
// 't' transposed (column-major), 's' both strides > 1 (every other element of a padded buffer).
Operand make_operand(std::mt19937& rng, int64_t rows, int64_t cols, char layout) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Operand o;
  if (layout == 'r') {
    o.buf.resize(static_cast<size_t>(rows * cols + 1));
    o.ref = {o.buf.data(), cols, 1};
  } else if (layout == 'p') {
    o.buf.resize(static_cast<size_t>(rows * (cols + 5) + 1));
    o.ref = {o.buf.data(), cols + 5, 1};
  } else if (layout == 't') {
    o.buf.resize(static_cast<size_t>(rows * cols + 1));
    o.ref = {o.buf.data(), 1, rows};
  } else {
    const int64_t ld = 2 * cols + 3;
    o.buf.resize(static_cast<size_t>(rows * ld + 1));
    o.ref = {o.buf.data(), ld, 2};
  }
  for (float& v : o.buf) v = dist(rng);
  return o;
}

std::vector<float> random_vector(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Checks C against act(sum_k a(i,k)·b(k,j) + bias[i] + residual[i*ldr + j]) summed in double.
// fp32 accumulation error grows like sqrt(K)·ulp·sum|terms| (random signs); the bound allows about
// 8 times that, plus a few ulp of the result for the activation (AVX2 Sigmoid/Silu use a
// polynomial exp). Tight enough that a 1e-3 slip in an epilogue formula fails.
void expect_matches_reference(int64_t m, int64_t n, int64_t k, MatrixRef a, MatrixRef b, const float* c, int64_t ldc,
                              const GemmEpilogue& ep, const std::string& what) {
  const double tol = 5e-7 * std::sqrt(static_cast<double>(k) + 1.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = static_cast<double>(a.at(i, p)) * b.at(p, j);
        sum += t;
        mag += std::fabs(t);
      }
      if (ep.bias) {
        sum += ep.bias[i];
        mag += std::fabs(ep.bias[i]);
      }
      if (ep.residual) {
        sum += ep.residual[i * ep.ldr + j];
        mag += std::fabs(ep.residual[i * ep.ldr + j]);
      }
      const double want = apply_activation_scalar(static_cast<float>(sum), ep.act);
      const double got = c[i * ldc + j];
      ASSERT_NEAR(got, want, tol * mag + 2e-6 * std::fabs(want) + 1e-30)
          << what << " m=" << m << " n=" << n << " k=" << k << " at (" << i << ", " << j << ")";
    }
  }
}

// A GEMM path: the ISA and, for Isa::kAvx2, the micro-kernel family (AVX2 or AVX-512).
struct GemmPath {
  Isa isa;
  F32GemmKernels family;
  const char* name;
};

class GemmIsaTest : public ::testing::TestWithParam<GemmPath> {
 protected:
  void SetUp() override {
    if (!isa_supported(isa())) GTEST_SKIP() << isa_name(isa()) << " not supported on this CPU";
    if (!f32_gemm_kernels_supported(family())) GTEST_SKIP() << GetParam().name << " kernels not supported on this CPU";
  }
  Isa isa() const { return GetParam().isa; }
  F32GemmKernels family() const { return GetParam().family; }
};

// Every combination of tail-heavy sizes for M, N and K: around MR (4, 6), NR (8, 16), small K
// (the direct-B path) and K = 257 (two K blocks for the scalar kernel), both overloads (packed /
// unpacked A) alternately.
TEST_P(GemmIsaTest, MatchesReferenceOverSizeCube) {
  const std::vector<int64_t> sizes = {1, 2, 5, 6, 7, 15, 16, 17, 33, 64, 100, 257};
  std::mt19937 rng(1);
  int variant = 0;
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        // The 257-cube combinations dominate the oracle's time without covering anything new.
        if (m * n * k > 257 * 100 * 64) continue;
        Operand a = make_operand(rng, m, k, 'r');
        Operand b = make_operand(rng, k, n, 'r');
        std::vector<float> c(static_cast<size_t>(m * n), -7.0f);
        GemmEpilogue ep;
        if (++variant % 2) {
          f32_gemm(PackedA(m, k, a.ref, isa(), family()), n, b.ref, c.data(), n, ep, nullptr);
        } else {
          f32_gemm(m, n, k, a.ref, b.ref, c.data(), n, ep, nullptr, isa(), family());
        }
        expect_matches_reference(m, n, k, a.ref, b.ref, c.data(), n, ep, "cube");
        if (HasFatalFailure()) return;
      }
    }
  }
}

// A last panel of 1..8 valid columns, alone (N <= 8) or after full panels, over one and several
// K blocks, with the whole epilogue. B is exactly K×N floats in its own allocation: the AVX-512
// narrow kernel reads such a panel in place, and must not read past its columns (ASan builds
// catch a read beyond the last row).
TEST_P(GemmIsaTest, NarrowLastPanelEveryWidth) {
  std::mt19937 rng(7);
  for (int64_t tail = 1; tail <= 8; ++tail) {
    for (int64_t n : {tail, 16 + tail, 48 + tail}) {
      for (int64_t k : {3, 300, 801}) {
        const int64_t m = 21;
        Operand a = make_operand(rng, m, k, 'r');
        std::vector<float> bmem = random_vector(rng, static_cast<size_t>(k * n));
        const MatrixRef b{bmem.data(), n, 1};
        std::vector<float> bias = random_vector(rng, m), res = random_vector(rng, static_cast<size_t>(m * n));
        GemmEpilogue ep{bias.data(), res.data(), n, Activation::leaky_relu(0.1f)};
        std::vector<float> c(static_cast<size_t>(m * n));
        f32_gemm(PackedA(m, k, a.ref, isa(), family()), n, b, c.data(), n, ep, nullptr);
        expect_matches_reference(m, n, k, a.ref, b, c.data(), n, ep, "narrow tail");
        if (HasFatalFailure()) return;
      }
    }
  }
}

// K beyond KC (256): several K blocks accumulate through C, and bias/residual/activation must
// still be applied exactly once.
TEST_P(GemmIsaTest, DeepKAccumulatesAcrossBlocks) {
  std::mt19937 rng(2);
  for (int64_t k : {255, 256, 257, 513, 1000, 2304}) {
    const int64_t m = 13, n = 37;
    Operand a = make_operand(rng, m, k, 'r');
    Operand b = make_operand(rng, k, n, 'r');
    std::vector<float> bias = random_vector(rng, m), res = random_vector(rng, static_cast<size_t>(m * n));
    GemmEpilogue ep{bias.data(), res.data(), n, Activation::clip(-0.5f, 0.5f)};
    std::vector<float> c(static_cast<size_t>(m * n));
    f32_gemm(PackedA(m, k, a.ref, isa(), family()), n, b.ref, c.data(), n, ep, nullptr);
    expect_matches_reference(m, n, k, a.ref, b.ref, c.data(), n, ep, "deep K");
    if (HasFatalFailure()) return;
  }
}

// N beyond NC (512): several column blocks, the last one partial.
TEST_P(GemmIsaTest, WideNSpansColumnBlocks) {
  std::mt19937 rng(3);
  for (int64_t n : {511, 513, 1100, 3136}) {
    const int64_t m = 7, k = 19;
    Operand a = make_operand(rng, m, k, 'r');
    Operand b = make_operand(rng, k, n, 'r');
    std::vector<float> bias = random_vector(rng, m);
    GemmEpilogue ep{bias.data(), nullptr, 0, Activation::relu()};
    std::vector<float> c(static_cast<size_t>(m * n));
    f32_gemm(m, n, k, a.ref, b.ref, c.data(), n, ep, nullptr, isa(), family());
    expect_matches_reference(m, n, k, a.ref, b.ref, c.data(), n, ep, "wide N");
    if (HasFatalFailure()) return;
  }
}

// Transposed and generally strided A and B are read through their strides (no copies by the
// caller); packing must honour both strides.
TEST_P(GemmIsaTest, StridedAndTransposedOperands) {
  std::mt19937 rng(4);
  const std::vector<std::vector<int64_t>> shapes = {{1, 1, 1}, {7, 17, 5}, {33, 15, 300}, {6, 16, 16}, {100, 64, 33}};
  for (const auto& s : shapes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    for (char la : {'r', 'p', 't', 's'}) {
      for (char lb : {'r', 'p', 't', 's'}) {
        Operand a = make_operand(rng, m, k, la);
        Operand b = make_operand(rng, k, n, lb);
        std::vector<float> c(static_cast<size_t>(m * n));
        const std::string what = std::string("A ") + la + " B " + lb;
        f32_gemm(PackedA(m, k, a.ref, isa(), family()), n, b.ref, c.data(), n, {}, nullptr);
        expect_matches_reference(m, n, k, a.ref, b.ref, c.data(), n, {}, what + " packed");
        f32_gemm(m, n, k, a.ref, b.ref, c.data(), n, {}, nullptr, isa(), family());
        expect_matches_reference(m, n, k, a.ref, b.ref, c.data(), n, {}, what + " unpacked");
        if (HasFatalFailure()) return;
      }
    }
  }
}

// C rows are exactly n wide inside a wider buffer: nothing between rows or past the last row
// may be written (edge tiles use masked stores / per-element loops).
TEST_P(GemmIsaTest, LdcLargerThanNLeavesGapsUntouched) {
  std::mt19937 rng(5);
  const float kSentinel = 12345.0f;
  for (int64_t n : {1, 5, 8, 9, 15, 17, 31, 33}) {
    for (int64_t m : {1, 5, 7, 13}) {
      const int64_t k = 300, ldc = n + 3;
      Operand a = make_operand(rng, m, k, 'r');
      Operand b = make_operand(rng, k, n, 'r');
      std::vector<float> res = random_vector(rng, static_cast<size_t>(m * (n + 5)));
      GemmEpilogue ep{nullptr, res.data(), n + 5, Activation::leaky_relu(0.1f)};
      // Exactly the bytes C may touch, plus a guard after the last row.
      std::vector<float> c(static_cast<size_t>((m - 1) * ldc + n + 16), kSentinel);
      f32_gemm(PackedA(m, k, a.ref, isa(), family()), n, b.ref, c.data(), ldc, ep, nullptr);
      expect_matches_reference(m, n, k, a.ref, b.ref, c.data(), ldc, ep, "ldc > n");
      for (int64_t i = 0; i < m; ++i) {
        const int64_t gap_end = i + 1 < m ? (i + 1) * ldc : static_cast<int64_t>(c.size());
        for (int64_t j = i * ldc + n; j < gap_end; ++j)
          ASSERT_EQ(c[static_cast<size_t>(j)], kSentinel) << "m=" << m << " n=" << n << " wrote index " << j;
      }
    }
  }
}

// Each activation, with and without bias and residual, on a shape with edge tiles in both
// directions and two K blocks.
TEST_P(GemmIsaTest, EpilogueVariants) {
  const std::vector<std::pair<std::string, Activation>> acts = {
      {"None", {}},
      {"Relu", Activation::relu()},
      {"Clip", Activation::clip(0.0f, 6.0f)},
      {"LeakyRelu", Activation::leaky_relu(0.1f)},
      {"HardSwish", {ActKind::kHardSwish}},
      {"HardSigmoid", {ActKind::kHardSigmoid, 1.0f / 6.0f, 0.5f}},
      {"Sigmoid", {ActKind::kSigmoid}},
      {"Silu", {ActKind::kSilu}},
  };
  std::mt19937 rng(6);
  const int64_t m = 17, n = 41, k = 300;
  Operand a = make_operand(rng, m, k, 'r');
  for (float& v : a.buf) v *= 0.1f;  // keeps |A·B| near |bias|, |residual|: the bound stays tight
  Operand b = make_operand(rng, k, n, 'r');
  // Wide bias/residual ranges so every activation's branches (negative, clipped, linear) occur.
  std::vector<float> bias = random_vector(rng, m), res = random_vector(rng, static_cast<size_t>(m * n));
  for (float& v : bias) v *= 8.0f;
  for (float& v : res) v *= 8.0f;
  const PackedA pa(m, k, a.ref, isa(), family());
  for (const auto& [name, act] : acts) {
    for (int with = 0; with < 4; ++with) {
      GemmEpilogue ep{(with & 1) ? bias.data() : nullptr, (with & 2) ? res.data() : nullptr, n, act};
      std::vector<float> c(static_cast<size_t>(m * n));
      f32_gemm(pa, n, b.ref, c.data(), n, ep, nullptr);
      expect_matches_reference(m, n, k, a.ref, b.ref, c.data(), n, ep,
                               name + ((with & 1) ? " +bias" : "") + ((with & 2) ? " +residual" : ""));
      if (HasFatalFailure()) return;
    }
  }
}

// Residual may be C itself (in-place add), also when K spans several blocks.
TEST_P(GemmIsaTest, ResidualMayAliasC) {
  std::mt19937 rng(7);
  for (int64_t k : {3, 700}) {
    const int64_t m = 11, n = 29;
    Operand a = make_operand(rng, m, k, 'r');
    Operand b = make_operand(rng, k, n, 'r');
    std::vector<float> bias = random_vector(rng, m);
    std::vector<float> c = random_vector(rng, static_cast<size_t>(m * n));
    const std::vector<float> res = c;
    f32_gemm(PackedA(m, k, a.ref, isa(), family()), n, b.ref, c.data(), n, {bias.data(), c.data(), n, Activation::relu()},
             nullptr);
    expect_matches_reference(m, n, k, a.ref, b.ref, c.data(), n, {bias.data(), res.data(), n, Activation::relu()},
                             "aliased residual");
    if (HasFatalFailure()) return;
  }
}

// Empty M or N writes nothing; empty K gives act(bias + residual).
TEST_P(GemmIsaTest, DegenerateSizes) {
  std::mt19937 rng(8);
  std::vector<float> c(64, 3.0f);
  Operand a = make_operand(rng, 4, 4, 'r');
  Operand b = make_operand(rng, 4, 4, 'r');
  f32_gemm(0, 4, 4, a.ref, b.ref, c.data(), 4, {}, nullptr, isa(), family());
  f32_gemm(4, 0, 4, a.ref, b.ref, c.data(), 4, {}, nullptr, isa(), family());
  f32_gemm(PackedA(0, 4, a.ref, isa(), family()), 4, b.ref, c.data(), 4, {}, nullptr);
  f32_gemm(PackedA(4, 4, a.ref, isa(), family()), 0, b.ref, c.data(), 4, {}, nullptr);
  for (float v : c) ASSERT_EQ(v, 3.0f);

  const int64_t m = 9, n = 19;
  std::vector<float> bias = random_vector(rng, m), res = random_vector(rng, static_cast<size_t>(m * n));
  GemmEpilogue ep{bias.data(), res.data(), n, Activation::relu()};
  std::vector<float> out(static_cast<size_t>(m * n), 99.0f);
  f32_gemm(m, n, 0, a.ref, b.ref, out.data(), n, ep, nullptr, isa(), family());
  expect_matches_reference(m, n, 0, a.ref, b.ref, out.data(), n, ep, "k=0 unpacked");
  std::fill(out.begin(), out.end(), 99.0f);
  f32_gemm(PackedA(m, 0, a.ref, isa(), family()), n, b.ref, out.data(), n, ep, nullptr);
  expect_matches_reference(m, n, 0, a.ref, b.ref, out.data(), n, ep, "k=0 packed");
}

// Threads split C into row and column blocks (small M with large N, small N with large M,
// both small); every split must give exactly the single-thread result: each element is
// computed by the same kernel with the same K blocking wherever its tile lands.
TEST_P(GemmIsaTest, ThreadCountsGiveIdenticalResults) {
  std::mt19937 rng(9);
  const std::vector<std::vector<int64_t>> shapes = {{64, 700, 50}, {130, 49, 300}, {7, 33, 600}, {257, 257, 64},
                                                    {1, 2000, 70}, {2000, 1, 70},  {30, 30, 30}};
  ThreadPool pool2(2), pool3(3);
  for (const auto& s : shapes) {
    const int64_t m = s[0], n = s[1], k = s[2];
    Operand a = make_operand(rng, m, k, 'r');
    Operand b = make_operand(rng, k, n, 'r');
    std::vector<float> bias = random_vector(rng, m), res = random_vector(rng, static_cast<size_t>(m * n));
    GemmEpilogue ep{bias.data(), res.data(), n, Activation::clip(0.0f, 6.0f)};
    const PackedA pa(m, k, a.ref, isa(), family());
    std::vector<float> c1(static_cast<size_t>(m * n)), c2(c1.size()), c3(c1.size()), c3u(c1.size());
    f32_gemm(pa, n, b.ref, c1.data(), n, ep, nullptr);
    expect_matches_reference(m, n, k, a.ref, b.ref, c1.data(), n, ep, "1 thread");
    f32_gemm(pa, n, b.ref, c2.data(), n, ep, &pool2);
    f32_gemm(pa, n, b.ref, c3.data(), n, ep, &pool3);
    f32_gemm(m, n, k, a.ref, b.ref, c3u.data(), n, ep, &pool3, isa(), family());
    ASSERT_EQ(c1, c2) << "2 threads, m=" << m << " n=" << n << " k=" << k;
    ASSERT_EQ(c1, c3) << "3 threads, m=" << m << " n=" << n << " k=" << k;
    ASSERT_EQ(c1, c3u) << "3 threads unpacked A, m=" << m << " n=" << n << " k=" << k;
  }
}

// B handed over in the micro-kernel's panel layout gives bit for bit the result of the same B
// row-major (same K blocking, same micro-kernel), with the whole epilogue, over N tails, several K
// blocks and thread counts; the padding lanes of the last panel (NaN here) reach no output. The
// row-major shapes take both of the driver's ways with B: panels read in place (one A panel of
// 16 rows at K = 144; 40 rows at K = 120 over N = 785, whose rows spread over the L1 sets) and
// packed (24 rows at K = 144 over N = 3136, whose rows share 16 sets).
TEST_P(GemmIsaTest, PackedBMatchesRowMajorB) {
  std::mt19937 rng(11);
  const int nr = f32_gemm_panel_shape(isa(), family()).nr;
  ThreadPool pool2(2);
  for (const auto& s : std::vector<std::vector<int64_t>>{{64, 160, 576}, {128, 49, 1152}, {7, 33, 27}, {40, 1, 600},
                                                         {17, 300, 64}, {16, 3135, 144}, {24, 3136, 144},
                                                         {40, 785, 120}}) {
    const int64_t m = s[0], n = s[1], k = s[2];
    Operand a = make_operand(rng, m, k, 'r');
    Operand b = make_operand(rng, k, n, 'r');
    const int64_t panels = (n + nr - 1) / nr;
    std::vector<float> packed(static_cast<size_t>(panels * k * nr), std::numeric_limits<float>::quiet_NaN());
    for (int64_t q = 0; q < k; ++q)
      for (int64_t j = 0; j < n; ++j) packed[static_cast<size_t>((j / nr) * k * nr + q * nr + j % nr)] = b.ref.at(q, j);
    std::vector<float> bias = random_vector(rng, m), res = random_vector(rng, static_cast<size_t>(m * n));
    GemmEpilogue ep{bias.data(), res.data(), n, Activation::clip(0.0f, 6.0f)};
    const PackedA pa(m, k, a.ref, isa(), family());
    std::vector<float> want(static_cast<size_t>(m * n)), got1(want.size(), -7.0f), got2(want.size(), -7.0f);
    f32_gemm(pa, n, b.ref, want.data(), n, ep, nullptr);
    f32_gemm_packed_b(pa, n, packed.data(), got1.data(), n, ep, nullptr);
    f32_gemm_packed_b(pa, n, packed.data(), got2.data(), n, ep, &pool2);
    ASSERT_EQ(want, got1) << "m=" << m << " n=" << n << " k=" << k;
    ASSERT_EQ(want, got2) << "2 threads, m=" << m << " n=" << n << " k=" << k;
  }
}

// One PackedA is immutable and may be shared by concurrent callers (sessions on several threads).
TEST_P(GemmIsaTest, PackedAIsShareableAcrossThreads) {
  std::mt19937 rng(10);
  const int64_t m = 40, n = 300, k = 280;
  Operand a = make_operand(rng, m, k, 'r');
  Operand b = make_operand(rng, k, n, 'r');
  const PackedA pa(m, k, a.ref, isa(), family());
  std::vector<float> want(static_cast<size_t>(m * n));
  f32_gemm(pa, n, b.ref, want.data(), n, {}, nullptr);
  std::vector<std::vector<float>> got(3, std::vector<float>(want.size()));
  std::vector<std::thread> threads;
  for (auto& g : got)
    threads.emplace_back([&] {
      for (int rep = 0; rep < 5; ++rep) f32_gemm(pa, n, b.ref, g.data(), n, {}, nullptr);
    });
  for (auto& t : threads) t.join();
  for (const auto& g : got) ASSERT_EQ(g, want);
}

INSTANTIATE_TEST_SUITE_P(Gemm, GemmIsaTest,
                         ::testing::Values(GemmPath{Isa::kScalar, F32GemmKernels::kAvx2, "scalar"},
                                           GemmPath{Isa::kAvx2, F32GemmKernels::kAvx2, "avx2"},
                                           GemmPath{Isa::kAvx2, F32GemmKernels::kAvx512, "avx512"}),
                         [](const ::testing::TestParamInfo<GemmPath>& info) { return std::string(info.param.name); });

TEST(GemmTest, KernelNamesFollowTheShapeConvention) {
  EXPECT_EQ(gemm_kernel_name(Isa::kScalar), "f32_gemm_4x8__scalar");
  if (isa_supported(Isa::kAvx2)) {
    EXPECT_EQ(gemm_kernel_name(Isa::kAvx2),
              avx512_enabled() ? "f32_gemm_16x16__avx512" : "f32_gemm_6x16__avx2");
    std::vector<float> a(6 * 4, 1.0f);
    EXPECT_STREQ(PackedA(6, 4, {a.data(), 4, 1}, Isa::kAvx2, F32GemmKernels::kAvx2).kernel_name(),
                 "f32_gemm_6x16__avx2");
  }
}

// The AVX-512 kernels apply Sigmoid/SiLU in registers (vmath_avx512.h), the AVX2 ones in a pass
// over the stored rows (elementwise_avx2.cpp): the same operations, so the same floats, at the
// clamps, the overflow and underflow edges, signed zeros, infinities and NaN. With K = 1 and
// A = 1, C is B exactly, so only the activations differ.
TEST(GemmTest, Avx512SigmoidAndSiluMatchTheAvx2PassBitwise) {
  if (!isa_supported(Isa::kAvx2) || !f32_gemm_kernels_supported(F32GemmKernels::kAvx512)) {
    GTEST_SKIP() << "AVX-512 not supported on this CPU";
  }
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> b = {-inf, -1e30f, -110.0f, -105.0f, -104.9f, -89.0f, -88.72f, -87.5f, -30.0f, -1.0f, -1e-7f,
                          -0.0f, 0.0f,   1e-7f,  0.5f,    1.0f,    16.0f,  30.0f,   88.5f,  88.8f,  89.0f, 100.0f,
                          1e30f, inf,    nan,    -nan,    -2.5f,   3.25f,  -1e-40f, 1e-40f, 7.0f,   -7.0f};
  // A sweep over exp's whole range, densest where its result is subnormal (|x| in 87.3-104: the
  // AVX-512 exp scales by 2^n in one vscalefps, the AVX2 one in two multiplies).
  for (float x = -106.0f; x <= 106.0f; x += 0.173f) b.push_back(x);
  for (float x = 87.0f; x <= 105.0f; x += 0.0113f) b.insert(b.end(), {x, -x});
  const int64_t n = static_cast<int64_t>(b.size());
  std::vector<float> one(16, 1.0f);
  for (ActKind kind : {ActKind::kSigmoid, ActKind::kSilu}) {
    GemmEpilogue ep;
    ep.act = Activation{kind};
    std::vector<float> c2(16 * static_cast<size_t>(n)), c5(c2.size());
    f32_gemm(PackedA(16, 1, {one.data(), 1, 1}, Isa::kAvx2, F32GemmKernels::kAvx2), n, {b.data(), n, 1}, c2.data(), n,
             ep, nullptr);
    f32_gemm(PackedA(16, 1, {one.data(), 1, 1}, Isa::kAvx2, F32GemmKernels::kAvx512), n, {b.data(), n, 1}, c5.data(),
             n, ep, nullptr);
    for (size_t i = 0; i < c2.size(); ++i) {
      if (std::isnan(c2[i])) {
        EXPECT_TRUE(std::isnan(c5[i])) << act_kind_name(kind) << " of " << b[i % b.size()];
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(c2[i]), std::bit_cast<uint32_t>(c5[i]))
            << act_kind_name(kind) << " of " << b[i % b.size()] << ": " << c2[i] << " vs " << c5[i];
      }
    }
  }
}

TEST(GemmTest, PackedARecordsShapeAndIsa) {
  std::vector<float> a(7 * 5, 1.0f);
  const PackedA pa(7, 5, {a.data(), 5, 1}, Isa::kScalar);
  EXPECT_EQ(pa.rows(), 7);
  EXPECT_EQ(pa.depth(), 5);
  EXPECT_EQ(pa.isa(), Isa::kScalar);
  EXPECT_EQ(pa.bytes(), 8u * 5u * sizeof(float));  // 7 rows padded to two 4-row panels
}

}  // namespace
}  // namespace xnn::kernels
