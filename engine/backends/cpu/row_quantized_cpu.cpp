// ai.xnn RowQuantizedGemm on the CPU (engine/kernels/row_quantized.h): weight-only 4/8-bit rows
// dequantised on the fly by the factored form, split over output rows. The codes and the row
// parameters must be constants (they are weights); the scale and offset are converted to float
// once here, at preparation. RowQuantizedGather (a table lookup) needs no kernel of its own.
#include <vector>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/core/half.h"
#include "engine/kernels/row_quantized.h"

namespace xnn {
namespace {

std::vector<float> float_params(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = t.dtype() == DType::kF16 ? static_cast<float>(t.data<Half>()[i]) : t.data<float>()[i];
  }
  return out;
}

class RowQuantizedGemmKernel final : public CpuKernel {
 public:
  RowQuantizedGemmKernel(Tensor codes, std::vector<float> scale, std::vector<float> offset, int bits, int64_t cols,
                         kernels::Isa isa)
      : codes_(std::move(codes)), scale_(std::move(scale)), offset_(std::move(offset)), isa_(isa) {
    w_.codes = codes_.data<uint8_t>();
    w_.bits = bits;
    w_.rows = codes_.dim(0);
    w_.cols = cols;
    w_.row_bytes = codes_.dim(1);
    w_.scale = scale_.data();
    w_.offset = offset_.data();
  }
  std::string name() const override { return kernels::rowq_gemm_kernel_name(w_.bits, isa_); }
  void run(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const float* bias = ctx.has_input(4) ? ctx.input(4).data<float>() : nullptr;
    kernels::f32_rowq_gemm(a.data<float>(), a.numel() / w_.cols, w_, bias, ctx.output(0).data<float>(), ctx.pool(), isa_);
  }

 private:
  Tensor codes_;  // keeps the constant's buffer alive
  std::vector<float> scale_, offset_;
  kernels::RowQuantizedWeights w_;
  kernels::Isa isa_;
};

std::unique_ptr<CpuKernel> make_row_quantized_gemm(const CpuKernelPrepareContext& ctx) {
  if (ctx.inputs.size() < 4 || ctx.outputs.empty()) return nullptr;
  const TensorInfo &a = ctx.inputs[0], &codes = ctx.inputs[1], &scale = ctx.inputs[2], &offset = ctx.inputs[3];
  if (!codes.value || !scale.value || !offset.value) return nullptr;
  if (a.dtype != DType::kF32 || codes.dtype != DType::kU8 || codes.shape.size() != 2) return nullptr;
  const int bits = static_cast<int>(ctx.node.attr_int("bits", 8));
  const int64_t cols = ctx.node.attr_int("cols", 0);
  if ((bits != 4 && bits != 8) || cols < 1 || codes.shape[1] != kernels::row_quantized_bytes(cols, bits)) return nullptr;
  return std::make_unique<RowQuantizedGemmKernel>(*codes.value, float_params(*scale.value), float_params(*offset.value),
                                                  bits, cols, ctx.isa);
}

}  // namespace

void register_cpu_row_quantized_kernels(CpuKernelRegistry& r) {
  r.add("RowQuantizedGemm", "ai.xnn", make_row_quantized_gemm);
}

}  // namespace xnn
