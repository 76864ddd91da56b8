// Sparse kernels for pruned layers: 1×1 Conv / ai.xnn FusedConv and Gemm / ai.xnn FusedGemm /
// MatMul with constant weights that are mostly exact zeros (engine/kernels/spmm.h).
//
// These factories are registered before the dense ones (cpu_kernel.cpp) and return null unless
// the constant weights are sparse enough for the sparse kernel to beat the dense one; the dense
// factories then take the node as before. The rule (measured with engine/bench/spmm_bench.cpp
// on AVX2, see the comment there for the figures):
//   1×1 conv (group 1, stride 1, no padding)    zeros >= kMinSparsityConv1x1  -> f32_spmm
//   linear layer, batch M >= 2                  zeros >= kMinSparsityLinear   -> f32_spmm on Xᵀ
//   linear layer, batch M == 1                  see gemv_kernel(): f32_spmv_sliced (permutes, 16x32
//                                               with AVX-512, 8x8 with AVX2) or f32_spmv (CSR gather)
// Epilogues: bias, FusedConv's residual input and every fused activation are applied by the
// sparse kernels, so a fused node still writes its output once.
#include <algorithm>
#include <optional>

#include "engine/backends/cpu/const_weight_conv.h"
#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/scratch.h"
#include "engine/kernels/spmm.h"
#include "engine/kernels/spmv_sliced.h"
#include "engine/kernels/transpose.h"
#include "engine/ops/fused_activation.h"
#include "engine/ops/op_helpers.h"

namespace xnn {
namespace {

using kernels::Isa;

// From engine/bench/spmm_bench.cpp (one thread, dense time / sparse time, Zen 4; the full table
// is in compress/prune/README.md): 1x1 conv 56²×64→64 .. 7²×512→512 0.8-1.5x at 50%, 1.4-2.1x at
// 70%, 2.4-2.8x at 80%; linear 64×784→300 0.7-0.8x at 50%, 1.25-1.5x at 70%, 2.0-2.3x at 80%.
// Against a dense kernel given aligned operands as here (Sapphire Rapids, 2026-12-05, two runs)
// still 1.2-2.0x at 70% on every one of those shapes. Sparse from 70% zeros. Batch-1 linear layers: below, per kernel; the scalar ISA's CSR kernel
// from 85%.
constexpr double kMinSparsityConv1x1 = 0.7;
constexpr double kMinSparsityLinear = 0.7;
constexpr double kMinSparsityGemv = 0.85;
// Batch 1 with AVX-512 (f32_spmv_16x32perm__avx512, permutes instead of gathers, sliding
// windows, cache-line aligned slices; Sapphire Rapids, one thread, dense / sparse, median of 5):
// 784→300 1.3x at 50%, 1.9x at 70%, 2.5x at 80%, 3.0x at 90%; 1024→1024 1.7x, 4.0x, 7.8x, 12.5x
// (compress/prune/README.md).
constexpr double kMinSparsityGemvSliced = 0.7;
// Batch 1 with AVX2 only (Sapphire Rapids with XNN_ISA=avx2, dense / sparse, median of 5): the
// 8x16 permute format (f32_spmv_8x16perm__avx2, sliding windows) 784->300 1.17x at 70%, 1.49x
// at 80% in a first session (re-measured below: less); 1024->1024 2.4x at 70%, 2.9x at 80% (its 4 MB stream from beyond this CPU's 2 MB L2).
// Both it and the dense GEMV stream their bytes, and it pays two permutes and a blend per slice,
// so it stays under 2x on L2-resident layers. The CSR gather kernel (8 bytes per nonzero, ~1
// cycle each) runs 0.74x at 80%, 1.3x at 90%, 3.0x at 95% on 784->300: it takes over from 93%
// zeros, and for weights that stream from DRAM (more than 16 MB), where the fewest bytes win
// (Zen 4, 4096->4096 at 80%: 2.3x, vs 1.0x for the earlier 8x8 format; 1.5x at 70%). Earlier, on
// Zen 4, the 8x8 aligned format ran 784->300 at 1.0x and 1024->1024 at 1.5x at 80%.
// Re-measured 2026-12-05 (XNN_ISA=avx2, three runs): 784->300 0.83-0.96x at 70%, 1.15-1.17x at
// 80%. So layers whose weights fit in L2 (at most 2 MB here; 512 KB on Zen 3) take it from 80%,
// larger ones, which stream their weights from beyond L2, from 70%.
constexpr double kMinSparsityGemvSliced8x16 = 0.8;
constexpr double kMinSparsityGemvSliced8x16Streamed = 0.7;
constexpr int64_t kL2WeightBytes = int64_t{2} << 20;
constexpr double kMinSparsityGemvCsrAvx2 = 0.93;
constexpr int64_t kStreamedWeightBytes = int64_t{16} << 20;
constexpr double kMinSparsityGemvStreamed = 0.7;

// Batch-1 linear layers [K -> N] with this share of zeros: which kernel the backend takes.
enum class GemvKernel { kDense, kSliced, kCsr };
GemvKernel gemv_kernel(int64_t k, int64_t n, double zeros, Isa isa) {
  const auto from = [zeros](double min, GemvKernel kernel) { return zeros >= min ? kernel : GemvKernel::kDense; };
  if (isa != Isa::kAvx2 || !kernels::spmv_sliced_fast()) return from(kMinSparsityGemv, GemvKernel::kCsr);
  if (kernels::spmv_sliced_shape() == kernels::kSlices16x32) return from(kMinSparsityGemvSliced, GemvKernel::kSliced);
  if (k * n * 4 > kStreamedWeightBytes) return from(kMinSparsityGemvStreamed, GemvKernel::kCsr);
  if (zeros >= kMinSparsityGemvCsrAvx2) return GemvKernel::kCsr;
  if (k * n * 4 > kL2WeightBytes) return from(kMinSparsityGemvSliced8x16Streamed, GemvKernel::kSliced);
  return from(kMinSparsityGemvSliced8x16, GemvKernel::kSliced);
}

// Whether a linear layer [M×K] · [K×N] with this share of zeros takes a sparse kernel.
bool sparse_linear_pays(int64_t m, int64_t k, int64_t n, double zeros, Isa isa) {
  return m > 1 ? zeros >= kMinSparsityLinear : gemv_kernel(k, n, zeros, isa) != GemvKernel::kDense;
}

// The spmm kernel's name, with the permute kernel's when it takes a narrow column tail (W also
// in the sliced form, kernels::spmm_sliced_tail_form: a 7x7 map's 49th column).
std::string spmm_name(const std::optional<kernels::SlicedSparseWeights>& tail, Isa isa) {
  return kernels::spmm_kernel_name(isa) + (tail ? "+" + kernels::spmv_sliced_kernel_name(tail->shape()) : "");
}

class SparseConv1x1Kernel final : public CpuKernel {
 public:
  SparseConv1x1Kernel(int64_t n, int64_t cin, int64_t hw, int64_t cout, const float* w, std::vector<float> bias,
                      bool has_residual, kernels::Activation act, Isa isa)
      : n_(n), cin_(cin), hw_(hw), cout_(cout), w_(cout, cin, w, cin, hw),
        tail_(kernels::spmm_sliced_tail_form(cout, cin, w, cin, hw, isa)), bias_(std::move(bias)),
        has_residual_(has_residual), act_(act), isa_(isa) {}

  std::string name() const override { return "f32_conv1x1_sparse+" + spmm_name(tail_, isa_); }

  void run(KernelContext& ctx) override {
    const float* x = ctx.input(0).data<float>();
    const float* z = has_residual_ ? ctx.input(3).data<float>() : nullptr;
    float* y = ctx.output(0).data<float>();
    for (int64_t b = 0; b < n_; ++b) {
      kernels::SpmmEpilogue ep;
      ep.bias = bias_.empty() ? nullptr : bias_.data();
      ep.residual = z ? z + b * cout_ * hw_ : nullptr;
      ep.ldr = hw_;
      ep.act = act_;
      kernels::f32_spmm(w_, hw_, x + b * cin_ * hw_, y + b * cout_ * hw_, hw_, ep, ctx.pool(), isa_,
                        tail_ ? &*tail_ : nullptr);
    }
  }

 private:
  int64_t n_, cin_, hw_, cout_;
  kernels::SparseWeights w_;
  std::optional<kernels::SlicedSparseWeights> tail_;
  std::vector<float> bias_;
  bool has_residual_;
  kernels::Activation act_;
  Isa isa_;
};

std::unique_ptr<CpuKernel> make_sparse_conv_kernel(const CpuKernelPrepareContext& ctx) {
  std::optional<ConstWeightConv> c = match_const_weight_conv(ctx, 1, 1);
  if (!c) return nullptr;
  for (size_t i = 0; i < 2; ++i) {
    if (c->geo.strides[i] != 1 || c->geo.pads_begin[i] != 0 || c->geo.pads_end[i] != 0) return nullptr;
  }
  if (kernels::zero_fraction(c->weights, c->cout * c->cin) < kMinSparsityConv1x1) return nullptr;
  return std::make_unique<SparseConv1x1Kernel>(c->in[0], c->cin, c->in[2] * c->in[3], c->cout, c->weights,
                                               std::move(c->bias), c->has_residual, fused_activation(ctx.node),
                                               ctx.isa);
}

// Y[M×N] = act(op(A)[M×K] · Wᵀ + bias) with W [N×K] sparse. Batch 1: one sparse dot product
// per output; batch M: Yᵀ = W · op(A)ᵀ through f32_spmm over the M columns of op(A)ᵀ [K×M]
// (op(A) itself when Gemm has transA), transposed into Y when M > 1.
class SparseLinearKernel final : public CpuKernel {
 public:
  SparseLinearKernel(int64_t m, int64_t k, int64_t n, bool trans_a, const std::vector<float>& wt, double zeros,
                     std::vector<float> bias, kernels::Activation act, Isa isa, std::string op)
      : m_(m), k_(k), n_(n), trans_a_(trans_a), sliced_(m == 1 && gemv_kernel(k, n, zeros, isa) == GemvKernel::kSliced),
        bias_(std::move(bias)), act_(act), isa_(isa), op_(std::move(op)) {
    if (sliced_) {
      sliced_w_ = kernels::SlicedSparseWeights(n, k, wt.data(), k, kernels::spmv_sliced_shape());
    } else {
      w_ = kernels::SparseWeights(n, k, wt.data(), k, m);
      if (m > 1) tail_ = kernels::spmm_sliced_tail_form(n, k, wt.data(), k, m, isa);
    }
  }

  std::string name() const override {
    if (sliced_) return "f32_" + op_ + "_sparse+" + kernels::spmv_sliced_kernel_name(sliced_w_.shape());
    return "f32_" + op_ + "_sparse+" + (m_ == 1 ? kernels::spmv_kernel_name(isa_) : spmm_name(tail_, isa_));
  }

  void run(KernelContext& ctx) override {
    const float* a = ctx.input(0).data<float>();
    float* y = ctx.output(0).data<float>();
    const float* bias = bias_.empty() ? nullptr : bias_.data();
    if (sliced_) {
      kernels::f32_spmv_sliced(sliced_w_, a, bias, act_, y, ctx.pool());
      return;
    }
    if (m_ == 1) {
      kernels::f32_spmv(w_, a, bias, act_, y, ctx.pool(), isa_);
      return;
    }
    const float* at = a;
    if (!trans_a_) {
      float* t = kernels::thread_scratch_f32(static_cast<size_t>(k_ * m_), 2);
      kernels::f32_transpose(m_, k_, a, k_, t, m_, isa_);
      at = t;
    }
    float* yt = kernels::thread_scratch_f32(static_cast<size_t>(n_ * m_), 3);
    kernels::SpmmEpilogue ep;
    ep.bias = bias;
    ep.act = act_;
    kernels::f32_spmm(w_, m_, at, yt, m_, ep, ctx.pool(), isa_, tail_ ? &*tail_ : nullptr);
    kernels::f32_transpose(n_, m_, yt, m_, y, n_, isa_);
  }

 private:
  int64_t m_, k_, n_;
  bool trans_a_;
  bool sliced_;                             // batch 1, gemv_kernel(): the permute format
  kernels::SparseWeights w_;                // CSR, otherwise
  kernels::SlicedSparseWeights sliced_w_;
  std::optional<kernels::SlicedSparseWeights> tail_;  // batch M > 1: f32_spmm's narrow column tail
  std::vector<float> bias_;
  kernels::Activation act_;
  Isa isa_;
  std::string op_;
};

std::unique_ptr<CpuKernel> make_sparse_gemm_kernel(const CpuKernelPrepareContext& ctx) {
  const Node& node = ctx.node;
  if (ctx.inputs.size() < 2) return nullptr;
  const TensorInfo& a = ctx.inputs[0];
  const TensorInfo& b = ctx.inputs[1];
  if (a.dtype != DType::kF32 || b.dtype != DType::kF32 || a.shape.size() != 2 || b.shape.size() != 2 || !b.value) {
    return nullptr;
  }
  const bool trans_a = node.attr_int("transA", 0) != 0, trans_b = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const int64_t m = trans_a ? a.shape[1] : a.shape[0], k = trans_a ? a.shape[0] : a.shape[1];
  const int64_t n = trans_b ? b.shape[0] : b.shape[1];
  if ((trans_b ? b.shape[1] : b.shape[0]) != k || m < 1 || k * m > (int64_t{1} << 29)) return nullptr;
  const float* bw = b.value->data<float>();
  const double zeros = kernels::zero_fraction(bw, n * k);
  if (!sparse_linear_pays(m, k, n, zeros, ctx.isa)) return nullptr;
  std::vector<float> bias;
  if (ctx.inputs.size() > 2 && ctx.inputs[2].dtype != DType::kUnknown) {
    const TensorInfo& c = ctx.inputs[2];
    if (!c.value || c.dtype != DType::kF32 || shape_numel(c.shape) != n || (c.shape.size() == 2 && c.shape[0] != 1)) {
      return nullptr;
    }
    const float* cv = c.value->data<float>();
    bias.assign(cv, cv + n);
    for (float& v : bias) v *= beta;
  }
  // W = alpha·op(B)ᵀ, N×K row-major.
  std::vector<float> wt(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p) wt[static_cast<size_t>(j * k + p)] = alpha * (trans_b ? bw[j * k + p] : bw[p * n + j]);
  return std::make_unique<SparseLinearKernel>(m, k, n, trans_a, wt, zeros, std::move(bias), fused_activation(node), ctx.isa,
                                              "gemm");
}

std::unique_ptr<CpuKernel> make_sparse_matmul_kernel(const CpuKernelPrepareContext& ctx) {
  if (ctx.inputs.size() != 2) return nullptr;
  const TensorInfo& a = ctx.inputs[0];
  const TensorInfo& b = ctx.inputs[1];
  if (a.dtype != DType::kF32 || b.dtype != DType::kF32 || a.shape.size() < 2 || b.shape.size() != 2 || !b.value) {
    return nullptr;
  }
  const int64_t k = a.shape.back(), n = b.shape[1];
  if (b.shape[0] != k || k <= 0) return nullptr;
  const int64_t m = shape_numel(a.shape) / k;  // leading dims of A fold into M
  if (m < 1 || k * m > (int64_t{1} << 29)) return nullptr;
  const float* bw = b.value->data<float>();
  const double zeros = kernels::zero_fraction(bw, n * k);
  if (!sparse_linear_pays(m, k, n, zeros, ctx.isa)) return nullptr;
  std::vector<float> wt(static_cast<size_t>(n * k));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t p = 0; p < k; ++p) wt[static_cast<size_t>(j * k + p)] = bw[p * n + j];
  return std::make_unique<SparseLinearKernel>(m, k, n, false, wt, zeros, std::vector<float>{}, kernels::Activation{}, ctx.isa,
                                              "matmul");
}

}  // namespace

void register_cpu_sparse_kernels(CpuKernelRegistry& r) {
  r.add("Conv", "", make_sparse_conv_kernel);
  r.add("FusedConv", "ai.xnn", make_sparse_conv_kernel);
  r.add("Gemm", "", make_sparse_gemm_kernel);
  r.add("FusedGemm", "ai.xnn", make_sparse_gemm_kernel);
  r.add("MatMul", "", make_sparse_matmul_kernel);
}

}  // namespace xnn
