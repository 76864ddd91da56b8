// Per-thread scratch memory for kernels (packing buffers, im2col columns, Winograd tiles).
// Grows monotonically and is reused, so after the first run of a given shape a kernel never
// allocates. `slot` separates buffers used at the same time by one kernel (0..3); callers on
// the same thread must not hold a slot across a call into another kernel that uses it:
// by convention GEMM uses slots 0-1, op-level kernels (im2col, Winograd, ...) slots 2-3.
#pragma once
#include <cstddef>

namespace xnn::kernels {

// 64-byte aligned, with at least 64 bytes of slack past `floats` for SIMD over-reads.
float* thread_scratch_f32(size_t floats, int slot);

}  // namespace xnn::kernels
