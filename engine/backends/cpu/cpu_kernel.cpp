#include "engine/backends/cpu/cpu_kernel.h"

#include "engine/core/error.h"

namespace xnn {

const CpuKernelRegistry& CpuKernelRegistry::builtin() {
  static const CpuKernelRegistry registry = [] {
    CpuKernelRegistry r;
    register_cpu_sparse_kernels(r);  // before the dense conv/gemm: takes only sparse weights
    register_cpu_pattern_conv_kernels(r);  // before the dense conv: takes only pattern-pruned 3x3 weights
    register_cpu_conv_kernels(r);
    register_cpu_gemm_kernels(r);
    register_cpu_pool_kernels(r);
    register_cpu_elementwise_kernels(r);
    register_cpu_data_movement_kernels(r);
    register_cpu_qconv_kernels(r);
    register_cpu_qgemm_kernels(r);
    register_cpu_qpool_kernels(r);
    register_cpu_qelementwise_kernels(r);
    register_cpu_row_quantized_kernels(r);
    register_cpu_codebook_kernels(r);
    return r;
  }();
  return registry;
}

void CpuKernelRegistry::add(const std::string& op_type, const std::string& domain, CpuKernelFactory factory) {
  factories_[domain + ":" + op_type].push_back(std::move(factory));
}

std::unique_ptr<CpuKernel> CpuKernelRegistry::create(const CpuKernelPrepareContext& ctx) const {
  auto it = factories_.find(ctx.node.domain + ":" + ctx.node.op_type);
  if (it == factories_.end()) return nullptr;
  for (const CpuKernelFactory& f : it->second) {
    if (auto k = f(ctx)) return k;
  }
  return nullptr;
}

}  // namespace xnn
