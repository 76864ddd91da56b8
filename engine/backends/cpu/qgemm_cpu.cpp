// QLinearMatMul and com.microsoft QGemm with constant int8 weights (quantised linear layers) on
// the int8 GEMM (engine/kernels/qgemm.h) and GEMV (qgemv.h).
//
// Applies when A is uint8 with a per-tensor constant scale and zero point (absent = 0 where the
// op allows it); B a constant int8 matrix with zero point 0 (absent, or all zeros per tensor /
// per column) and a constant scale per tensor or per column; no input can overflow the int32
// accumulator; and either
//   - y uint8 with a per-tensor constant scale and zero point, every multiplier
//     a_scale·b_scale[n] / y_scale (QGemm: alpha·a_scale first) finite and > 0, or
//   - (QGemm without y_scale) a float y = float(acc)·(alpha·a_scale·b_scale[n]).
// Otherwise (per-row A scales, uint8 or run-time B, int8 A or y, a C that varies along M, ...)
// the op's reference kernel runs. The float factors are formed as the references form them.
//   QLinearMatMul: A [..., K] (every leading dim folds into rows), B [K, N].
//   QGemm: A [M, K] (or [K, M] with transA), B [K, N] (or [N, K] with transB), C absent or a
//   constant int32 that is one value per column (shape [], [1], [N], [1, N]): the bias.
//
// Algorithms:
//   one row of A (batch-1 linear layers)  -> qs8_gemv over Bᵀ (int8, transposed at preparation),
//       A centred on its zero point per call; then requantize() (uint8 y) or the float factor;
//   several rows, uint8 y -> Yᵀ = Bᵀ·Aᵀ on the packed GEMM, so that Bᵀ [N×K] is the packed
//       int8 operand (with C as its per-row bias) and each row of Yᵀ has its own multiplier. Aᵀ
//       is A itself with transA, else A is transposed into scratch (slot 2); Yᵀ is transposed
//       back out of scratch (slot 3). The transposes cost O(rows·(K + N)) next to O(rows·K·N);
//   several rows, float y -> qs8_gemv row by row.
#include <algorithm>
#include <optional>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/backends/cpu/quant_params_cpu.h"
#include "engine/kernels/qgemm.h"
#include "engine/kernels/qgemv.h"
#include "engine/kernels/requantize.h"
#include "engine/kernels/scratch.h"

namespace xnn {
namespace {

using kernels::Isa;

// What both ops and every algorithm share.
struct QLinearLayer {
  std::string op;  // "matmul" or "gemm", for the kernel name
  int64_t rows = 0, k = 0, n = 0;
  bool trans_a = false;
  uint8_t a_zero_point = 0;
  std::vector<int32_t> bias;  // per column of Y, empty = none
  std::vector<int8_t> bt;     // Bᵀ [N×K]
};

// A's row r centred on its zero point, as int16, into per-thread scratch (slot 2).
const int16_t* centred_row(const QLinearLayer& l, const uint8_t* a, int64_t r) {
  auto* x = reinterpret_cast<int16_t*>(kernels::thread_scratch_f32(static_cast<size_t>(l.k + 1) / 2, 2));
  const int32_t zp = l.a_zero_point;
  for (int64_t p = 0; p < l.k; ++p) {
    x[p] = static_cast<int16_t>(static_cast<int32_t>(l.trans_a ? a[p * l.rows + r] : a[r * l.k + p]) - zp);
  }
  return x;
}

// uint8 y, one row: GEMV, then requantize() per column.
class QLinearGemvKernel final : public CpuKernel {
 public:
  QLinearGemvKernel(QLinearLayer l, std::vector<float> multipliers, uint8_t y_zero_point)
      : l_(std::move(l)), multipliers_(std::move(multipliers)), y_zp_(y_zero_point) {}
  std::string name() const override { return "qs8_" + l_.op + "+" + kernels::qs8_gemv_kernel_name(); }
  void run(KernelContext& ctx) override {
    const int16_t* x = centred_row(l_, ctx.input(0).data<uint8_t>(), 0);
    auto* acc = reinterpret_cast<int32_t*>(kernels::thread_scratch_f32(static_cast<size_t>(l_.n), 3));
    kernels::qs8_gemv(l_.n, l_.k, l_.bt.data(), l_.k, x, l_.bias.empty() ? nullptr : l_.bias.data(), acc, ctx.pool());
    uint8_t* y = ctx.output(0).data<uint8_t>();
    const float lower = static_cast<float>(-int32_t{y_zp_}), upper = static_cast<float>(255 - int32_t{y_zp_});
    for (int64_t j = 0; j < l_.n; ++j) {
      y[j] = kernels::requantize(acc[j], multipliers_[static_cast<size_t>(j)], lower, upper, y_zp_);
    }
  }

 private:
  QLinearLayer l_;
  std::vector<float> multipliers_;
  uint8_t y_zp_;
};

// uint8 y, several rows: Yᵀ = Bᵀ·Aᵀ on the packed GEMM.
class QLinearGemmKernel final : public CpuKernel {
 public:
  QLinearGemmKernel(QLinearLayer l, std::vector<float> multipliers, uint8_t y_zero_point, Isa isa)
      : l_(std::move(l)),
        w_(l_.n, l_.k, l_.bt.data(), l_.k, l_.bias.empty() ? nullptr : l_.bias.data(), isa),
        multipliers_(std::move(multipliers)) {
    rq_.multiplier = multipliers_.data();
    rq_.zero_point = y_zero_point;
  }
  std::string name() const override { return "qs8_" + l_.op + "+" + w_.kernel_name(); }
  void run(KernelContext& ctx) override {
    const int64_t rows = l_.rows, k = l_.k, n = l_.n;
    const uint8_t* a = ctx.input(0).data<uint8_t>();
    uint8_t* y = ctx.output(0).data<uint8_t>();
    const uint8_t* at = a;  // Aᵀ [K×rows]
    if (!l_.trans_a) {
      auto* t = reinterpret_cast<uint8_t*>(kernels::thread_scratch_f32(static_cast<size_t>((k * rows + 3) / 4), 2));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t p = 0; p < k; ++p) t[p * rows + r] = a[r * k + p];
      at = t;
    }
    auto* yt = reinterpret_cast<uint8_t*>(kernels::thread_scratch_f32(static_cast<size_t>((n * rows + 3) / 4), 3));
    kernels::qs8_gemm(w_, rows, at, rows, l_.a_zero_point, rq_, yt, rows, ctx.pool());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n; ++j) y[r * n + j] = yt[j * rows + r];
  }

 private:
  QLinearLayer l_;
  kernels::PackedQs8Weights w_;
  std::vector<float> multipliers_;
  kernels::QRequant rq_;
};

// float y (QGemm without y_scale): GEMV per row, y = float(acc)·factor[n].
class QLinearFloatKernel final : public CpuKernel {
 public:
  QLinearFloatKernel(QLinearLayer l, std::vector<float> factors)
      : l_(std::move(l)), factors_(std::move(factors)) {}
  std::string name() const override { return "qs8_" + l_.op + "_f32+" + kernels::qs8_gemv_kernel_name(); }
  void run(KernelContext& ctx) override {
    const uint8_t* a = ctx.input(0).data<uint8_t>();
    float* y = ctx.output(0).data<float>();
    auto* acc = reinterpret_cast<int32_t*>(kernels::thread_scratch_f32(static_cast<size_t>(l_.n), 3));
    for (int64_t r = 0; r < l_.rows; ++r) {
      const int16_t* x = centred_row(l_, a, r);
      kernels::qs8_gemv(l_.n, l_.k, l_.bt.data(), l_.k, x, l_.bias.empty() ? nullptr : l_.bias.data(), acc, ctx.pool());
      float* yr = y + r * l_.n;
      for (int64_t j = 0; j < l_.n; ++j) yr[j] = static_cast<float>(acc[j]) * factors_[static_cast<size_t>(j)];
    }
  }

 private:
  QLinearLayer l_;
  std::vector<float> factors_;
};

// The operands both ops share once their own forms are read.
struct QLinearOperands {
  QLinearLayer layer;
  bool trans_b = false;
  float alpha = 1.0f;
  const TensorInfo *a_scale = nullptr, *a_zp = nullptr, *b = nullptr, *b_scale = nullptr, *b_zp = nullptr;
  const TensorInfo *y_scale = nullptr, *y_zp = nullptr;  // y_scale absent: float output
  DType y_dtype = DType::kUnknown;
};

std::unique_ptr<CpuKernel> make_linear_kernel(QLinearOperands q, Isa isa) {
  QLinearLayer& l = q.layer;
  // An absent zero point (QGemm's are optional) is 0.
  const auto zero_point = [](const TensorInfo& t) {
    return t.dtype == DType::kUnknown ? std::optional<uint8_t>(0) : constant_u8_zero_point(t);
  };
  const auto a_scale = constant_scale(*q.a_scale);
  const auto a_zp = zero_point(*q.a_zp);
  const auto b_scales = constant_scales(*q.b_scale, l.n);
  if (!a_scale || !a_zp || !b_scales || !zero_i8_zero_point(*q.b_zp)) return nullptr;
  int64_t max_abs_bias = 0;
  for (int32_t v : l.bias) max_abs_bias = std::max(max_abs_bias, v < 0 ? -int64_t{v} : int64_t{v});
  if (l.k > kernels::qs8_gemm_max_depth(max_abs_bias)) return nullptr;
  l.a_zero_point = *a_zp;
  // Bᵀ: row j holds column j of B.
  const int8_t* bv = q.b->value->data<int8_t>();
  l.bt.resize(static_cast<size_t>(l.n * l.k));
  for (int64_t p = 0; p < l.k; ++p)
    for (int64_t j = 0; j < l.n; ++j) l.bt[static_cast<size_t>(j * l.k + p)] = q.trans_b ? bv[j * l.k + p] : bv[p * l.n + j];
  const float a_factor = q.alpha * *a_scale;

  if (q.y_scale->dtype == DType::kUnknown) {  // float output (QGemm's reference: float(acc)·(alpha·a_scale·b_scale))
    if (q.y_dtype != DType::kF32) return nullptr;
    std::vector<float> factors(static_cast<size_t>(l.n));
    for (int64_t j = 0; j < l.n; ++j) factors[static_cast<size_t>(j)] = a_factor * (*b_scales)[static_cast<size_t>(j)];
    return std::make_unique<QLinearFloatKernel>(std::move(l), std::move(factors));
  }
  const auto y_scale = constant_scale(*q.y_scale);
  const auto y_zp = zero_point(*q.y_zp);
  if (q.y_dtype != DType::kU8 || !y_scale || !y_zp) return nullptr;
  auto multipliers = requant_multipliers(a_factor, *b_scales, *y_scale);
  if (!multipliers) return nullptr;
  if (l.rows == 1) return std::make_unique<QLinearGemvKernel>(std::move(l), std::move(*multipliers), *y_zp);
  return std::make_unique<QLinearGemmKernel>(std::move(l), std::move(*multipliers), *y_zp, isa);
}

// QLinearMatMul (a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)
std::unique_ptr<CpuKernel> make_qlinear_matmul_kernel(const CpuKernelPrepareContext& ctx) {
  if (ctx.inputs.size() != 8 || ctx.outputs.empty()) return nullptr;
  const TensorInfo& a = ctx.inputs[0];
  const TensorInfo& b = ctx.inputs[3];
  if (a.dtype != DType::kU8 || a.shape.empty() || b.dtype != DType::kI8 || !b.value || b.shape.size() != 2) {
    return nullptr;
  }
  QLinearOperands q;
  QLinearLayer& l = q.layer;
  l.op = "matmul";
  l.k = b.shape[0], l.n = b.shape[1];
  if (a.shape.back() != l.k || l.k <= 0 || l.n <= 0) return nullptr;
  l.rows = shape_numel(a.shape) / l.k;
  if (l.rows <= 0 || shape_numel(ctx.outputs[0].shape) != l.rows * l.n) return nullptr;
  q.a_scale = &ctx.inputs[1], q.a_zp = &ctx.inputs[2], q.b = &b, q.b_scale = &ctx.inputs[4], q.b_zp = &ctx.inputs[5];
  q.y_scale = &ctx.inputs[6], q.y_zp = &ctx.inputs[7];
  q.y_dtype = ctx.outputs[0].dtype;
  if (q.y_scale->dtype == DType::kUnknown) return nullptr;  // required by QLinearMatMul
  return make_linear_kernel(std::move(q), ctx.isa);
}

// com.microsoft QGemm (A, a_scale, a_zp, B, b_scale, b_zp?, C?, y_scale?, y_zp?)
std::unique_ptr<CpuKernel> make_qgemm_kernel(const CpuKernelPrepareContext& ctx) {
  static const TensorInfo absent;
  const auto input = [&](size_t i) -> const TensorInfo& { return i < ctx.inputs.size() ? ctx.inputs[i] : absent; };
  if (ctx.inputs.size() < 5 || ctx.outputs.empty()) return nullptr;
  const TensorInfo& a = ctx.inputs[0];
  const TensorInfo& b = ctx.inputs[3];
  if (a.dtype != DType::kU8 || a.shape.size() != 2 || b.dtype != DType::kI8 || !b.value || b.shape.size() != 2) {
    return nullptr;
  }
  QLinearOperands q;
  QLinearLayer& l = q.layer;
  l.op = "gemm";
  l.trans_a = ctx.node.attr_int("transA", 0) != 0;
  q.trans_b = ctx.node.attr_int("transB", 0) != 0;
  q.alpha = ctx.node.attr_float("alpha", 1.0f);
  l.rows = l.trans_a ? a.shape[1] : a.shape[0];
  l.k = l.trans_a ? a.shape[0] : a.shape[1];
  l.n = q.trans_b ? b.shape[0] : b.shape[1];
  if ((q.trans_b ? b.shape[1] : b.shape[0]) != l.k || l.rows <= 0 || l.k <= 0 || l.n <= 0) return nullptr;
  if (ctx.outputs[0].shape != Shape{l.rows, l.n}) return nullptr;
  const TensorInfo& c = input(6);
  if (c.dtype != DType::kUnknown) {
    // C as one value per column (the usual fully-connected bias); a C varying along M is not a bias.
    const bool per_column = c.shape.size() <= 1 || (c.shape.size() == 2 && c.shape[0] == 1);
    const int64_t cn = shape_numel(c.shape);
    if (!c.value || c.dtype != DType::kI32 || !per_column || (cn != 1 && cn != l.n)) return nullptr;
    const int32_t* pc = c.value->data<int32_t>();
    l.bias.resize(static_cast<size_t>(l.n));
    for (int64_t j = 0; j < l.n; ++j) l.bias[static_cast<size_t>(j)] = pc[cn == 1 ? 0 : j];
  }
  q.a_scale = &ctx.inputs[1], q.a_zp = &ctx.inputs[2], q.b = &b, q.b_scale = &ctx.inputs[4], q.b_zp = &input(5);
  q.y_scale = &input(7), q.y_zp = &input(8);
  q.y_dtype = ctx.outputs[0].dtype;
  return make_linear_kernel(std::move(q), ctx.isa);
}

}  // namespace

void register_cpu_qgemm_kernels(CpuKernelRegistry& r) {
  r.add("QLinearMatMul", "", make_qlinear_matmul_kernel);
  r.add("QGemm", "com.microsoft", make_qgemm_kernel);
}

}  // namespace xnn
