// Int8 GEMM for the CPU backend: Y[M×N] uint8 = requantize(W[M×K] int8 · (X[K×N] uint8 − x_zp)
// + bias), the scheme of engine/kernels/requantize.h. W holds weights (one row per output
// channel), X activations: 1×1 convolution (X = input [Cin × H·W]), im2col convolution
// (qconv.h), Gemm/MatMul with constant weights.
//
// Semantics: qs8_gemm_reference is the definition. For every row m and column n
//   acc = bias[m] + Σ_k W[m][k] · (X[k][n] − x_zp)       (exact; must fit int32, see below)
//   Y[m][n] = requantize(acc, rq.multiplier[m], requant_lower(rq), requant_upper(rq), rq.zero_point)
// Every optimised path returns exactly the reference's bytes, for all inputs.
//
// Design. As the fp32 GEMM (gemm.h): W is packed once into MR-row panels (PackedQs8Weights, at
// session preparation) together with its row sums Σ_k W[m][k], so the zero point costs no work
// per element: acc = (bias − x_zp·rowsum) + Σ W·X, the first term set as the accumulators'
// initial value. X is packed per call into NR-column panels (a whole-K panel in L2, no K
// blocking, so the int32 accumulators never leave registers) and the MR×NR micro-kernel
// requantises and stores uint8 directly. Work is split over C tiles on the thread pool.
//
// Packed layouts group KU consecutive k so one 32-bit lane holds KU values of one row/column:
//   c2 (KU = 2): W and X widened to int16; vpmaddwd multiplies int16 pairs into int32 sums.
//      Exact for every input (|w·x| <= 128·255, a pair sum < 2^16).
//   c4 (KU = 4): W int8, X uint8; vpmaddubsw forms saturating int16 sums of two u8·s8 products,
//      vpmaddwd(·, 1) adds pairs of those into int32. AVX2 has no VNNI here, and vpmaddubsw
//      saturates when |x1·w1 + x2·w2| > 32767, so packing takes c4 only when it is provably
//      exact: for each pair (w[2j], w[2j+1]) of every row the positive weights sum to <= 128 and
//      the negative ones to >= -128 (so 255·sum stays within int16 for every uint8 x). That
//      holds for 7-bit weights (|w| <= 64); full-range int8 weights get c2.
//   c4 with VNNI: on a CPU with AVX-VNNI or AVX512-VNNI+VL (vnni_enabled()) vpdpbusd adds the
//      four u8·s8 products of a lane to the int32 accumulator in one instruction, exactly, for
//      any int8 weights: every weight matrix takes c4 with 6-row panels
//      (qs8_gemm_6x16c4__avxvnni, or qs8_gemm_6x16c4__avx512vnni where only the EVEX form exists).
//   c4 with 512-bit VNNI: on a CPU with AVX512-VNNI (vnni512_enabled()) the weights go into 16-row
//      panels (8-row where 16 would pad the rows by much more) and vpdpbusd runs on zmm: one
//      instruction per 64 products, one 64-byte load per group of the same 16-column X panels
//      (qs8_gemm_16x16c4__avx512vnni, qs8_gemm_8x16c4__avx512vnni).
//   Throughput without VNNI: c2 costs 2 vector instructions (vpmaddwd + vpaddd, 3 ports) per 16
//   multiply-adds against fp32's 1 FMA (2 ports) per 8, so it peaks at 1.5× fp32; c4 at 2×.
//   7-bit weights are a quantisation choice (e.g. oneDNN makes it on pre-VNNI CPUs); the kernel
//   only detects them.
// Kernels: qs8_gemm_6x16c2__avx2 (6x8c2 for a last panel of <= 8 columns), qs8_gemm_4x16c4__avx2
// (4x8c4), qs8_gemm_6x16c4__avxvnni / __avx512vnni (6x8c4), qs8_gemm_16x16c4__avx512vnni (16x8c4)
// and qs8_gemm_8x16c4__avx512vnni (8x8c4), qs8_gemm_4x8c2__scalar (the scalar ISA).
//
// Limits: the exact accumulator must fit int32. Packing checks |bias[m]| + 128·255·K < 2^31
// (K <= 65793 with no bias), so no input can overflow; the arithmetic in between wraps (two's
// complement) and the final int32 is exact.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/requantize.h"

namespace xnn::kernels {

namespace internal {
struct QGemmKernelSet;
}

// The kernel families packing can target when the ISA is Isa::kAvx2: plain AVX2 (c2/c4), VNNI on
// ymm (either encoding), VNNI on zmm. Sessions take best_qs8_kernels(); tests pin each one.
enum class Qs8Kernels { kAvx2, kVnni256, kVnni512 };
// The widest family this CPU runs and XNN_ISA allows (XNN_ISA=avx2 gives kAvx2).
Qs8Kernels best_qs8_kernels();
// Whether this CPU can run the family (regardless of XNN_ISA).
bool qs8_kernels_supported(Qs8Kernels family);

// Weights W (m × k int8, row stride ldw) and bias (m int32, or null for zeros) packed for one
// ISA's micro-kernel. Immutable after packing, so shareable between threads and sessions.
class PackedQs8Weights {
 public:
  PackedQs8Weights() = default;
  // family: the kernels to pack for when isa is kAvx2; one the CPU cannot run falls back to the
  // next narrower one (kVnni512 → kVnni256 → kAvx2).
  PackedQs8Weights(int64_t m, int64_t k, const int8_t* w, int64_t ldw, const int32_t* bias, Isa isa,
                   Qs8Kernels family = best_qs8_kernels());
  int64_t rows() const { return m_; }
  int64_t depth() const { return k_; }
  Isa isa() const { return isa_; }
  // The micro-kernel that runs these weights, e.g. "qs8_gemm_6x16c2__avx2".
  const char* kernel_name() const;
  // Its interleaved-X variant (qs8_gemm_interleaved), or "" where the layout has none.
  const char* interleaved_kernel_name() const;
  size_t bytes() const { return bytes_; }

  // For the driver: the packed panels, and per row (padded to whole panels) bias and Σ_k W[m][k].
  const internal::QGemmKernelSet& kernels() const { return *ks_; }
  const void* data() const { return data_.get(); }
  const int32_t* bias() const { return bias_.get(); }
  const int32_t* row_sums() const { return row_sums_.get(); }

 private:
  int64_t m_ = 0, k_ = 0;
  Isa isa_ = Isa::kScalar;
  const internal::QGemmKernelSet* ks_ = nullptr;
  size_t bytes_ = 0;
  std::shared_ptr<uint8_t[]> data_;
  std::shared_ptr<int32_t[]> bias_, row_sums_;
};

// Y[M×N] (row stride ldy) from packed W and X [K×N] uint8 (row stride ldx, columns contiguous).
// rq.multiplier has M entries. Steady state allocates nothing (per-thread scratch, slot 0).
void qs8_gemm(const PackedQs8Weights& w, int64_t n, const uint8_t* x, int64_t ldx, uint8_t x_zero_point,
              const QRequant& rq, uint8_t* y, int64_t ldy, ThreadPool* pool);
// The same with X's rows anywhere: row r of X is the n bytes at x + row_offsets[r] (K offsets).
// The implicit-GEMM convolution (qconv.h) passes shifted views of one padded input this way.
void qs8_gemm_rows(const PackedQs8Weights& w, int64_t n, const uint8_t* x, const int64_t* row_offsets,
                   uint8_t x_zero_point, const QRequant& rq, uint8_t* y, int64_t ldy, ThreadPool* pool);

// The same with X interleaved 4 rows per column and nothing packed: rows 4g..4g+3 of column j are
// the 4 bytes at x + group_offsets[g] + 4·j (ceil(K/4) offsets; rows past K must meet zero
// weights). The int8 convolution passes an input stored 4 channels per pixel, so a tap's group is
// a shifted view of it (qconv.h). Reads every group's columns up to round_up(n, 16) − 1 (whole
// 16-column tiles), so the caller leaves defined bytes there. Only weights whose kernels have this
// form: qs8_gemm_interleaved_supported() (the 512-bit VNNI layouts).
bool qs8_gemm_interleaved_supported(const PackedQs8Weights& w);
void qs8_gemm_interleaved(const PackedQs8Weights& w, int64_t n, const uint8_t* x, const int64_t* group_offsets,
                          uint8_t x_zero_point, const QRequant& rq, uint8_t* y, int64_t ldy, ThreadPool* pool);
// The definition: plain loops, int64 accumulation (checked to fit int32), requantize().
void qs8_gemm_reference(int64_t m, int64_t n, int64_t k, const int8_t* w, int64_t ldw, const int32_t* bias,
                        const uint8_t* x, int64_t ldx, uint8_t x_zero_point, const QRequant& rq, uint8_t* y,
                        int64_t ldy);

// Whether vpmaddubsw over pairs (w[2j], w[2j+1]) of each row is exact for every uint8 input (the
// c4 condition above). Rows of w: m × k, row stride ldw.
bool qs8_weights_fit_maddubs(int64_t m, int64_t k, const int8_t* w, int64_t ldw);

// The largest K for which packing accepts a bias of magnitude max_abs_bias.
int64_t qs8_gemm_max_depth(int64_t max_abs_bias);

}  // namespace xnn::kernels
