// Int8 GEMM driver (weight packing, task split, per-call X packing), the scalar micro-kernels and
// packers, and the reference. The design and the exactness argument are in qgemm.h; the AVX2
// kernels are in qgemm_avx2.cpp.
//
// Per task (a block of Y rows × a block of Y columns):
//   for jc in column blocks          pack X[:, jc..] (whole K) into NR-column panels: L2-sized
//     for ir in MR row panels        the weight panel (K × MR) stays in L1/L2 across the block
//       for jr in NR panels          micro-kernel: MR×NR int32 tile in registers, requantised
// With no K blocking the accumulators never leave registers, so the output is written once, as
// uint8; the X panel a kernel call streams (K × NR values) comes from L2.
#include "engine/kernels/qgemm.h"

#include <algorithm>
#include <limits>
#include <new>

#include "engine/core/error.h"
#include "engine/kernels/qgemm_internal.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace internal {
namespace {

// The int32 accumulation as the vector kernels do it: wrapping two's-complement adds, so only the
// final (range-checked) sum has to fit.
inline int32_t wrap_add(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

template <int MR, int NR, int KU, typename WT, typename XT>
void qgemm_scalar(size_t mr, size_t nr, size_t groups, const void* wv, const void* xv, const QTileParams& p,
                  uint8_t* y, int64_t ldy) {
  const WT* w = static_cast<const WT*>(wv);
  const XT* x = static_cast<const XT*>(xv);
  int32_t acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = p.init[i];
  for (size_t g = 0; g < groups; ++g) {
    for (int i = 0; i < MR; ++i) {
      for (int j = 0; j < NR; ++j) {
        int32_t dot = 0;  // |KU · 128 · 255| fits easily
        for (int u = 0; u < KU; ++u) dot += int32_t{w[i * KU + u]} * int32_t{x[j * KU + u]};
        acc[i][j] = wrap_add(acc[i][j], dot);
      }
    }
    w += MR * KU;
    x += NR * KU;
  }
  for (size_t i = 0; i < mr; ++i) {
    uint8_t* row = y + static_cast<int64_t>(i) * ldy;
    for (size_t j = 0; j < nr; ++j) row[j] = requantize(acc[i][j], p.multiplier[i], p.lower, p.upper, p.zero_point);
  }
}

template <int NR, int KU, typename T>
void pack_x_scalar(const QXRows& x, int64_t k, int64_t j0, int64_t nc, void* dst) {
  T* out = static_cast<T*>(dst);
  const int64_t groups = (k + KU - 1) / KU;
  for (int64_t c0 = 0; c0 < nc; c0 += NR) {
    const int64_t cols = std::min<int64_t>(NR, nc - c0);
    for (int64_t g = 0; g < groups; ++g) {
      for (int u = 0; u < KU; ++u) {
        const int64_t kk = g * KU + u;
        const uint8_t* src = kk < k ? x.row(kk) + j0 + c0 : nullptr;
        for (int64_t c = 0; c < NR; ++c) out[c * KU + u] = static_cast<T>(src && c < cols ? src[c] : 0);
      }
      out += NR * KU;
    }
  }
}

}  // namespace

XNN_QGEMM_UKERNEL(qs8_gemm_4x8c2__scalar) {
  qgemm_scalar<kScalarMr, kScalarNr, 2, int16_t, int16_t>(mr, nr, groups, w, x, p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_6x16c2__scalar) {
  qgemm_scalar<kAvx2C2Mr, kAvx2Nr, 2, int16_t, int16_t>(mr, nr, groups, w, x, p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_4x16c4__scalar) {
  qgemm_scalar<kAvx2C4Mr, kAvx2Nr, 4, int8_t, uint8_t>(mr, nr, groups, w, x, p, y, ldy);
}
XNN_QGEMM_UKERNEL(qs8_gemm_6x16c4__scalar) {
  qgemm_scalar<kVnniMr, kAvx2Nr, 4, int8_t, uint8_t>(mr, nr, groups, w, x, p, y, ldy);
}
XNN_QPACK_X(qs8_pack_x_8c2__scalar) { pack_x_scalar<kScalarNr, 2, int16_t>(x, k, j0, nc, dst); }
XNN_QPACK_X(qs8_pack_x_16c2__scalar) { pack_x_scalar<kAvx2Nr, 2, int16_t>(x, k, j0, nc, dst); }
XNN_QPACK_X(qs8_pack_x_16c4__scalar) { pack_x_scalar<kAvx2Nr, 4, uint8_t>(x, k, j0, nc, dst); }

}  // namespace internal

namespace {
using internal::QGemmKernelSet;
using internal::QTileParams;
using internal::QXRows;

enum class Layout { kScalarC2, kAvx2C2, kAvx2C4, kVnniC4, kVnni512C4, kVnni512SmallC4 };

const QGemmKernelSet& kernels_for(Layout layout) {
  static const QGemmKernelSet scalar_c2 = {.mr = internal::kScalarMr, .nr = internal::kScalarNr, .ku = 2,
                                           .elem_bytes = 2, .main = internal::qs8_gemm_4x8c2__scalar,
                                           .narrow = nullptr, .pack_x = internal::qs8_pack_x_8c2__scalar,
                                           .name = "qs8_gemm_4x8c2__scalar"};
  static const QGemmKernelSet avx2_c2 = {.mr = internal::kAvx2C2Mr, .nr = internal::kAvx2Nr, .ku = 2,
                                         .elem_bytes = 2, .main = internal::qs8_gemm_6x16c2__avx2,
                                         .narrow = internal::qs8_gemm_6x8c2__avx2,
                                         .pack_x = internal::qs8_pack_x_16c2__avx2,
                                         .name = "qs8_gemm_6x16c2__avx2"};
  static const QGemmKernelSet avx2_c4 = {.mr = internal::kAvx2C4Mr, .nr = internal::kAvx2Nr, .ku = 4,
                                         .elem_bytes = 1, .main = internal::qs8_gemm_4x16c4__avx2,
                                         .narrow = internal::qs8_gemm_4x8c4__avx2,
                                         .pack_x = internal::qs8_pack_x_16c4__avx2,
                                         .name = "qs8_gemm_4x16c4__avx2"};
  // AVX2-packed weights on a CPU without AVX2 (packed elsewhere): same layouts, plain loops.
  static const QGemmKernelSet avx2_c2_layout = {.mr = internal::kAvx2C2Mr, .nr = internal::kAvx2Nr, .ku = 2,
                                                .elem_bytes = 2, .main = internal::qs8_gemm_6x16c2__scalar,
                                                .narrow = nullptr, .pack_x = internal::qs8_pack_x_16c2__scalar,
                                                .name = "qs8_gemm_6x16c2__scalar"};
  static const QGemmKernelSet avx2_c4_layout = {.mr = internal::kAvx2C4Mr, .nr = internal::kAvx2Nr, .ku = 4,
                                                .elem_bytes = 1, .main = internal::qs8_gemm_4x16c4__scalar,
                                                .narrow = nullptr, .pack_x = internal::qs8_pack_x_16c4__scalar,
                                                .name = "qs8_gemm_4x16c4__scalar"};
  static const QGemmKernelSet vnni_c4 = {.mr = internal::kVnniMr, .nr = internal::kAvx2Nr, .ku = 4,
                                         .elem_bytes = 1, .main = internal::qs8_gemm_6x16c4__avxvnni,
                                         .narrow = internal::qs8_gemm_6x8c4__avxvnni,
                                         .pack_x = internal::qs8_pack_x_16c4__avx2,
                                         .name = "qs8_gemm_6x16c4__avxvnni"};
  static const QGemmKernelSet vnni512_c4 = {.mr = internal::kVnniMr, .nr = internal::kAvx2Nr, .ku = 4,
                                            .elem_bytes = 1, .main = internal::qs8_gemm_6x16c4__avx512vnni,
                                            .narrow = internal::qs8_gemm_6x8c4__avx512vnni,
                                            .pack_x = internal::qs8_pack_x_16c4__avx2,
                                            .name = "qs8_gemm_6x16c4__avx512vnni"};
  static const QGemmKernelSet vnni_c4_layout = {.mr = internal::kVnniMr, .nr = internal::kAvx2Nr, .ku = 4,
                                                .elem_bytes = 1, .main = internal::qs8_gemm_6x16c4__scalar,
                                                .narrow = nullptr, .pack_x = internal::qs8_pack_x_16c4__scalar,
                                                .name = "qs8_gemm_6x16c4__scalar"};
  static const QGemmKernelSet vnni512 = {.mr = internal::kVnni512Mr, .nr = internal::kAvx2Nr, .ku = 4,
                                         .elem_bytes = 1, .main = internal::qs8_gemm_16x16c4__avx512vnni,
                                         .narrow = internal::qs8_gemm_16x8c4__avx512vnni,
                                         .pack_x = internal::qs8_pack_x_16c4__avx2,
                                         .name = "qs8_gemm_16x16c4__avx512vnni",
                                         .interleaved = internal::qs8_gemm_16x16c4_interleaved__avx512vnni,
                                         .interleaved_name = "qs8_gemm_16x16c4_interleaved__avx512vnni"};
  static const QGemmKernelSet vnni512_small = {.mr = internal::kVnni512SmallMr, .nr = internal::kAvx2Nr, .ku = 4,
                                               .elem_bytes = 1, .main = internal::qs8_gemm_8x16c4__avx512vnni,
                                               .narrow = internal::qs8_gemm_8x8c4__avx512vnni,
                                               .pack_x = internal::qs8_pack_x_16c4__avx2,
                                               .name = "qs8_gemm_8x16c4__avx512vnni",
                                               .interleaved = internal::qs8_gemm_8x16c4_interleaved__avx512vnni,
                                               .interleaved_name = "qs8_gemm_8x16c4_interleaved__avx512vnni"};
  const bool avx2 = isa_supported(Isa::kAvx2);
  switch (layout) {
    case Layout::kVnni512C4: return vnni512;  // only chosen where the CPU runs it
    case Layout::kVnni512SmallC4: return vnni512_small;
    case Layout::kAvx2C2: return avx2 ? avx2_c2 : avx2_c2_layout;
    case Layout::kAvx2C4: return avx2 ? avx2_c4 : avx2_c4_layout;
    case Layout::kVnniC4:
      if (avx2 && cpu_features().avx_vnni) return vnni_c4;
      return avx2 && cpu_features().avx512_vnni ? vnni512_c4 : vnni_c4_layout;
    default: return scalar_c2;
  }
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

constexpr int64_t kMaxProduct = 128 * 255;  // the largest |w · (x − zp)| and |w · x|

// Packs rows [0, m) of W into panels (layout in qgemm_internal.h) as T.
template <typename T>
void pack_weights(const QGemmKernelSet& ks, int64_t m, int64_t k, const int8_t* w, int64_t ldw, T* dst) {
  const int64_t groups = ceil_div(k, ks.ku), panels = ceil_div(m, ks.mr);
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t g = 0; g < groups; ++g) {
      for (int r = 0; r < ks.mr; ++r) {
        const int64_t row = p * ks.mr + r;
        for (int u = 0; u < ks.ku; ++u) {
          const int64_t kk = g * ks.ku + u;
          *dst++ = static_cast<T>(row < m && kk < k ? w[row * ldw + kk] : 0);
        }
      }
    }
  }
}

struct QGemmProblem {
  const QGemmKernelSet* ks;
  const PackedQs8Weights* w;
  int64_t m, n, k;
  QXRows x;
  uint8_t x_zero_point;
  const QRequant* rq;
  uint8_t* y;
  int64_t ldy;
};

// Packed X blocks are kept to about 1 MiB so that one stays in L2 (2 MiB per core here) beside
// the weight panel streaming through it.
constexpr int64_t kXBlockBytes = int64_t{1} << 20;

// The micro-kernels' parameters for one row panel at a time: requantisation bounds, and per row
// bias − x_zp·Σ_k w, the zero point's whole contribution (wrapping like the accumulation itself;
// the padded rows past M have bias and sum 0).
class RowPanelTiles {
 public:
  RowPanelTiles(const PackedQs8Weights& w, uint8_t x_zero_point, const QRequant& rq)
      : w_(w), x_zero_point_(x_zero_point), rq_(rq) {
    tile_.lower = requant_lower(rq);
    tile_.upper = requant_upper(rq);
    tile_.zero_point = rq.zero_point;
    tile_.qmin = rq.qmin;
    tile_.init = init_;
  }
  // The tile parameters of the row panel starting at row ir.
  const QTileParams& at(int64_t ir) {
    for (int i = 0; i < w_.kernels().mr; ++i) {
      init_[i] = static_cast<int32_t>(static_cast<uint32_t>(w_.bias()[ir + i]) -
                                      uint32_t{x_zero_point_} * static_cast<uint32_t>(w_.row_sums()[ir + i]));
    }
    tile_.multiplier = rq_.multiplier + ir;
    return tile_;
  }

 private:
  const PackedQs8Weights& w_;
  uint8_t x_zero_point_;
  const QRequant& rq_;
  QTileParams tile_;
  int32_t init_[internal::kMaxMr] = {};
};

// Computes Y[r0:r1, j0:j1] (r0 a multiple of mr, j0 of nr). Runs on one thread; packs its own X.
void run_task(const QGemmProblem& g, int64_t r0, int64_t r1, int64_t j0, int64_t j1) {
  const QGemmKernelSet& ks = *g.ks;
  const int64_t groups = ceil_div(g.k, ks.ku);
  const int64_t panel_elems = groups * ks.nr * ks.ku;  // one packed X panel
  const int64_t col_bytes = std::max<int64_t>(1, groups * ks.ku * ks.elem_bytes);
  const int64_t ncols = j1 - j0;
  const int64_t max_nc = std::max<int64_t>(ks.nr, kXBlockBytes / col_bytes / ks.nr * ks.nr);
  const int64_t nc_step = round_up(ceil_div(ncols, ceil_div(ncols, max_nc)), ks.nr);
  const size_t pack_bytes = static_cast<size_t>(ceil_div(std::min(nc_step, ncols), ks.nr) * panel_elems * ks.elem_bytes);
  auto* xpack = reinterpret_cast<uint8_t*>(thread_scratch_f32(std::max<size_t>(1, (pack_bytes + 3) / 4), 0));

  const auto* wdata = static_cast<const uint8_t*>(g.w->data());
  const int64_t w_panel_bytes = groups * ks.mr * ks.ku * ks.elem_bytes;
  RowPanelTiles tiles(*g.w, g.x_zero_point, *g.rq);
  for (int64_t jc = j0; jc < j1; jc += nc_step) {
    const int64_t nc = std::min(nc_step, j1 - jc);
    ks.pack_x(g.x, g.k, jc, nc, xpack);
    for (int64_t ir = r0; ir < r1; ir += ks.mr) {
      const size_t mr = static_cast<size_t>(std::min<int64_t>(ks.mr, g.m - ir));
      const QTileParams& tile = tiles.at(ir);
      const uint8_t* wpanel = wdata + ir / ks.mr * w_panel_bytes;
      for (int64_t jr = 0; jr < nc; jr += ks.nr) {
        const size_t nr = static_cast<size_t>(std::min<int64_t>(ks.nr, nc - jr));
        const internal::QGemmUkernelFn fn =
            (ks.narrow && nr * 2 <= static_cast<size_t>(ks.nr)) ? ks.narrow : ks.main;
        fn(mr, nr, static_cast<size_t>(groups), wpanel, xpack + jr / ks.nr * panel_elems * ks.elem_bytes, tile,
           g.y + ir * g.ldy + jc + jr, g.ldy);
      }
    }
  }
}

int64_t split_begin(int64_t t, int64_t parts, int64_t panels, int64_t width) { return t * panels / parts * width; }

// Splits Y into tm row blocks × tn column blocks, minimising the estimated time of the busiest
// thread (the fp32 GEMM's model): column splits cost nothing extra, row splits make tasks that
// share columns pack the same X again.
void plan_tasks(const QGemmKernelSet& ks, int64_t m, int64_t n, int64_t k, int threads, int64_t* tm, int64_t* tn) {
  *tm = *tn = 1;
  const int64_t kk = std::max<int64_t>(k, 1);
  if (threads <= 1 || m * n * kk < (int64_t{1} << 18)) return;
  const int64_t mp = ceil_div(m, ks.mr), np = ceil_div(n, ks.nr);
  const int64_t col_unit = ks.narrow ? ks.nr / 2 : ks.nr;
  constexpr double kPackCost = 4.0;  // packing one X value ~ 4 multiply-adds of kernel time
  constexpr double kWRead = 0.25;    // streaming one packed weight from L2/L3, mostly hidden
  const int64_t max_tasks = 2 * threads;
  double best = -1;
  for (int64_t a = 1; a <= std::min(mp, max_tasks); ++a) {
    int64_t rows = 0;
    for (int64_t t = 0; t < a; ++t)
      rows = std::max(rows, std::min(m, split_begin(t + 1, a, mp, ks.mr)) - split_begin(t, a, mp, ks.mr));
    rows = round_up(rows, ks.mr);
    for (int64_t b = 1; b <= std::min(np, max_tasks / a); ++b) {
      int64_t cols = 0;
      for (int64_t t = 0; t < b; ++t)
        cols = std::max(
            cols, round_up(std::min(n, split_begin(t + 1, b, np, ks.nr)) - split_begin(t, b, np, ks.nr), col_unit));
      const double task = (static_cast<double>(rows) * static_cast<double>(cols) +
                           kPackCost * static_cast<double>(cols) + kWRead * static_cast<double>(rows)) *
                          static_cast<double>(kk);
      const double cost = static_cast<double>(ceil_div(a * b, threads)) * task;
      if (best < 0 || cost < best * 0.999) {
        best = cost;
        *tm = a;
        *tn = b;
      }
    }
  }
}

}  // namespace

bool qs8_weights_fit_maddubs(int64_t m, int64_t k, const int8_t* w, int64_t ldw) {
  for (int64_t i = 0; i < m; ++i) {
    const int8_t* row = w + i * ldw;
    for (int64_t j = 0; j < k; j += 2) {
      const int pos0 = std::max<int>(row[j], 0), neg0 = std::min<int>(row[j], 0);
      const int w1 = j + 1 < k ? row[j + 1] : 0;
      // 255 · 128 = 32640 <= 32767 and 255 · −128 = −32640 >= −32768; one more either way saturates.
      if (pos0 + std::max(w1, 0) > 128 || neg0 + std::min(w1, 0) < -128) return false;
    }
  }
  return true;
}

int64_t qs8_gemm_max_depth(int64_t max_abs_bias) {
  return (std::numeric_limits<int32_t>::max() - max_abs_bias) / kMaxProduct;
}

Qs8Kernels best_qs8_kernels() {
  if (vnni512_enabled()) return Qs8Kernels::kVnni512;
  return vnni_enabled() ? Qs8Kernels::kVnni256 : Qs8Kernels::kAvx2;
}

bool qs8_kernels_supported(Qs8Kernels family) {
  switch (family) {
    case Qs8Kernels::kAvx2: return isa_supported(Isa::kAvx2);
    case Qs8Kernels::kVnni256: return isa_supported(Isa::kAvx2) && cpu_has_vnni();
    case Qs8Kernels::kVnni512: return isa_supported(Isa::kAvx2) && cpu_features().avx512_vnni;
  }
  return false;
}

PackedQs8Weights::PackedQs8Weights(int64_t m, int64_t k, const int8_t* w, int64_t ldw, const int32_t* bias, Isa isa,
                                   Qs8Kernels family)
    : m_(m), k_(k), isa_(isa) {
  XNN_CHECK(m >= 0 && k >= 0, "PackedQs8Weights: negative size " + std::to_string(m) + "x" + std::to_string(k));
  XNN_CHECK(m * k == 0 || w, "PackedQs8Weights: null weights");
  XNN_CHECK(m <= 1 || ldw >= k, "PackedQs8Weights: weight row stride " + std::to_string(ldw) + " < K " +
                                    std::to_string(k));
  for (int64_t i = 0; i < m; ++i) {
    const int64_t b = bias ? bias[i] : 0;
    XNN_CHECK(k <= qs8_gemm_max_depth(b < 0 ? -b : b),
              "PackedQs8Weights: row " + std::to_string(i) + " (bias " + std::to_string(b) + ", K " +
                  std::to_string(k) + ") can overflow the int32 accumulator: expected |bias| + 32640·K < 2^31");
  }
  Layout layout = Layout::kScalarC2;
  if (isa == Isa::kAvx2 && family == Qs8Kernels::kVnni512 && qs8_kernels_supported(family)) {
    // 8-row panels where 16-row ones would pad the rows by more than a tenth more (24 rows: 32 vs 24).
    const int64_t padded16 = round_up(m, internal::kVnni512Mr), padded8 = round_up(m, internal::kVnni512SmallMr);
    layout = padded16 * 10 > padded8 * 11 ? Layout::kVnni512SmallC4 : Layout::kVnni512C4;
  } else if (isa == Isa::kAvx2 && family != Qs8Kernels::kAvx2 && cpu_has_vnni()) {
    layout = Layout::kVnniC4;
  } else if (isa == Isa::kAvx2) {
    layout = qs8_weights_fit_maddubs(m, k, w, ldw) ? Layout::kAvx2C4 : Layout::kAvx2C2;
  }
  ks_ = &kernels_for(layout);

  const int64_t panels = ceil_div(m, ks_->mr), padded_m = panels * ks_->mr;
  const int64_t groups = ceil_div(k, ks_->ku);
  bytes_ = static_cast<size_t>(padded_m * groups * ks_->ku * ks_->elem_bytes);
  constexpr std::align_val_t kAlign{64};
  auto* p = static_cast<uint8_t*>(::operator new[](std::max<size_t>(bytes_, 64), kAlign));
  data_ = std::shared_ptr<uint8_t[]>(p, [](uint8_t* q) { ::operator delete[](q, std::align_val_t{64}); });
  if (ks_->elem_bytes == 2) {
    pack_weights(*ks_, m, k, w, ldw, reinterpret_cast<int16_t*>(p));
  } else {
    pack_weights(*ks_, m, k, w, ldw, reinterpret_cast<int8_t*>(p));
  }
  bias_ = std::shared_ptr<int32_t[]>(new int32_t[static_cast<size_t>(padded_m)]());
  row_sums_ = std::shared_ptr<int32_t[]>(new int32_t[static_cast<size_t>(padded_m)]());
  for (int64_t i = 0; i < m; ++i) {
    int64_t sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += w[i * ldw + j];
    row_sums_[static_cast<size_t>(i)] = static_cast<int32_t>(sum);  // |sum| <= 128·K, checked above
    bias_[static_cast<size_t>(i)] = bias ? bias[i] : 0;
  }
}

const char* PackedQs8Weights::kernel_name() const { return ks_ ? ks_->name : ""; }

namespace {

// qs8_gemm_interleaved's task: Y[r0:r1, j0:j1], row panels outer so a weight panel stays in L1/L2
// across the columns; nothing is packed.
void run_interleaved_task(const PackedQs8Weights& w, const uint8_t* x, const int64_t* offsets,
                          uint8_t x_zero_point, const QRequant& rq, uint8_t* y, int64_t ldy, int64_t r0, int64_t r1,
                          int64_t j0, int64_t j1) {
  const QGemmKernelSet& ks = w.kernels();
  const int64_t m = w.rows(), groups = ceil_div(w.depth(), ks.ku);
  const auto* wdata = static_cast<const uint8_t*>(w.data());
  const int64_t w_panel_bytes = groups * ks.mr * ks.ku * ks.elem_bytes;
  RowPanelTiles tiles(w, x_zero_point, rq);
  for (int64_t ir = r0; ir < r1; ir += ks.mr) {
    const size_t mr = static_cast<size_t>(std::min<int64_t>(ks.mr, m - ir));
    const QTileParams& tile = tiles.at(ir);
    const uint8_t* wpanel = wdata + ir / ks.mr * w_panel_bytes;
    for (int64_t jr = j0; jr < j1; jr += ks.nr) {
      const size_t nr = static_cast<size_t>(std::min<int64_t>(ks.nr, j1 - jr));
      ks.interleaved(mr, nr, static_cast<size_t>(groups), wpanel, x + 4 * jr, offsets, tile, y + ir * ldy + jr, ldy);
    }
  }
}

void run_qgemm(const PackedQs8Weights& w, int64_t n, const QXRows& x, uint8_t x_zero_point, const QRequant& rq,
               uint8_t* y, int64_t ldy, ThreadPool* pool) {
  const int64_t m = w.rows(), k = w.depth();
  const QGemmKernelSet& ks = w.kernels();
  const QGemmProblem g{&ks, &w, m, n, k, x, x_zero_point, &rq, y, ldy};
  int64_t tm = 1, tn = 1;
  plan_tasks(ks, m, n, k, pool ? pool->threads() : 1, &tm, &tn);
  const int64_t mp = ceil_div(m, ks.mr), np = ceil_div(n, ks.nr);
  parallel_for(pool, tm * tn, [&](int64_t t) {
    const int64_t ti = t / tn, tj = t % tn;
    const int64_t r0 = split_begin(ti, tm, mp, ks.mr), r1 = std::min(m, split_begin(ti + 1, tm, mp, ks.mr));
    const int64_t j0 = split_begin(tj, tn, np, ks.nr), j1 = std::min(n, split_begin(tj + 1, tn, np, ks.nr));
    if (r0 < r1 && j0 < j1) run_task(g, r0, r1, j0, j1);
  });
}

}  // namespace

void qs8_gemm(const PackedQs8Weights& w, int64_t n, const uint8_t* x, int64_t ldx, uint8_t x_zero_point,
              const QRequant& rq, uint8_t* y, int64_t ldy, ThreadPool* pool) {
  const int64_t m = w.rows(), k = w.depth();
  if (m == 0 || n <= 0) return;
  check_requant(rq, m, "qs8_gemm");
  XNN_CHECK(k <= 1 || ldx >= n, "qs8_gemm: X row stride " + std::to_string(ldx) + " < N " + std::to_string(n));
  XNN_CHECK(m == 1 || ldy >= n, "qs8_gemm: Y row stride " + std::to_string(ldy) + " < N " + std::to_string(n));
  run_qgemm(w, n, QXRows{x, ldx, nullptr}, x_zero_point, rq, y, ldy, pool);
}

void qs8_gemm_rows(const PackedQs8Weights& w, int64_t n, const uint8_t* x, const int64_t* row_offsets,
                   uint8_t x_zero_point, const QRequant& rq, uint8_t* y, int64_t ldy, ThreadPool* pool) {
  const int64_t m = w.rows();
  if (m == 0 || n <= 0) return;
  check_requant(rq, m, "qs8_gemm_rows");
  XNN_CHECK(m == 1 || ldy >= n, "qs8_gemm_rows: Y row stride " + std::to_string(ldy) + " < N " + std::to_string(n));
  run_qgemm(w, n, QXRows{x, 0, row_offsets}, x_zero_point, rq, y, ldy, pool);
}

bool qs8_gemm_interleaved_supported(const PackedQs8Weights& w) {
  return w.rows() > 0 && w.kernels().interleaved != nullptr && w.kernels().ku == 4;
}

const char* PackedQs8Weights::interleaved_kernel_name() const { return ks_ ? ks_->interleaved_name : ""; }

void qs8_gemm_interleaved(const PackedQs8Weights& w, int64_t n, const uint8_t* x, const int64_t* group_offsets,
                          uint8_t x_zero_point, const QRequant& rq, uint8_t* y, int64_t ldy, ThreadPool* pool) {
  const int64_t m = w.rows();
  if (m == 0 || n <= 0) return;
  XNN_CHECK(qs8_gemm_interleaved_supported(w), std::string("qs8_gemm_interleaved: weights packed for ") +
                                                   w.kernel_name() + " have no interleaved-X kernel");
  check_requant(rq, m, "qs8_gemm_interleaved");
  XNN_CHECK(m == 1 || ldy >= n, "qs8_gemm_interleaved: Y row stride " + std::to_string(ldy) + " < N " +
                                    std::to_string(n));
  const QGemmKernelSet& ks = w.kernels();
  int64_t tm = 1, tn = 1;
  plan_tasks(ks, m, n, w.depth(), pool ? pool->threads() : 1, &tm, &tn);
  const int64_t mp = ceil_div(m, ks.mr), np = ceil_div(n, ks.nr);
  parallel_for(pool, tm * tn, [&](int64_t t) {
    const int64_t ti = t / tn, tj = t % tn;
    const int64_t r0 = split_begin(ti, tm, mp, ks.mr), r1 = std::min(m, split_begin(ti + 1, tm, mp, ks.mr));
    const int64_t j0 = split_begin(tj, tn, np, ks.nr), j1 = std::min(n, split_begin(tj + 1, tn, np, ks.nr));
    if (r0 < r1 && j0 < j1) run_interleaved_task(w, x, group_offsets, x_zero_point, rq, y, ldy, r0, r1, j0, j1);
  });
}

void qs8_gemm_reference(int64_t m, int64_t n, int64_t k, const int8_t* w, int64_t ldw, const int32_t* bias,
                        const uint8_t* x, int64_t ldx, uint8_t x_zero_point, const QRequant& rq, uint8_t* y,
                        int64_t ldy) {
  check_requant(rq, m, "qs8_gemm_reference");
  const float lower = requant_lower(rq), upper = requant_upper(rq);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = bias ? bias[i] : 0;
      for (int64_t p = 0; p < k; ++p) acc += int64_t{w[i * ldw + p]} * (int64_t{x[p * ldx + j]} - x_zero_point);
      XNN_CHECK(acc >= std::numeric_limits<int32_t>::min() && acc <= std::numeric_limits<int32_t>::max(),
                "qs8_gemm_reference: accumulator of row " + std::to_string(i) + " overflows int32");
      y[i * ldy + j] = requantize(static_cast<int32_t>(acc), rq.multiplier[i], lower, upper, rq.zero_point);
    }
  }
}

}  // namespace xnn::kernels
