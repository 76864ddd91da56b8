// Gemm, ai.xnn FusedGemm and MatMul (fp32) on the CPU through the packed GEMM.
//
// Gemm/FusedGemm with constant weights B: Y = act(alpha·op(A)·op(B) + beta·C) is computed as
// Yᵀ = (alpha·op(B)ᵀ) · op(A)ᵀ so the weights are the packed operand (packed once, alpha folded
// in) and the per-output-feature bias is a per-row epilogue; for batch 1 Yᵀ and Y are the same
// bytes, otherwise the result is transposed from scratch. C must be absent or a constant of N
// elements (the usual fully-connected bias); other forms run the reference kernel.
// MatMul: constant 2-D B (a linear layer, any leading batch dims of A) as above; otherwise
// A·B per batch with both operands packed per call, when batch dims are equal.
#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/ops/fused_activation.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/gemv.h"
#include "engine/kernels/scratch.h"
#include "engine/kernels/transpose.h"

namespace xnn {
namespace {

using kernels::Isa;
using kernels::MatrixRef;

// Y[M×N] = act(X[M×K]·Wᵀ... ) with packed (N×K) weights and per-feature bias.
class LinearKernel final : public CpuKernel {
 public:
  LinearKernel(int64_t m, int64_t k, int64_t n, bool trans_a, kernels::PackedA w, std::vector<float> bias,
               kernels::Activation act, Isa isa, std::string op)
      : m_(m), k_(k), n_(n), trans_a_(trans_a), w_(std::move(w)), bias_(std::move(bias)), act_(act), isa_(isa),
        op_(std::move(op)) {}

  // Batch 1: a GEMV over row-major op(B)ᵀ [N×K] (the packed GEMM would pad N=1 to a panel).
  LinearKernel(int64_t k, int64_t n, std::vector<float> wt, std::vector<float> bias, kernels::Activation act, Isa isa,
               std::string op)
      : m_(1), k_(k), n_(n), trans_a_(false), wt_(std::move(wt)), bias_(std::move(bias)), act_(act), isa_(isa),
        op_(std::move(op)) {}

  std::string name() const override {
    return "f32_" + op_ + "+" + (wt_.empty() ? kernels::gemm_kernel_name(isa_) : kernels::gemv_kernel_name(isa_));
  }

  void run(KernelContext& ctx) override {
    const float* a = ctx.input(0).data<float>();
    float* y = ctx.output(0).data<float>();
    if (!wt_.empty()) {
      kernels::f32_gemv(n_, k_, wt_.data(), k_, a, bias_.empty() ? nullptr : bias_.data(), act_, y, ctx.pool(), isa_);
      return;
    }
    // op(A)ᵀ as a K×M matrix.
    const MatrixRef at = trans_a_ ? MatrixRef{a, m_, 1} : MatrixRef{a, 1, k_};
    kernels::GemmEpilogue ep;
    ep.bias = bias_.empty() ? nullptr : bias_.data();
    ep.act = act_;
    if (m_ == 1) {
      kernels::f32_gemm(w_, 1, at, y, 1, ep, ctx.pool());
      return;
    }
    float* yt = kernels::thread_scratch_f32(static_cast<size_t>(n_ * m_), 2);
    kernels::f32_gemm(w_, m_, at, yt, m_, ep, ctx.pool());
    kernels::f32_transpose(n_, m_, yt, m_, y, n_, isa_);
  }

 private:
  int64_t m_, k_, n_;
  bool trans_a_;
  kernels::PackedA w_;
  std::vector<float> wt_;  // GEMV weights (batch 1), else empty
  std::vector<float> bias_;
  kernels::Activation act_;
  Isa isa_;
  std::string op_;
};

std::unique_ptr<CpuKernel> make_gemm_kernel(const CpuKernelPrepareContext& ctx) {
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
  if ((trans_b ? b.shape[1] : b.shape[0]) != k) return nullptr;
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
  // op(B)ᵀ is N×K: element (j, p) = op(B)(p, j).
  const float* bw = b.value->data<float>();
  std::vector<float> scaled;
  const float* src = bw;
  if (alpha != 1.0f) {
    scaled.assign(bw, bw + shape_numel(b.shape));
    for (float& v : scaled) v *= alpha;
    src = scaled.data();
  }
  const MatrixRef bt = trans_b ? MatrixRef{src, k, 1} : MatrixRef{src, 1, n};
  if (m == 1) {
    std::vector<float> wt(static_cast<size_t>(n * k));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) wt[static_cast<size_t>(j * k + p)] = bt.at(j, p);
    return std::make_unique<LinearKernel>(k, n, std::move(wt), std::move(bias), fused_activation(node), ctx.isa, "gemm");
  }
  kernels::PackedA packed(n, k, bt, ctx.isa);
  return std::make_unique<LinearKernel>(m, k, n, trans_a, std::move(packed), std::move(bias), fused_activation(node),
                                        ctx.isa, "gemm");
}

// MatMul of activations: Y[b] = A[b]·B[b], equal batch dims, both packed per call.
class BatchedMatMulKernel final : public CpuKernel {
 public:
  BatchedMatMulKernel(int64_t batch, int64_t m, int64_t k, int64_t n, bool b_broadcast, Isa isa)
      : batch_(batch), m_(m), k_(k), n_(n), b_broadcast_(b_broadcast), isa_(isa) {}
  std::string name() const override { return "f32_matmul+" + kernels::gemm_kernel_name(isa_); }
  void run(KernelContext& ctx) override {
    const float* a = ctx.input(0).data<float>();
    const float* b = ctx.input(1).data<float>();
    float* y = ctx.output(0).data<float>();
    for (int64_t i = 0; i < batch_; ++i) {
      kernels::f32_gemm(m_, n_, k_, MatrixRef{a + i * m_ * k_, k_, 1}, MatrixRef{b + (b_broadcast_ ? 0 : i * k_ * n_), n_, 1},
                        y + i * m_ * n_, n_, kernels::GemmEpilogue{}, ctx.pool(), isa_);
    }
  }

 private:
  int64_t batch_, m_, k_, n_;
  bool b_broadcast_;
  Isa isa_;
};

std::unique_ptr<CpuKernel> make_matmul_kernel(const CpuKernelPrepareContext& ctx) {
  if (ctx.inputs.size() != 2 || ctx.outputs.empty()) return nullptr;
  const TensorInfo& a = ctx.inputs[0];
  const TensorInfo& b = ctx.inputs[1];
  if (a.dtype != DType::kF32 || b.dtype != DType::kF32 || a.shape.size() < 2 || b.shape.size() < 2) return nullptr;
  const int64_t k = a.shape.back(), m_inner = a.shape[a.shape.size() - 2];
  const int64_t n = b.shape.back();
  if (b.shape[b.shape.size() - 2] != k) return nullptr;
  if (b.value && b.shape.size() == 2) {
    // A linear layer: all leading dims of A fold into M.
    const int64_t m = shape_numel(a.shape) / k;
    if (m == 1) {
      const float* bw = b.value->data<float>();
      std::vector<float> wt(static_cast<size_t>(n * k));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p) wt[static_cast<size_t>(j * k + p)] = bw[p * n + j];
      return std::make_unique<LinearKernel>(k, n, std::move(wt), std::vector<float>{}, kernels::Activation{}, ctx.isa,
                                            "matmul");
    }
    kernels::PackedA packed(n, k, MatrixRef{b.value->data<float>(), 1, n}, ctx.isa);
    return std::make_unique<LinearKernel>(m, k, n, false, std::move(packed), std::vector<float>{}, kernels::Activation{},
                                          ctx.isa, "matmul");
  }
  const Shape a_batch(a.shape.begin(), a.shape.end() - 2);
  const Shape b_batch(b.shape.begin(), b.shape.end() - 2);
  const bool b_broadcast = b.shape.size() == 2;
  if (!b_broadcast && a_batch != b_batch) return nullptr;
  return std::make_unique<BatchedMatMulKernel>(shape_numel(a_batch), m_inner, k, n, b_broadcast, ctx.isa);
}

}  // namespace

void register_cpu_gemm_kernels(CpuKernelRegistry& r) {
  r.add("Gemm", "", make_gemm_kernel);
  r.add("FusedGemm", "ai.xnn", make_gemm_kernel);
  r.add("MatMul", "", make_matmul_kernel);
}

}  // namespace xnn
