// Packed, register-blocked fp32 GEMM (Goto/BLIS loop nest) over the micro-kernels in
// gemm_internal.h.
//
// Per task (a block of C rows × a block of C columns, one task per thread or so):
//   for jc in NC-column blocks            B block (kc × nc) stays in L2
//     for pc in KC-deep blocks            pack B[pc.., jc..] into NR-column panels (scratch slot 0)
//       for ic in MC-row blocks           A block (mc × kc, packed once, contiguous) stays in L2
//         for jr in NR panels             B micro-panel (kc × NR) stays in L1
//           for ir in MR panels           micro-kernel: MR×NR tile in registers
// The first K block stores C, later ones add to it; bias, residual and the activation are applied
// by the micro-kernel with the last K block, so they touch each element once while it is in
// registers.
//
// Blocking (AVX2, measured on a 2-core Xeon with 48 KiB L1d / 2 MiB L2; tolerant of ±50%):
// KC = 384 keeps the B micro-panel at 24 KiB (fits a 32 KiB L1 as well), MC = 96, NC = 512. The
// AVX-512 kernel (16-row A panels, same B panels) keeps the same blocking.
#include "engine/kernels/gemm.h"

#include <algorithm>
#include <new>
#include <numeric>

#include "engine/core/error.h"
#include "engine/kernels/gemm_internal.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace internal {
namespace {

// Plain loops over the same packed layout; acc[][] is small enough to stay in registers, and
// the compiler vectorises the j loop with baseline SSE2.
template <int MR, int NR>
void gemm_scalar(size_t mr, size_t nr, size_t kc, const float* a, const float* b, int64_t b_stride, float* c,
                 int64_t ldc, bool accumulate, const GemmTileEpilogue& ep) {
  float acc[MR][NR] = {};
  for (size_t k = 0; k < kc; ++k) {
    for (int i = 0; i < MR; ++i)
      for (int j = 0; j < NR; ++j) acc[i][j] += a[i] * b[j];
    a += MR;
    b += b_stride;
  }
  const bool act = ep.act && ep.act->kind != ActKind::kNone;
  for (size_t i = 0; i < mr; ++i) {
    float* crow = c + static_cast<int64_t>(i) * ldc;
    const float* rrow = ep.residual ? ep.residual + static_cast<int64_t>(i) * ep.ldr : nullptr;
    for (size_t j = 0; j < nr; ++j) {
      float v = acc[i][j];
      if (accumulate) v += crow[j];
      if (ep.bias) v += ep.bias[i];
      if (rrow) v += rrow[j];
      crow[j] = act ? apply_activation_scalar(v, *ep.act) : v;
    }
  }
}

}  // namespace

XNN_GEMM_UKERNEL(f32_gemm_4x8__scalar) {
  gemm_scalar<kScalarMr, kScalarNr>(mr, nr, kc, a, b, b_stride, c, ldc, accumulate, ep);
}

XNN_GEMM_UKERNEL(f32_gemm_6x16__scalar) {
  gemm_scalar<kAvx2Mr, kAvx2Nr>(mr, nr, kc, a, b, b_stride, c, ldc, accumulate, ep);
}

}  // namespace internal

namespace {
using internal::GemmTileEpilogue;
using internal::GemmUkernelFn;

// A micro-kernel shape with its cache blocking. kc: B micro-panel (kc × NR) fits L1 with room
// for the A stream; mc × kc of A and kc × nc of B fit L2 together.
struct KernelSet {
  int mr, nr;
  GemmUkernelFn main;
  GemmUkernelFn narrow;  // for a panel with at most nr/2 valid columns; may be null
  bool narrow_reads_nr;  // narrow reads only the nr valid columns of each B row: a partial
                         // panel may then be read in place rather than packed
  bool prefetches_b;     // main prefetches the next 64 bytes of each B row it reads (the next
                         // panel's line when B is read in place)
  GemmUkernelFn main_one_a_panel;  // main for a task of one A panel reading B in place (prefetching
                                   // further ahead); may be null
  int64_t kc, mc, nc;
  const char* name;
};

const KernelSet& kernels_for(Isa isa, F32GemmKernels family) {
  // The AVX2 blocking: the B micro-panel (kc × 16) is the same, A panels are 16 rows instead of 6
  // (mc a multiple of both).
  static const KernelSet avx512 = {.mr = internal::kAvx512Mr,
                                   .nr = internal::kAvx2Nr,
                                   .main = internal::f32_gemm_16x16__avx512,
                                   .narrow = internal::f32_gemm_16x8__avx512,
                                   .narrow_reads_nr = true,
                                   .prefetches_b = true,
                                   .main_one_a_panel = internal::f32_gemm_16x16__avx512_prefetch2,
                                   .kc = 384,
                                   .mc = 96,
                                   .nc = 512,
                                   .name = "f32_gemm_16x16__avx512"};
  if (isa == Isa::kAvx2 && family == F32GemmKernels::kAvx512 && f32_gemm_kernels_supported(family)) return avx512;
  static const KernelSet avx2 = {.mr = internal::kAvx2Mr,
                                 .nr = internal::kAvx2Nr,
                                 .main = internal::f32_gemm_6x16__avx2,
                                 .narrow = internal::f32_gemm_6x8__avx2,
                                 .narrow_reads_nr = false,
                                 .prefetches_b = false,
                                 .main_one_a_panel = nullptr,
                                 .kc = 384,
                                 .mc = 96,
                                 .nc = 512,
                                 .name = "f32_gemm_6x16__avx2"};
  // An AVX2-packed A on a CPU without AVX2 (e.g. weights packed elsewhere): same layout, plain loops.
  static const KernelSet avx2_layout = {.mr = internal::kAvx2Mr,
                                        .nr = internal::kAvx2Nr,
                                        .main = internal::f32_gemm_6x16__scalar,
                                        .narrow = nullptr,
                                        .narrow_reads_nr = false,
                                        .prefetches_b = false,
                                        .main_one_a_panel = nullptr,
                                        .kc = 384,
                                        .mc = 96,
                                        .nc = 512,
                                        .name = "f32_gemm_6x16__scalar"};
  static const KernelSet scalar = {.mr = internal::kScalarMr,
                                   .nr = internal::kScalarNr,
                                   .main = internal::f32_gemm_4x8__scalar,
                                   .narrow = nullptr,
                                   .narrow_reads_nr = false,
                                   .prefetches_b = false,
                                   .main_one_a_panel = nullptr,
                                   .kc = 256,
                                   .mc = 64,
                                   .nc = 256,
                                   .name = "f32_gemm_4x8__scalar"};
  if (isa == Isa::kAvx2) return isa_supported(Isa::kAvx2) ? avx2 : avx2_layout;
  return scalar;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// K is cut into kblocks blocks of kc_step (the last may be shorter), balanced so that no block
// is a sliver (K = 576 with KC = 384 gives 2 × 288, not 384 + 192).
struct KBlocking {
  int64_t blocks, step;
};
KBlocking k_blocking(const KernelSet& ks, int64_t k) {
  const int64_t blocks = std::max<int64_t>(1, ceil_div(k, ks.kc));
  return {blocks, ceil_div(k, blocks)};
}

// Packed A is K-block major: the K block [pc, pc+kc) of every row panel is stored together, so
// the A block a K block needs streams from memory as one sequential run (a 512×4608 A does not
// fit L2 and is read once per call; panel-major storage, with each panel's K block 110 KB from
// the next, measured 61 GFLOP/s against 81 for 516×48×4608). Within a block, panel p starts at
// p·mr·kc and holds A[p·mr + r][pc + q] at q·mr + r. Offset of (panel p, block starting at pc):
int64_t a_offset(int64_t padded_m, int mr, int64_t pc, int64_t kc, int64_t p) { return pc * padded_m + p * mr * kc; }

// Packs row panels [p0, p1) of A (m × k) into dst (all panels' storage, see a_offset).
void pack_a_panels(const KernelSet& ks, MatrixRef a, int64_t m, int64_t k, int64_t p0, int64_t p1, float* dst) {
  const int mr = ks.mr;
  const int64_t padded_m = round_up(m, mr);
  const KBlocking kb = k_blocking(ks, k);
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t i0 = p * mr;
    const int rows = static_cast<int>(std::min<int64_t>(mr, m - i0));
    for (int64_t pc = 0; pc < k; pc += kb.step) {
      const int64_t kc = std::min(kb.step, k - pc);
      float* out = dst + a_offset(padded_m, mr, pc, kc, p);
      // k outer, rows inner: contiguous writes; reads are mr sequential streams (row-major A) or
      // contiguous runs of mr (transposed A).
      for (int64_t q = pc; q < pc + kc; ++q) {
        const float* src = a.data + i0 * a.row_stride + q * a.col_stride;
        int r = 0;
        for (; r < rows; ++r) out[r] = src[r * a.row_stride];
        for (; r < mr; ++r) out[r] = 0.0f;
        out += mr;
      }
    }
  }
}

// Packs B[pc : pc+kc, jc : jc+nc] into ceil(nc/nr) panels of kc × nr (zero-padded columns).
template <int NR>
void pack_b_block_nr(MatrixRef b, int64_t pc, int64_t kc, int64_t jc, int64_t nc, float* dst) {
  const int64_t full = nc / NR, tail = nc % NR;
  const int64_t panel_stride = kc * NR;
  if (b.col_stride == 1) {
    // Row-major B, 8 rows at a time: 8 sequential read streams, and each panel receives 8
    // consecutive k-rows (512 contiguous bytes) per visit. Writing one k-row to every panel in
    // turn instead makes the panels (kc·NR floats apart, a multiple of 4 KiB) fight over the
    // same L1 sets; walking panel by panel touches one line per row of B, each on a new page.
    // Either was about 2.5× slower here (7 MB of B for 64×3136×576).
    constexpr int64_t kRows = 8;
    for (int64_t q0 = 0; q0 < kc; q0 += kRows) {
      const int64_t rows = std::min(kRows, kc - q0);
      const float* src = b.data + (pc + q0) * b.row_stride + jc;
      float* out = dst + q0 * NR;
      for (int64_t p = 0; p < full; ++p) {
        for (int64_t r = 0; r < rows; ++r)
          for (int c = 0; c < NR; ++c) out[r * NR + c] = src[r * b.row_stride + c];
        src += NR;
        out += panel_stride;
      }
      if (tail) {
        for (int64_t r = 0; r < rows; ++r) {
          int c = 0;
          for (; c < tail; ++c) out[r * NR + c] = src[r * b.row_stride + c];
          for (; c < NR; ++c) out[r * NR + c] = 0.0f;
        }
      }
    }
    return;
  }
  // Strided (e.g. transposed) B: each source column is contiguous along k when row_stride is 1;
  // the destination panel (kc × NR) stays in L1 while its columns are filled.
  for (int64_t p = 0; p * NR < nc; ++p) {
    const int cols = static_cast<int>(std::min<int64_t>(NR, nc - p * NR));
    const float* src = b.data + pc * b.row_stride + (jc + p * NR) * b.col_stride;
    float* out = dst + p * panel_stride;
    for (int c = 0; c < cols; ++c) {
      const float* col = src + c * b.col_stride;
      for (int64_t q = 0; q < kc; ++q) out[q * NR + c] = col[q * b.row_stride];
    }
    if (cols < NR) {
      for (int64_t q = 0; q < kc; ++q)
        for (int c = cols; c < NR; ++c) out[q * NR + c] = 0.0f;
    }
  }
}

void pack_b_block(MatrixRef b, int64_t pc, int64_t kc, int64_t jc, int64_t nc, int nr, float* dst) {
  if (nr == 16) return pack_b_block_nr<16>(b, pc, kc, jc, nc, dst);
  XNN_CHECK(nr == 8, "f32_gemm: unsupported NR");
  pack_b_block_nr<8>(b, pc, kc, jc, nc, dst);
}

struct GemmProblem {
  const KernelSet* ks;
  const float* a;  // packed (pack_a_panels layout)
  int64_t m, n, k;
  MatrixRef b;
  float* c;
  int64_t ldc;
  const GemmEpilogue* ep;
  // residual is C itself (in-place add): it must be read before C holds partial sums, so it
  // goes in with the first K block instead of the last.
  bool residual_is_c;
  // B arrives in the micro-kernel's panel layout (f32_gemm_packed_b): b.data holds ceil(n/nr)
  // panels of k × nr floats, read in place.
  bool b_prepacked = false;
};

// L1 sets (of 64) that the lines of consecutive rows row_stride floats apart fall in: a stride
// of 12544 bytes (N = 3136) is 196 lines, 4 sets apart, so its rows use only 16 of the 64 sets.
int64_t l1_sets_spanned(int64_t row_stride) {
  constexpr int64_t kSets = 64, kLineFloats = 16;
  if (row_stride % kLineFloats != 0) return kSets;  // the rows' lines drift across all sets
  return kSets / std::gcd(row_stride / kLineFloats, kSets);
}

// Whether a task of `rows` rows reads B's full panels in place (row-major B) instead of packing
// each K block of them first.
// - One A panel: every B element is used once, so packing is a pure extra copy (with the
//   kernel's prefetch, 16x144x3136 packed 150-163 us, in place 127).
// - Few rows and a shallow K block: each B element feeds little work, and copying it costs about
//   as much as using it (16x12544x32 +20%, 6x3136x48 +60%). Deeper blocks mean more concurrent
//   row streams than the hardware prefetcher follows, so the AVX2 kernels pack them. The
//   AVX-512 kernel prefetches each row's next panel itself, so it reads up to 256 rows in place
//   (32x192x784 80 -> 68 us, 40x120x784 100 -> 94), as long as the rows spread over the L1 sets:
//   a B panel is reused from L1 by every A panel, and 144 rows of N = 3136 in 16 sets (9 lines
//   a set) run slower in place than packed (24x144x3136: 416 vs 366 us).
bool read_b_in_place(const KernelSet& ks, MatrixRef b, int64_t rows, int64_t kc) {
  if (b.col_stride != 1) return false;
  if (rows <= ks.mr) return ks.prefetches_b || kc <= 128;
  if (rows > 96) return false;
  if (ks.prefetches_b) return kc <= 256 && kc <= 6 * l1_sets_spanned(b.row_stride);
  return kc <= 128 && rows * kc <= 4096;
}

// Computes C[r0:r1, j0:j1] (r0 a multiple of mr). Runs on one thread; packs its own B.
void run_task(const GemmProblem& g, int64_t r0, int64_t r1, int64_t j0, int64_t j1) {
  const KernelSet& ks = *g.ks;
  const int64_t ncols = j1 - j0;
  const int64_t nc_step = round_up(ceil_div(ncols, ceil_div(ncols, ks.nc)), ks.nr);
  const KBlocking kblk = k_blocking(ks, g.k);
  const int64_t kblocks = kblk.blocks, kc_step = kblk.step;
  const int64_t padded_m = round_up(g.m, ks.mr);
  // Full panels of row-major B read in place rather than packed (read_b_in_place); only a
  // partial last panel is packed (zero-padded) so the kernel never reads past a row of B.
  const bool direct_b = read_b_in_place(ks, g.b, r1 - r0, kc_step);
  const GemmUkernelFn main_fn = direct_b && r1 - r0 <= ks.mr && ks.main_one_a_panel ? ks.main_one_a_panel : ks.main;
  float* bpack = g.b_prepacked ? nullptr
                               : thread_scratch_f32(
                                     static_cast<size_t>(std::max<int64_t>(1, kc_step * (direct_b ? ks.nr : nc_step))), 0);

  const GemmEpilogue& ep = *g.ep;
  const bool has_act = ep.act.kind != ActKind::kNone;
  for (int64_t jc = j0; jc < j1; jc += nc_step) {
    const int64_t nc = std::min(nc_step, j1 - jc);
    for (int64_t kb = 0, pc = 0; kb < kblocks; ++kb, pc += kc_step) {
      const int64_t kc = std::min(kc_step, g.k - pc);
      const bool first = kb == 0, last = kb == kblocks - 1;
      const bool add_bias_res = g.residual_is_c ? first : last;
      const int64_t full_nc = direct_b ? nc / ks.nr * ks.nr : 0;  // columns read in place
      // A narrow last panel whose kernel reads only its valid columns is read in place too
      // (packing 4 columns of a 288-deep B into a zero-padded 16-wide panel took 2/3 of a
      // 72x4x288 GEMM).
      const int64_t tail = nc % ks.nr;
      const bool tail_in_place = ks.narrow_reads_nr && g.b.col_stride == 1 && tail > 0 && tail * 2 <= ks.nr;
      const int64_t packed_end = tail_in_place ? nc - tail : nc;  // columns [full_nc, packed_end) packed
      if (!g.b_prepacked && full_nc < packed_end) {
        pack_b_block(g.b, pc, kc, jc + full_nc, packed_end - full_nc, ks.nr, bpack);
      }
      for (int64_t ic = r0; ic < r1; ic += ks.mc) {
        const int64_t ic_end = std::min(r1, ic + ks.mc);
        for (int64_t jr = 0; jr < nc; jr += ks.nr) {
          const size_t nr = static_cast<size_t>(std::min<int64_t>(ks.nr, nc - jr));
          const GemmUkernelFn fn = (ks.narrow && nr * 2 <= static_cast<size_t>(ks.nr)) ? ks.narrow : main_fn;
          const int64_t col = jc + jr;
          const bool in_place = jr < full_nc || jr >= packed_end;
          const float* bpanel = g.b_prepacked ? g.b.data + (col / ks.nr) * g.k * ks.nr + pc * ks.nr
                                : in_place    ? g.b.data + pc * g.b.row_stride + col
                                              : bpack + (jr - full_nc) / ks.nr * kc * ks.nr;
          const int64_t b_stride = g.b_prepacked ? ks.nr : in_place ? g.b.row_stride : ks.nr;
          for (int64_t ir = ic; ir < ic_end; ir += ks.mr) {
            GemmTileEpilogue tile;
            if (add_bias_res) {
              if (ep.bias) tile.bias = ep.bias + ir;
              if (ep.residual) tile.residual = ep.residual + ir * ep.ldr + col;
              tile.ldr = ep.ldr;
            }
            if (last && has_act) tile.act = &ep.act;
            fn(static_cast<size_t>(std::min<int64_t>(ks.mr, g.m - ir)), nr, static_cast<size_t>(kc),
               g.a + a_offset(padded_m, ks.mr, pc, kc, ir / ks.mr), bpanel, b_stride, g.c + ir * g.ldc + col, g.ldc,
               !first, tile);
          }
        }
      }
    }
  }
}

// Row block ti of tm over mp panels of mr rows (and likewise for columns): whole panels,
// sizes differing by at most one panel.
int64_t split_begin(int64_t t, int64_t parts, int64_t panels, int64_t width) { return t * panels / parts * width; }

// Splits C into tm row blocks × tn column blocks (tm·tn tasks), minimising the estimated time of
// the busiest thread. Column splits cost nothing extra (each task packs only its own B columns);
// row splits make tasks that share columns pack the same B again, so packing is charged per task.
void plan_tasks(const KernelSet& ks, int64_t m, int64_t n, int64_t k, int threads, int64_t* tm, int64_t* tn) {
  *tm = *tn = 1;
  // Below ~100k multiply-adds waking the pool costs more than it saves.
  const int64_t kk = std::max<int64_t>(k, 1);
  if (threads <= 1 || m * n * kk < (int64_t{1} << 17)) return;
  const int64_t mp = ceil_div(m, ks.mr), np = ceil_div(n, ks.nr);
  // Column work is counted in the units the kernels compute: NR, or NR/2 for a narrow last panel.
  const int64_t col_unit = ks.narrow ? ks.nr / 2 : ks.nr;
  constexpr double kPackCost = 4.0;  // packing one B float ~ 4 multiply-adds of kernel time
  constexpr double kARead = 0.25;    // streaming one packed A float from L2/L3, mostly hidden
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
                           kPackCost * static_cast<double>(cols) + kARead * static_cast<double>(rows)) *
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

void run_gemm(const GemmProblem& g, ThreadPool* pool) {
  const KernelSet& ks = *g.ks;
  int64_t tm = 1, tn = 1;
  plan_tasks(ks, g.m, g.n, g.k, pool ? pool->threads() : 1, &tm, &tn);
  const int64_t mp = ceil_div(g.m, ks.mr), np = ceil_div(g.n, ks.nr);
  parallel_for(pool, tm * tn, [&](int64_t t) {
    const int64_t ti = t / tn, tj = t % tn;
    const int64_t r0 = split_begin(ti, tm, mp, ks.mr), r1 = std::min(g.m, split_begin(ti + 1, tm, mp, ks.mr));
    const int64_t j0 = split_begin(tj, tn, np, ks.nr), j1 = std::min(g.n, split_begin(tj + 1, tn, np, ks.nr));
    if (r0 < r1 && j0 < j1) run_task(g, r0, r1, j0, j1);
  });
}

GemmProblem make_problem(const KernelSet& ks, const float* packed_a, int64_t m, int64_t n, int64_t k, MatrixRef b,
                         float* c, int64_t ldc, const GemmEpilogue& ep) {
  XNN_CHECK(m == 1 || ldc >= n, "f32_gemm: ldc < n");
  XNN_CHECK(!ep.residual || m == 1 || ep.ldr >= n, "f32_gemm: residual ldr < n");
  return GemmProblem{&ks, packed_a, m, n, k, b, c, ldc, &ep, ep.residual == c && ep.ldr == ldc};
}

}  // namespace

F32GemmKernels best_f32_gemm_kernels() { return avx512_enabled() ? F32GemmKernels::kAvx512 : F32GemmKernels::kAvx2; }

bool f32_gemm_kernels_supported(F32GemmKernels family) {
  return family == F32GemmKernels::kAvx512 ? isa_supported(Isa::kAvx2) && cpu_features().avx512 : true;
}

PackedA::PackedA(int64_t m, int64_t k, MatrixRef a, Isa isa, F32GemmKernels family)
    : m_(m), k_(k), isa_(isa),
      family_(family == F32GemmKernels::kAvx512 && f32_gemm_kernels_supported(family) ? family
                                                                                       : F32GemmKernels::kAvx2) {
  XNN_CHECK(m >= 0 && k >= 0, "PackedA: negative size");
  const KernelSet& ks = kernels_for(isa, family_);
  const int64_t panels = ceil_div(m, ks.mr);
  const size_t floats = static_cast<size_t>(panels * ks.mr * k);
  bytes_ = floats * sizeof(float);
  // Cache-line aligned so each panel's k-steps start on a line boundary as often as possible.
  constexpr std::align_val_t kAlign{64};
  float* p = static_cast<float*>(::operator new[](std::max<size_t>(bytes_, 64), kAlign));
  data_ = std::shared_ptr<float[]>(p, [](float* q) { ::operator delete[](q, std::align_val_t{64}); });
  pack_a_panels(ks, a, m, k, 0, panels, p);
}

void f32_gemm(const PackedA& a, int64_t n, MatrixRef b, float* c, int64_t ldc, const GemmEpilogue& ep,
              ThreadPool* pool) {
  if (a.rows() == 0 || n <= 0) return;
  const KernelSet& ks = kernels_for(a.isa(), a.family());
  run_gemm(make_problem(ks, a.data(), a.rows(), n, a.depth(), b, c, ldc, ep), pool);
}

void f32_gemm_packed_b(const PackedA& a, int64_t n, const float* b_panels, float* c, int64_t ldc,
                       const GemmEpilogue& ep, ThreadPool* pool) {
  if (a.rows() == 0 || n <= 0) return;
  const KernelSet& ks = kernels_for(a.isa(), a.family());
  GemmProblem g = make_problem(ks, a.data(), a.rows(), n, a.depth(), MatrixRef{b_panels, ks.nr, 1}, c, ldc, ep);
  g.b_prepacked = true;
  run_gemm(g, pool);
}

void f32_gemm(int64_t m, int64_t n, int64_t k, MatrixRef a, MatrixRef b, float* c, int64_t ldc, const GemmEpilogue& ep,
              ThreadPool* pool, Isa isa, F32GemmKernels family) {
  if (m <= 0 || n <= 0) return;
  const KernelSet& ks = kernels_for(isa, family);
  const int64_t panels = ceil_div(m, ks.mr);
  // The caller's slot 1 holds packed A for the whole call; workers read it and use only their
  // own slot 0 (packed B), so the two never collide.
  float* apack = thread_scratch_f32(static_cast<size_t>(std::max<int64_t>(1, panels * ks.mr * k)), 1);
  // Packing is O(m·k) against O(m·n·k) compute: worth spreading only when it is large.
  const int64_t chunks =
      (pool && pool->threads() > 1 && m * k >= (int64_t{1} << 16)) ? std::min<int64_t>(panels, 4 * pool->threads()) : 1;
  parallel_for(pool, chunks,
               [&](int64_t t) { pack_a_panels(ks, a, m, k, t * panels / chunks, (t + 1) * panels / chunks, apack); });
  run_gemm(make_problem(ks, apack, m, n, k, b, c, ldc, ep), pool);
}

std::string gemm_kernel_name(Isa isa) { return kernels_for(isa, best_f32_gemm_kernels()).name; }

GemmPanelShape f32_gemm_panel_shape(Isa isa, F32GemmKernels family) {
  const KernelSet& ks = kernels_for(isa, family);
  return {ks.mr, ks.nr};
}

void f32_gemm_panels(int64_t m, int64_t n, int64_t k, const float* a_panels, const float* b, int64_t b_row_stride,
                     int64_t b_panel_stride, float* c, int64_t ldc, bool accumulate, Isa isa, F32GemmKernels family) {
  if (m <= 0 || n <= 0) return;
  const KernelSet& ks = kernels_for(isa, family);
  XNN_CHECK(ldc >= n, "f32_gemm_panels: ldc < n");
  if (k <= 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  // K in blocks of at most ks.kc so a B micro-panel stays in L1 while every A panel passes it.
  const KBlocking kb = k_blocking(ks, k);
  const GemmTileEpilogue none;
  for (int64_t pc = 0; pc < k; pc += kb.step) {
    const int64_t kc = std::min(kb.step, k - pc);
    const bool acc = accumulate || pc > 0;
    for (int64_t j = 0; j < n; j += ks.nr) {
      const size_t nr = static_cast<size_t>(std::min<int64_t>(ks.nr, n - j));
      const GemmUkernelFn fn = (ks.narrow && nr * 2 <= static_cast<size_t>(ks.nr)) ? ks.narrow : ks.main;
      const float* bp = b + (j / ks.nr) * b_panel_stride + pc * b_row_stride;
      for (int64_t i = 0; i < m; i += ks.mr) {
        const float* ap = a_panels + i * k + pc * ks.mr;  // panel i / mr: k × mr floats
        fn(static_cast<size_t>(std::min<int64_t>(ks.mr, m - i)), nr, static_cast<size_t>(kc), ap, bp, b_row_stride,
           c + i * ldc + j, ldc, acc, none);
      }
    }
  }
}

const char* PackedA::kernel_name() const { return kernels_for(isa_, family_).name; }

}  // namespace xnn::kernels
