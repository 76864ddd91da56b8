// Sparse kernels (engine/kernels/spmm.h) against a dense double-precision reference: random
// shapes with column tails (n not a multiple of 8/16/32), empty rows, all-zero weights, 0% and
// 99% sparsity, every epilogue (bias, residual, each activation), both ISAs, 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/core/error.h"
#include "engine/kernels/spmm.h"
#include "engine/kernels/spmv_sliced.h"

namespace xnn::kernels {
namespace {

std::vector<Isa> isas() {
  std::vector<Isa> v{Isa::kScalar};
  if (isa_supported(Isa::kAvx2)) v.push_back(Isa::kAvx2);
  return v;
}

std::vector<float> sparse_random(int64_t count, double sparsity, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = u(rng) < sparsity ? 0.0f : dist(rng);
  return v;
}

// Max |got - want| relative to the largest |want| (at least 1).
double rel_error(const std::vector<float>& got, const std::vector<double>& want) {
  double max_ref = 1.0, max_diff = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(want[i]));
    max_diff = std::isnan(got[i]) ? 1e30 : std::max(max_diff, std::fabs(got[i] - want[i]));
  }
  return max_diff / max_ref;
}

struct SpmmCase {
  int64_t rows, cols, n;
  double sparsity;
  bool bias, residual;
  Activation act;
  int64_t x_pad = 0;  // x row stride = n + x_pad
};

void check_spmm(const SpmmCase& c, std::mt19937& rng, const std::string& what) {
  const int64_t stride = c.n + c.x_pad;
  const std::vector<float> w = sparse_random(c.rows * c.cols, c.sparsity, rng);
  const std::vector<float> x = sparse_random(c.cols * stride, 0.0, rng);
  const std::vector<float> bias = sparse_random(c.rows, 0.0, rng);
  const std::vector<float> res = sparse_random(c.rows * c.n, 0.0, rng);
  std::vector<double> want(static_cast<size_t>(c.rows * c.n));
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t j = 0; j < c.n; ++j) {
      double acc = c.bias ? bias[r] : 0.0;
      for (int64_t k = 0; k < c.cols; ++k) acc += double{w[r * c.cols + k]} * x[k * stride + j];
      if (c.residual) acc += res[r * c.n + j];
      want[r * c.n + j] = apply_activation_scalar(static_cast<float>(acc), c.act);
    }
  }
  const SparseWeights sw(c.rows, c.cols, w.data(), c.cols, stride);
  SpmmEpilogue ep;
  ep.bias = c.bias ? bias.data() : nullptr;
  ep.residual = c.residual ? res.data() : nullptr;
  ep.ldr = c.n;
  ep.act = c.act;
  for (Isa isa : isas()) {
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      std::vector<float> y(static_cast<size_t>(c.rows * c.n), std::nanf(""));
      f32_spmm(sw, c.n, x.data(), y.data(), c.n, ep, &pool, isa);
      EXPECT_LT(rel_error(y, want), 1e-5) << what << " isa " << isa_name(isa) << " threads " << threads;
      // With the sliced form beside it, a narrow column tail goes through the permute kernel.
      if (spmm_sliced_tail(c.n, isa) == 0) continue;
      const SlicedSparseWeights tail(c.rows, c.cols, w.data(), c.cols, spmv_sliced_shape());
      std::vector<float> yt(y.size(), std::nanf(""));
      f32_spmm(sw, c.n, x.data(), yt.data(), c.n, ep, &pool, isa, &tail);
      EXPECT_LT(rel_error(yt, want), 1e-5) << what << " with the sliced tail, threads " << threads;
    }
  }
  // The AVX-512 kernel does each output column's arithmetic as the AVX2 one: the same floats.
  if (avx512_enabled()) {
    std::vector<float> y2(static_cast<size_t>(c.rows * c.n), 0.0f), y5(y2.size(), 1.0f);
    f32_spmm_block__avx2(sw, 0, c.rows, 0, c.n, x.data(), y2.data(), c.n, ep);
    f32_spmm_block__avx512(sw, 0, c.rows, 0, c.n, x.data(), y5.data(), c.n, ep);
    EXPECT_EQ(y2, y5) << what << ": avx2 vs avx512 blocks";
  }
}

TEST(SparseWeights, CsrLayout) {
  // Row 0: cols 1, 3; row 1: empty; row 2: col 0.
  const std::vector<float> w = {0, 2, 0, 3, 0, 0, 0, 0, 5, 0, 0, -0.0f};
  const SparseWeights s(3, 4, w.data(), 4, 10);
  EXPECT_EQ(s.nnz(), 3);
  EXPECT_NEAR(s.sparsity(), 0.75, 1e-12);
  EXPECT_EQ(std::vector<int32_t>(s.row_start(), s.row_start() + 4), (std::vector<int32_t>{0, 2, 2, 3}));
  EXPECT_EQ(std::vector<int32_t>(s.columns(), s.columns() + 3), (std::vector<int32_t>{1, 3, 0}));
  EXPECT_EQ(s.x_stride(), 10);
  EXPECT_EQ(s.bytes(), 3 * sizeof(float) + (3 + 4) * sizeof(int32_t));  // values, columns, row starts
  EXPECT_NEAR(zero_fraction(w.data(), 12), 0.75, 1e-12);
}

// Deep rows are split into k-chunks of equal width (at most kMaxChunkCols); chunk_start marks
// where each chunk's nonzeros begin in every row, empty chunks included.
TEST(SparseWeights, ChunksSplitEveryRowByColumn) {
  std::mt19937 rng(5);
  for (const int64_t cols : std::vector<int64_t>{1, 128, SparseWeights::kMaxChunkCols, SparseWeights::kMaxChunkCols + 1, 512, 784}) {
    const int64_t rows = 7;
    std::vector<float> w = sparse_random(rows * cols, 0.8, rng);
    for (int64_t c = 0; c < cols; ++c) w[3 * cols + c] = 0.0f;  // an empty row
    const SparseWeights s(rows, cols, w.data(), cols, 1);
    const int64_t chunks = (cols + SparseWeights::kMaxChunkCols - 1) / SparseWeights::kMaxChunkCols;
    ASSERT_EQ(s.chunks(), chunks) << cols;
    EXPECT_EQ(s.chunk_cols(), (cols + chunks - 1) / chunks) << cols;
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t* cs = s.chunk_start(r);
      EXPECT_EQ(cs[0], s.row_start()[r]);
      EXPECT_EQ(cs[chunks], s.row_start()[r + 1]);
      for (int64_t c = 0; c < chunks; ++c) {
        for (int32_t k = cs[c]; k < cs[c + 1]; ++k) {
          EXPECT_GE(s.columns()[k], c * s.chunk_cols()) << cols << " row " << r << " chunk " << c;
          EXPECT_LT(s.columns()[k], (c + 1) * s.chunk_cols()) << cols << " row " << r << " chunk " << c;
        }
      }
    }
    const size_t offsets = static_cast<size_t>(rows + 1 + (chunks > 1 ? rows * (chunks + 1) : 0));
    EXPECT_EQ(s.bytes(), static_cast<size_t>(s.nnz()) * 8 + offsets * sizeof(int32_t)) << cols;
  }
}

// Between k-chunks the kernels keep partial sums in Y: with a row stride wider than n, the
// columns past n are never read or written, and every chunk count gives the reference.
TEST(Spmm, ChunkedWalkTouchesOnlyItsColumns) {
  std::mt19937 rng(17);
  for (const int64_t cols : {100, 300, 600}) {
    for (const int64_t n : {1, 17, 49, 64, 70}) {
      const int64_t rows = 21, ldy = n + 5;
      const std::vector<float> w = sparse_random(rows * cols, 0.8, rng), x = sparse_random(cols * n, 0.0, rng);
      const std::vector<float> bias = sparse_random(rows, 0.0, rng);
      const SparseWeights sw(rows, cols, w.data(), cols, n);
      SpmmEpilogue ep;
      ep.bias = bias.data();
      ep.act = Activation::relu();
      for (Isa isa : isas()) {
        std::vector<float> y(static_cast<size_t>(rows * ldy), 7.0f);
        f32_spmm(sw, n, x.data(), y.data(), ldy, ep, nullptr, isa);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t j = 0; j < ldy; ++j) {
            if (j >= n) {
              ASSERT_EQ(y[r * ldy + j], 7.0f) << isa_name(isa) << " cols " << cols << " n " << n << " row " << r;
              continue;
            }
            double acc = bias[r];
            for (int64_t k = 0; k < cols; ++k) acc += double{w[r * cols + k]} * x[k * n + j];
            ASSERT_NEAR(y[r * ldy + j], std::max(acc, 0.0), 1e-4 * (1 + std::fabs(acc)))
                << isa_name(isa) << " cols " << cols << " n " << n << " row " << r << " col " << j;
          }
        }
      }
    }
  }
}

// Threads that split a column block's rows share its panels: packed in k-slices by several
// tasks, then walked block by block. Bit for bit what one thread's block call returns.
TEST(Spmm, SharedPanelsPackedInSlicesMatchOneThreadsBlock) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "needs AVX2";
  std::mt19937 rng(23);
  for (const int64_t cols : {40, 300, 784}) {
    for (const int64_t n : {7, 49, 64, 100}) {
      const int64_t rows = 37, stride = n + 3;
      const std::vector<float> w = sparse_random(rows * cols, 0.8, rng), x = sparse_random(cols * stride, 0.0, rng);
      const std::vector<float> bias = sparse_random(rows, 0.0, rng), res = sparse_random(rows * n, 0.0, rng);
      const SparseWeights sw(rows, cols, w.data(), cols, stride);
      SpmmEpilogue ep;
      ep.bias = bias.data();
      ep.residual = res.data();
      ep.ldr = n;
      ep.act = Activation::relu();
      for (const bool avx512 : {false, true}) {
        if (avx512 && !avx512_enabled()) continue;
        const int64_t panel = avx512 ? kSpmmPanelAvx512 : kSpmmPanelAvx2;
        std::vector<float> want(static_cast<size_t>(rows * n)), got(want.size(), std::nanf(""));
        (avx512 ? f32_spmm_block__avx512 : f32_spmm_block__avx2)(sw, 0, rows, 0, n, x.data(), want.data(), n, ep);
        std::vector<float> panels(static_cast<size_t>((n + panel - 1) / panel * panel * cols + 16));
        float* aligned = panels.data();
        while (reinterpret_cast<uintptr_t>(aligned) % 64) ++aligned;
        for (const int64_t k0 : {int64_t{32}, int64_t{0}}) {  // slices in either order
          const int64_t k1 = k0 == 0 ? std::min<int64_t>(32, cols) : cols;
          if (k0 >= k1) continue;
          (avx512 ? f32_spmm_pack__avx512 : f32_spmm_pack__avx2)(x.data(), stride, cols, k0, k1, 0, n, aligned);
        }
        for (int64_t r0 = 0; r0 < rows; r0 += 8) {
          (avx512 ? f32_spmm_packed__avx512 : f32_spmm_packed__avx2)(sw, r0, std::min(rows, r0 + 8), 0, n, aligned,
                                                                      got.data(), n, ep);
        }
        EXPECT_EQ(got, want) << (avx512 ? "avx512" : "avx2") << " cols " << cols << " n " << n;
      }
    }
  }
}

// Deep inputs (129-828 columns: packed panels beyond L1), every column tail; check_spmm also
// holds the AVX-512 kernel equal to the AVX2 one bit for bit.
TEST(Spmm, DeepInputsMatchDenseReference) {
  std::mt19937 rng(13);
  const double sparsities[] = {0.0, 0.8, 0.97};
  for (int trial = 0; trial < 12; ++trial) {
    SpmmCase c;
    c.rows = 1 + rng() % 70;
    c.cols = 129 + rng() % 700;
    c.n = 1 + rng() % 140;
    c.sparsity = sparsities[rng() % 3];
    c.bias = rng() % 2;
    c.residual = rng() % 2;
    c.act = rng() % 2 ? Activation::relu() : Activation{ActKind::kSilu};
    check_spmm(c, rng, "deep trial " + std::to_string(trial));
  }
  check_spmm({300, 784, 64, 0.8, true, false, Activation::relu()}, rng, "784->300 at batch 64");
  check_spmm({64, 512, 49, 0.8, true, true, Activation::clip(0, 6)}, rng, "7x7 512->64, residual");
}

TEST(Spmm, RandomShapesAndEpiloguesMatchDenseReference) {
  std::mt19937 rng(7);
  const Activation acts[] = {Activation{},
                             Activation::relu(),
                             Activation::clip(-0.5f, 0.5f),
                             Activation::leaky_relu(0.1f),
                             {ActKind::kHardSwish},
                             {ActKind::kHardSigmoid, 0.2f, 0.5f},
                             {ActKind::kSigmoid},
                             {ActKind::kSilu}};
  const double sparsities[] = {0.0, 0.5, 0.8, 0.9, 0.99};
  for (int trial = 0; trial < 80; ++trial) {
    SpmmCase c;
    c.rows = 1 + rng() % 40;
    c.cols = 1 + rng() % 70;
    c.n = 1 + rng() % 300;  // tails of every width
    c.sparsity = sparsities[rng() % 5];
    c.bias = rng() % 2;
    c.residual = rng() % 2;
    c.act = acts[rng() % 8];
    c.x_pad = rng() % 3 == 0 ? rng() % 9 : 0;
    check_spmm(c, rng, "trial " + std::to_string(trial));
  }
}

TEST(Spmm, EdgeCases) {
  std::mt19937 rng(11);
  check_spmm({16, 24, 49, 1.0 - 1e-9, true, true, Activation::relu()}, rng, "all-zero weights, bias + residual");
  check_spmm({7, 5, 33, 1.0 - 1e-9, false, false, {}}, rng, "all-zero weights, no epilogue");
  check_spmm({64, 64, 256, 0.0, true, false, Activation::relu()}, rng, "dense weights");
  check_spmm({64, 128, 300, 0.99, true, true, Activation::clip(0, 6)}, rng, "99% sparse, many empty rows");
  check_spmm({3, 3, 1, 0.5, true, false, {}}, rng, "one column");
  check_spmm({1, 1, 8, 0.0, false, false, {}}, rng, "1x1 weight");
  check_spmm({40, 512, 3136, 0.9, true, false, Activation::relu()}, rng, "large: several column blocks");
}

// A batch-1 linear layer: random shape (up to 150 x 300), weights at `sparsity`, and the
// double-precision reference y = act(W·x + bias).
struct GemvCase {
  int64_t rows, cols;
  std::vector<float> w, x, bias;
  bool with_bias;
  Activation act;
  std::vector<double> want;
};

GemvCase random_gemv(std::mt19937& rng, double sparsity) {
  GemvCase c;
  c.rows = 1 + rng() % 150, c.cols = 1 + rng() % 300;
  c.w = sparse_random(c.rows * c.cols, sparsity, rng);
  c.x = sparse_random(c.cols, 0.0, rng);
  c.bias = sparse_random(c.rows, 0.0, rng);
  c.with_bias = rng() % 2;
  c.act = rng() % 2 ? Activation::relu() : Activation{ActKind::kSigmoid};
  c.want.resize(static_cast<size_t>(c.rows));
  for (int64_t r = 0; r < c.rows; ++r) {
    double acc = c.with_bias ? c.bias[r] : 0.0;
    for (int64_t k = 0; k < c.cols; ++k) acc += double{c.w[r * c.cols + k]} * c.x[k];
    c.want[r] = apply_activation_scalar(static_cast<float>(acc), c.act);
  }
  return c;
}

TEST(Spmv, RandomShapesMatchDenseReference) {
  std::mt19937 rng(5);
  const double sparsities[] = {0.0, 0.7, 0.9, 0.99, 1.0 - 1e-9};
  for (int trial = 0; trial < 60; ++trial) {
    const GemvCase c = random_gemv(rng, sparsities[rng() % 5]);
    const SparseWeights sw(c.rows, c.cols, c.w.data(), c.cols, 1);
    for (Isa isa : isas()) {
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        std::vector<float> y(static_cast<size_t>(c.rows), std::nanf(""));
        f32_spmv(sw, c.x.data(), c.with_bias ? c.bias.data() : nullptr, c.act, y.data(), &pool, isa);
        EXPECT_LT(rel_error(y, c.want), 1e-5) << "trial " << trial << " isa " << isa_name(isa);
      }
    }
  }
}

// The sliced format (spmv_sliced.h) of a 3x40 matrix: one 16-row group, two blocks of 4 slices
// whose 32-column windows slide; slices pad a row that has run out with weight 0, lane 0.
TEST(SlicedSparseWeights, LayoutOfSlicesAndBlocks) {
  std::vector<float> w(3 * 40, 0.0f);
  w[0 * 40 + 3] = 1, w[0 * 40 + 31] = 2;  // row 0: columns 3 and 31
  w[2 * 40 + 5] = 3;                      // row 2: column 5
  w[1 * 40 + 39] = 4;                     // row 1: column 39
  const SlicedSparseWeights sw(3, 40, w.data(), 40);
  EXPECT_EQ(sw.groups(), 1);
  EXPECT_EQ(sw.nnz(), 4);
  ASSERT_EQ(sw.group_start()[1], 2);
  // Block 0's window starts at the first pending column, 3: [3, 35) holds rows 0 and 2's
  // nonzeros. Block 1's would start at 39, and is moved left to end at the row's end: [8, 40).
  EXPECT_EQ(sw.blocks()[0].col0, 3);
  EXPECT_EQ(sw.blocks()[1].col0, 8);
  for (int b = 0; b < 2; ++b) EXPECT_EQ(sw.blocks()[b].slices, SlicedSparseWeights::kSlicesPerBlock) << b;
  ASSERT_EQ(sw.slices(), 8);
  const float* v = sw.weights();
  const uint8_t* l = sw.lanes();
  const std::vector<float> slice0(v, v + 3), slice1(v + 16, v + 19), slice4(v + 64, v + 67);
  EXPECT_EQ(slice0, (std::vector<float>{1, 0, 3}));  // rows 0..2, first nonzero in block 0's window
  EXPECT_EQ(slice1, (std::vector<float>{2, 0, 0}));  // second: only row 0 has one
  for (int i = 32; i < 64; ++i) EXPECT_EQ(v[i], 0.0f) << i;  // slices 2 and 3: padding
  EXPECT_EQ(slice4, (std::vector<float>{0, 4, 0}));  // block 1: row 1's column 39
  // Index vectors, one per block (byte j of a lane's dword = slice j), relative to the window.
  EXPECT_EQ(l[4 * 0 + 0], 0);   // row 0, slice 0: column 3 - 3
  EXPECT_EQ(l[4 * 0 + 1], 28);  // row 0, slice 1: column 31 - 3
  EXPECT_EQ(l[4 * 2 + 0], 2);   // row 2, slice 0: column 5 - 3
  EXPECT_EQ(l[64 + 4 * 1], 31);  // block 1, row 1, slice 0: column 39 - 8
  EXPECT_EQ(sw.blocks()[1].first_slice, 4);
  EXPECT_EQ(sw.blocks()[1].first_quad, 1);
  for (int lane = 3; lane < 16; ++lane) EXPECT_EQ(v[lane], 0) << lane;
  EXPECT_EQ(SlicedSparseWeights(5, 7, std::vector<float>(35, 0.0f).data(), 7).slices(), 0);
}

// An 8x8 shape (the format takes any width up to 32; the AVX2 kernel's is 8x16): a lane with
// more than 4 nonzeros in a window goes on in the next block, whose window slides to the first
// column still pending in the group.
TEST(SlicedSparseWeights, EightByEightWindowsSlide) {
  std::vector<float> w(9 * 10, 0.0f);
  for (int c = 0; c < 6; ++c) w[0 * 10 + c] = 1.0f + static_cast<float>(c);  // row 0: columns 0-5
  w[3 * 10 + 9] = 7;                                                          // row 3: column 9
  w[8 * 10 + 2] = 8;                                                          // row 8: the second group
  const SliceShape eight_by_eight{8, 8};
  const SlicedSparseWeights sw(9, 10, w.data(), 10, eight_by_eight);
  EXPECT_EQ(sw.shape(), eight_by_eight);
  EXPECT_EQ(sw.groups(), 2);
  EXPECT_EQ(sw.nnz(), 8);
  // Group 0: [0, 8) takes row 0's columns 0-3; then [2, 10) (column 4 pending, moved left to end
  // at the row's end) takes row 0's 4 and 5 and row 3's 9 together. Aligned windows would need
  // three blocks.
  ASSERT_EQ(sw.group_start()[1], 2);
  EXPECT_EQ(sw.blocks()[0].col0, 0);
  EXPECT_EQ(sw.blocks()[1].col0, 2);
  EXPECT_EQ(sw.blocks()[1].first_slice, 4);
  EXPECT_EQ(sw.blocks()[1].first_quad, 1);
  EXPECT_EQ(sw.blocks()[2].col0, 2);  // group 1: row 8's column 2
  EXPECT_EQ(sw.slices(), 12);
  EXPECT_EQ(sw.weights()[5 * 8 + 0], 6.0f);      // slice 5 (block 1, slice 1): row 0's column 5
  EXPECT_EQ(sw.weights()[4 * 8 + 3], 7.0f);      // slice 4 (block 1, slice 0): row 3's column 9
  EXPECT_EQ(sw.weights()[6 * 8 + 0], 0.0f);      // slices 6, 7: padding
  EXPECT_EQ(sw.lanes()[1 * 32 + 4 * 0 + 1], 3);  // block 1, row 0, slice 1: column 5 - 2
  EXPECT_EQ(sw.lanes()[1 * 32 + 4 * 3 + 0], 7);  // block 1, row 3, slice 0: column 9 - 2
  EXPECT_EQ(sw.lanes()[2 * 32 + 4 * 0 + 0], 0);  // group 1, row 8: column 2 - 2
  EXPECT_THROW(SlicedSparseWeights(4, 4, w.data(), 10, SliceShape{4, 8}), xnn::Error);
  EXPECT_THROW(SlicedSparseWeights(4, 4, w.data(), 10, SliceShape{8, 33}), xnn::Error);
}

// Sliding windows against aligned ones: uniform 80% zeros, 784 -> 300 (LeNet-300-100's first
// layer). Aligned 32-column windows padded to 4 slices would hold ~5700 slices here (52% of the
// lanes useful); the sliding ones hold fewer than 4100 (over 70%), and every nonzero exactly once.
TEST(SlicedSparseWeights, SlidingWindowsFillMostLanes) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> w(300 * 784);
  int64_t nonzeros = 0;
  for (float& x : w) {
    x = u(rng) < 0.8f ? 0.0f : 1.0f + u(rng);
    nonzeros += x != 0.0f;
  }
  const SlicedSparseWeights sw(300, 784, w.data(), 784);
  EXPECT_EQ(sw.nnz(), nonzeros);
  int64_t stored = 0;
  for (int64_t i = 0; i < sw.slices() * 16; ++i) stored += sw.weights()[i] != 0.0f;
  EXPECT_EQ(stored, nonzeros);
  EXPECT_LT(sw.slices(), 4100);
  EXPECT_GT(static_cast<double>(nonzeros) / static_cast<double>(16 * sw.slices()), 0.7);
  for (int32_t b = 0; b < sw.group_start()[sw.groups()]; ++b) {
    EXPECT_GE(sw.blocks()[b].col0, 0);
    EXPECT_LE(sw.blocks()[b].col0 + 32, 784);  // inside the row: the kernel's loads are whole
  }
  // Slices and index vectors start on cache lines (each 16x32 one is a whole line).
  EXPECT_EQ(reinterpret_cast<uintptr_t>(sw.weights()) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(sw.lanes()) % 64, 0u);
}

// Every path of the sliced GEMV, in both shapes, against the dense double reference, and the
// SIMD kernels against the scalar path bit for bit (the format fixes the sum order); shapes
// with partial row groups and column blocks.
TEST(SpmvSliced, RandomShapesMatchDenseReferenceAndPathsAreBitExact) {
  std::mt19937 rng(6);
  const double sparsities[] = {0.0, 0.7, 0.8, 0.95, 1.0 - 1e-9};
  for (int trial = 0; trial < 60; ++trial) {
    const GemvCase c = random_gemv(rng, sparsities[rng() % 5]);
    for (const SliceShape shape : {kSlices16x32, kSlices8x16, SliceShape{8, 8}}) {
      const SlicedSparseWeights sw(c.rows, c.cols, c.w.data(), c.cols, shape);
      const std::string what = "trial " + std::to_string(trial) + " " + spmv_sliced_kernel_name(shape);
      for (int threads : {1, 2}) {
        ThreadPool pool(threads);
        std::vector<float> y(static_cast<size_t>(c.rows), std::nanf(""));
        f32_spmv_sliced(sw, c.x.data(), c.with_bias ? c.bias.data() : nullptr, c.act, y.data(), &pool);
        EXPECT_LT(rel_error(y, c.want), 1e-5) << what;
      }
      std::vector<float> scalar(static_cast<size_t>(sw.groups() * shape.rows)), fast(scalar.size());
      f32_spmv_sliced_groups__scalar(sw, 0, sw.groups(), c.x.data(), scalar.data());
      if (shape == kSlices16x32 && cpu_features().avx512) {
        f32_spmv_sliced_groups__avx512(sw, 0, sw.groups(), c.x.data(), fast.data());
        EXPECT_EQ(scalar, fast) << what;
      }
      if (shape == kSlices8x16 && isa_supported(Isa::kAvx2)) {
        f32_spmv_sliced_groups__avx2(sw, 0, sw.groups(), c.x.data(), fast.data());
        EXPECT_EQ(scalar, fast) << what;
      }
    }
  }
}

// The columns past the last whole vector of 16, when at most kMaxSlicedTail, go to the sliced
// form (AVX-512 only); the other columns come out exactly as without it.
TEST(Spmm, NarrowColumnTailTakesTheSlicedForm) {
  if (!avx512_enabled() || spmv_sliced_shape() != kSlices16x32) GTEST_SKIP() << "AVX-512 only";
  EXPECT_EQ(spmm_sliced_tail(49, Isa::kAvx2), 1);   // 7x7
  EXPECT_EQ(spmm_sliced_tail(196, Isa::kAvx2), 4);  // 14x14
  EXPECT_EQ(spmm_sliced_tail(3, Isa::kAvx2), 3);
  EXPECT_EQ(spmm_sliced_tail(64, Isa::kAvx2), 0);
  EXPECT_EQ(spmm_sliced_tail(53, Isa::kAvx2), 0);  // 5 columns: a vector of the column kernel
  EXPECT_EQ(spmm_sliced_tail(49, Isa::kScalar), 0);
  std::mt19937 rng(7);
  for (const int64_t n : {49, 196, 3, 20}) {
    const int64_t rows = 83, cols = 400;  // a partial group of 16 rows; three k-chunks
    const std::vector<float> w = sparse_random(rows * cols, 0.8, rng);
    const std::vector<float> x = sparse_random(cols * n, 0.0, rng);
    const std::vector<float> bias = sparse_random(rows, 0.0, rng);
    const std::vector<float> res = sparse_random(rows * n, 0.0, rng);
    const SparseWeights sw(rows, cols, w.data(), cols, n);
    const SlicedSparseWeights tail(rows, cols, w.data(), cols, spmv_sliced_shape());
    SpmmEpilogue ep;
    ep.bias = bias.data();
    ep.residual = res.data();
    ep.ldr = n;
    ep.act = Activation{ActKind::kClip, 0.0f, 6.0f};
    std::vector<float> plain(static_cast<size_t>(rows * n)), sliced(plain.size(), std::nanf(""));
    f32_spmm(sw, n, x.data(), plain.data(), n, ep, nullptr, Isa::kAvx2);
    ThreadPool pool(2);
    f32_spmm(sw, n, x.data(), sliced.data(), n, ep, &pool, Isa::kAvx2, &tail);
    const int64_t first_tail = n - spmm_sliced_tail(n, Isa::kAvx2);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        const float a = plain[r * n + j], b = sliced[r * n + j];
        if (j < first_tail) {
          ASSERT_EQ(a, b) << "n " << n << " row " << r << " column " << j;
        } else {
          ASSERT_NEAR(a, b, 1e-4f * std::max(1.0f, std::fabs(a))) << "n " << n << " row " << r << " column " << j;
        }
      }
    }
  }
  // A sliced form of another matrix is refused.
  const std::vector<float> w(16 * 8, 1.0f);
  const SparseWeights sw(16, 8, w.data(), 8, 1);
  const SlicedSparseWeights other(16, 4, w.data(), 8, spmv_sliced_shape());
  std::vector<float> x(8, 1.0f), y(16);
  EXPECT_THROW(f32_spmm(sw, 1, x.data(), y.data(), 1, SpmmEpilogue{}, nullptr, Isa::kAvx2, &other), Error);
}

TEST(Spmm, KernelNames) {
  EXPECT_EQ(spmm_kernel_name(Isa::kAvx2), avx512_enabled() ? "f32_spmm_64x1__avx512" : "f32_spmm_32x1__avx2");
  EXPECT_EQ(spmm_kernel_name(Isa::kScalar), "f32_spmm_8x1__scalar");
  EXPECT_EQ(spmv_kernel_name(Isa::kAvx2), "f32_spmv_8x1__avx2");
  EXPECT_EQ(spmv_sliced_kernel_name(kSlices16x32),
            avx512_enabled() ? "f32_spmv_16x32perm__avx512" : "f32_spmv_16x32perm__scalar");
  EXPECT_EQ(spmv_sliced_kernel_name(kSlices8x16),
            best_isa() == Isa::kAvx2 ? "f32_spmv_8x16perm__avx2" : "f32_spmv_8x16perm__scalar");
  EXPECT_EQ(spmv_sliced_kernel_name(SliceShape{8, 8}), "f32_spmv_8x8perm__scalar");
  EXPECT_EQ(spmv_sliced_shape(), avx512_enabled() ? kSlices16x32 : kSlices8x16);
}

}  // namespace
}  // namespace xnn::kernels
