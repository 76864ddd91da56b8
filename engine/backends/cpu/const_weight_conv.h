// What the structure-reading convolution kernels (sparse 1×1 in sparse_cpu.cpp, pattern 3×3 in
// pattern_conv_cpu.cpp) both require of a Conv / FusedConv node before they look at its weights:
// fp32 NCHW input, constant OIHW fp32 weights with the given kernel size, group 1, a constant fp32
// bias of Cout values or none, a residual input (FusedConv) of the output's shape or none, and an
// output of [N, Cout, oh, ow] as the window geometry gives. Stride, padding and dilation are left
// to the caller, which knows what its kernel supports.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/ops/op_helpers.h"

namespace xnn {

struct ConstWeightConv {
  Shape in;   // [N, Cin, H, W]
  Shape out;  // [N, Cout, oh, ow]
  WindowGeometry geo;
  int64_t cout = 0, cin = 0;
  const float* weights = nullptr;  // [Cout][Cin][kh][kw]
  std::vector<float> bias;         // Cout values, or empty
  bool has_residual = false;       // FusedConv's input 3
};

std::optional<ConstWeightConv> match_const_weight_conv(const CpuKernelPrepareContext& ctx, int64_t kernel_h,
                                                       int64_t kernel_w);

}  // namespace xnn
