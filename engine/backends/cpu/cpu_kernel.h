// CPU backend: optimised kernels that sit beside the ops' reference kernels (ops are declared
// once in engine/ops; a backend never redeclares one). Layering follows XNNPACK and MNN:
//   engine/ops            schema, shape inference, cost, reference kernel (the oracle)
//   engine/backends/cpu   op-level kernels: choose an algorithm for the node's shapes, pack
//                         weights once at preparation (MNN's onResize), run (onExecute)
//   engine/kernels        micro-kernels, named <dtype>_<op>_<tile>__<isa>, pure functions
// A factory looks at one node with its input shapes (and constant values) and returns a
// prepared kernel, or null when it has nothing better than the reference kernel for that case.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/op_registry.h"
#include "engine/core/thread_pool.h"
#include "engine/kernels/cpu_features.h"

namespace xnn {

// Shape-time information for choosing and preparing a kernel.
struct CpuKernelPrepareContext {
  const Node& node;
  std::span<const TensorInfo> inputs;   // dtype, shape; `value` set for constants
  std::span<const TensorInfo> outputs;  // inferred dtype and shape
  kernels::Isa isa = kernels::Isa::kScalar;
  ThreadPool* pool = nullptr;           // the pool the kernel will run on (for --tune timing)
  bool tune = false;                    // choose among applicable algorithms by timing them
};

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  // Mechanical name of the kernel doing the work, e.g. "f32_conv3x3s1_winograd_f63__avx2".
  virtual std::string name() const = 0;
  // Runs on outputs allocated with the shapes seen at preparation; inputs have those shapes.
  // Must not allocate in steady state (per-thread scratch that grows once is fine).
  virtual void run(KernelContext& ctx) = 0;
  // Producer-consumer fusion, offered at plan time when `consumer`'s node is the only reader of
  // this node's output: a kernel that can compute the consumer's outputs itself (so the
  // intermediate tensor stays in cache) keeps the consumer's planned tensors, which stay valid
  // for the plan's lifetime, and returns true; its run() then writes the consumer's outputs too
  // and the session skips the consumer. The intermediate tensor is then never written.
  virtual bool fuse_consumer(CpuKernel& consumer, std::span<const Tensor* const> consumer_inputs,
                             std::span<Tensor* const> consumer_outputs) {
    (void)consumer, (void)consumer_inputs, (void)consumer_outputs;
    return false;
  }
};

using CpuKernelFactory = std::function<std::unique_ptr<CpuKernel>(const CpuKernelPrepareContext&)>;

class CpuKernelRegistry {
 public:
  static const CpuKernelRegistry& builtin();
  // Factories for one op are tried in the order they were added; the first non-null wins.
  void add(const std::string& op_type, const std::string& domain, CpuKernelFactory factory);
  // Null when no factory applies (the session then runs the reference kernel).
  std::unique_ptr<CpuKernel> create(const CpuKernelPrepareContext& ctx) const;

 private:
  std::map<std::string, std::vector<CpuKernelFactory>> factories_;  // key: domain + ":" + type
};

// Each backend file registers its factories; builtin() calls them all.
void register_cpu_conv_kernels(CpuKernelRegistry& r);
void register_cpu_gemm_kernels(CpuKernelRegistry& r);
void register_cpu_pool_kernels(CpuKernelRegistry& r);
void register_cpu_elementwise_kernels(CpuKernelRegistry& r);
void register_cpu_data_movement_kernels(CpuKernelRegistry& r);
void register_cpu_qconv_kernels(CpuKernelRegistry& r);    // QLinearConv (qconv_cpu.cpp)
void register_cpu_qgemm_kernels(CpuKernelRegistry& r);    // QLinearMatMul, QGemm (qgemm_cpu.cpp)
void register_cpu_qpool_kernels(CpuKernelRegistry& r);    // uint8 MaxPool, QLinearGlobalAveragePool (qpool_cpu.cpp)
void register_cpu_qelementwise_kernels(CpuKernelRegistry& r);  // QLinearAdd, QuantizeLinear (qelementwise_cpu.cpp)
void register_cpu_row_quantized_kernels(CpuKernelRegistry& r);  // ai.xnn RowQuantizedGemm (row_quantized_cpu.cpp)
void register_cpu_codebook_kernels(CpuKernelRegistry& r);       // ai.xnn CodebookGemm/Gather (codebook_cpu.cpp)
// Sparse 1x1 Conv / Gemm / MatMul for pruned weights (sparse_cpu.cpp); registered first, declines
// (null) unless the constant weights are sparse enough to pay.
void register_cpu_sparse_kernels(CpuKernelRegistry& r);
// Pattern-sparse 3x3 Conv for pattern-pruned weights (pattern_conv_cpu.cpp); registered before the
// dense conv, declines (null) unless every kernel keeps <= 5 taps and the kept work pays.
void register_cpu_pattern_conv_kernels(CpuKernelRegistry& r);

}  // namespace xnn
