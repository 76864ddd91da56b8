// ai.xnn CodebookGemm and CodebookGather on the CPU (engine/kernels/codebook.h): k-means indices
// looked up on the fly, the GEMM split over output rows. The codes and centroids must be constants
// (they are weights): they are checked once here, at preparation (every code must address a
// centroid), and the centroid table is padded to 256 entries for the vector lookups. A node whose
// codes are not constant, or do not check, runs the reference op (which reports the bad code).
#include <cstring>
#include <vector>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/codebook.h"
#include "engine/ops/weight_only_common.h"

namespace xnn {
namespace {

// The node's constant codes and centroids, when they are well formed; else false.
bool constant_codebook(const CpuKernelPrepareContext& ctx, int codes_i, kernels::CodebookWeights* w) {
  if (ctx.inputs.size() <= static_cast<size_t>(codes_i + 1) || ctx.outputs.empty()) return false;
  const TensorInfo &codes = ctx.inputs[static_cast<size_t>(codes_i)], &centroids = ctx.inputs[static_cast<size_t>(codes_i + 1)];
  if (!codes.value || !centroids.value || codes.dtype != DType::kU8 || codes.shape.size() != 2) return false;
  if (centroids.dtype != DType::kF32 || centroids.shape.size() != 1) return false;
  const int bits = static_cast<int>(ctx.node.attr_int("bits", 4));
  const int64_t cols = ctx.node.attr_int("cols", 0);
  const int64_t k = centroids.shape[0];
  if (bits < 1 || bits > 8 || cols < 1 || k < 1 || k > (int64_t{1} << bits)) return false;
  if (codes.shape[1] != kernels::codebook_row_bytes(cols, bits)) return false;
  const uint8_t* data = codes.value->data<uint8_t>();
  for (int64_t r = 0; r < codes.shape[0]; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      if (kernels::codebook_code(data + r * codes.shape[1], bits, c) >= k) return false;
    }
  }
  *w = kernels::CodebookWeights{data, bits, codes.shape[0], cols, codes.shape[1], centroids.value->data<float>(), k};
  return true;
}

class CodebookGemmKernel final : public CpuKernel {
 public:
  CodebookGemmKernel(Tensor codes, Tensor centroids, kernels::CodebookWeights w, kernels::Isa isa)
      : codes_(std::move(codes)), centroids_(std::move(centroids)), w_(w), isa_(isa) {}
  std::string name() const override { return kernels::codebook_gemm_kernel_name(w_.bits, isa_); }
  void run(KernelContext& ctx) override {
    const Tensor& a = ctx.input(0);
    const float* bias = ctx.has_input(3) ? ctx.input(3).data<float>() : nullptr;
    kernels::f32_codebook_gemm(a.data<float>(), a.numel() / w_.cols, w_, bias, ctx.output(0).data<float>(), ctx.pool(),
                               isa_);
  }

 private:
  Tensor codes_, centroids_;  // keep the constants' buffers alive
  kernels::CodebookWeights w_;
  kernels::Isa isa_;
};

class CodebookGatherKernel final : public CpuKernel {
 public:
  CodebookGatherKernel(Tensor codes, kernels::CodebookWeights w, kernels::Isa isa)
      : codes_(std::move(codes)), w_(w), isa_(isa), table_(256, 0.0f) {
    std::memcpy(table_.data(), w.centroids, static_cast<size_t>(w.num_centroids) * sizeof(float));
  }
  std::string name() const override {
    return "f32_cb" + std::to_string(w_.bits) + "_gather__" + std::string(kernels::isa_name(isa_));
  }
  void run(KernelContext& ctx) override {
    const Tensor& indices = ctx.input(2);
    float* out = ctx.output(0).data<float>();
    for (int64_t i = 0; i < indices.numel(); ++i) {
      const uint8_t* row = w_.codes + weight_only::table_row(ctx, indices, i, w_.rows) * w_.row_bytes;
      if (isa_ == kernels::Isa::kAvx2) {
        kernels::decode_codebook_row__avx2(row, w_.bits, w_.cols, table_.data(), w_.num_centroids, out + i * w_.cols);
      } else {
        kernels::decode_codebook_row(row, w_.bits, w_.cols, table_.data(), out + i * w_.cols);
      }
    }
  }

 private:
  Tensor codes_;
  kernels::CodebookWeights w_;
  kernels::Isa isa_;
  std::vector<float> table_;  // the centroids, zero-padded to 256
};

std::unique_ptr<CpuKernel> make_codebook_gemm(const CpuKernelPrepareContext& ctx) {
  kernels::CodebookWeights w;
  if (ctx.inputs.empty() || ctx.inputs[0].dtype != DType::kF32 || !constant_codebook(ctx, 1, &w)) return nullptr;
  return std::make_unique<CodebookGemmKernel>(*ctx.inputs[1].value, *ctx.inputs[2].value, w, ctx.isa);
}

std::unique_ptr<CpuKernel> make_codebook_gather(const CpuKernelPrepareContext& ctx) {
  kernels::CodebookWeights w;
  if (ctx.inputs.size() < 3 || !constant_codebook(ctx, 0, &w)) return nullptr;
  return std::make_unique<CodebookGatherKernel>(*ctx.inputs[0].value, w, ctx.isa);
}

}  // namespace

void register_cpu_codebook_kernels(CpuKernelRegistry& r) {
  r.add("CodebookGemm", "ai.xnn", make_codebook_gemm);
  r.add("CodebookGather", "ai.xnn", make_codebook_gather);
}

}  // namespace xnn
