// The MaxPool CPU kernel, declared here so that a producer kernel can recognise it as its reader
// and fuse it (ConvKernel::fuse_consumer: a direct-convolution stem and the pool after it).
#pragma once
#include <string>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/pooling.h"

namespace xnn {

class MaxPool2dKernel final : public CpuKernel {
 public:
  MaxPool2dKernel(const kernels::Pool2dParams& p, kernels::Isa isa) : p_(p), isa_(isa) {}
  std::string name() const override { return kernels::maxpool2d_kernel_name(p_, isa_); }
  void run(KernelContext& ctx) override {
    kernels::f32_maxpool2d(p_, ctx.input(0).data<float>(), ctx.output(0).data<float>(), ctx.pool(), isa_);
  }
  const kernels::Pool2dParams& params() const { return p_; }

 private:
  kernels::Pool2dParams p_;
  kernels::Isa isa_;
};

}  // namespace xnn
