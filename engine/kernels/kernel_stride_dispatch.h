// Calls f.template operator()<K, S>() for a window of K = 3, 5 or 7 and stride S = 1 or 2 (the
// geometries the depthwise and direct convolution kernels instantiate), so each kernel file
// writes its compile-time dispatch once: with_kernel_and_stride(k, s, [&]<int K, int S>() {...}).
// Other values land on 7 and 2: callers check the geometry first (f32_conv_direct_supported).
#pragma once
#include <cstdint>

namespace xnn::kernels {

template <typename F>
decltype(auto) with_kernel_and_stride(int64_t kernel, int64_t stride, F&& f) {
  switch (kernel * 10 + stride) {
    case 31: return f.template operator()<3, 1>();
    case 32: return f.template operator()<3, 2>();
    case 51: return f.template operator()<5, 1>();
    case 52: return f.template operator()<5, 2>();
    case 71: return f.template operator()<7, 1>();
    default: return f.template operator()<7, 2>();
  }
}

}  // namespace xnn::kernels
