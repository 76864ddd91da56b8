// fp32 kernels of the training path (engine/train): the memory-bound passes between the
// convolutions of a training step — BatchNorm batch statistics, affine and backward passes (with
// an optional fused ReLU), ReLU backward, 2×2 stride-2 max pooling that records its argmax, and
// dropout masks. Each pass reads and writes a whole batch of activations (megabytes), so what
// matters is one sweep per pass at full vector width.
//
// Each kernel works on one contiguous row (the caller splits the batch into rows and rows over
// threads). The bodies are written once as plain loops (training_kernels_impl.h) and compiled
// twice: baseline x86-64 (the scalar path, the definition) and AVX2+FMA
// (training_kernels_avx2.cpp). FP contraction is off in both builds (engine/CMakeLists.txt) and
// every reduction uses the same 16 explicit lanes, so both paths give bit-identical results: a
// training run does not depend on the CPU it runs on, and the tests compare them exactly.
#pragma once
#include <cstdint>

#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

// Activations the BatchNorm passes apply or differentiate inline: kNone, kRelu, kClip,
// kLeakyRelu, kHardSwish, kHardSigmoid (the others are never fused, see training_fusable).
// Values as apply_activation_scalar; derivatives as the standalone backward kernels
// (engine/train/grad_activation.cpp): Relu and Clip pass dy strictly inside their linear range,
// LeakyRelu x > 0 ? 1 : alpha, HardSwish 0 below −3, x/3 + 1/2 up to +3 (inclusive), 1 above,
// HardSigmoid alpha where 0 < alpha·x + beta < 1.
bool training_fusable(const Activation& act);

// Σ (x[i] − shift) and Σ (x[i] − shift)² over n floats (16 lanes, summed at the end).
void f32_shifted_sums(const float* x, int64_t n, float shift, float* sum, float* sum_sq, Isa isa = best_isa());

// y[i] = act(x[i]·a + b). y may be x.
void f32_scale_shift(const float* x, int64_t n, float a, float b, const Activation& act, float* y,
                     Isa isa = best_isa());

// BatchNorm backward, pass 1 over one row: Σ dz and Σ dz·(x − mean), with dz = dy·act'(x·a + b)
// (the fused activation's derivative at the BatchNorm output z = x·a + b; dz = dy without one).
void f32_bn_grad_sums(const float* x, const float* dy, int64_t n, float mean, float a, float b, const Activation& act,
                      float* sum_dz, float* sum_dz_xc, Isa isa = best_isa());
// Pass 2: dx[i] = k·(dz[i] − mean_dz − (x[i] − mean)·c), dz as in pass 1. `stream`: dx is far
// larger than the caches (read back only after it has left them), so the AVX2 path writes it
// with streaming stores, saving the read of each line before it is overwritten (same values).
void f32_bn_grad_apply(const float* x, const float* dy, int64_t n, float mean, float a, float b, const Activation& act,
                       float k, float mean_dz, float c, float* dx, bool stream = false, Isa isa = best_isa());

// ReLU backward from its output (y > 0 exactly where x > 0): dx[i] = y[i] > 0 ? dy[i] : 0.
void f32_relu_grad(const float* y, const float* dy, int64_t n, float* dx, Isa isa = best_isa());

// y[i] = x[i]·m[i] (dropout forward and backward with a mask of 0 and 1/(1−p)).
void f32_vmul(const float* x, const float* m, int64_t n, float* y, Isa isa = best_isa());

// Dropout mask for elements [first, first + n) of a tensor (first even): elements 2j and 2j+1
// draw the low and high 32 bits u of splitmix64(seed + j), and mask = u >= threshold ? scale : 0
// (threshold = ratio·2³², at most 2³²: then nothing is kept).
void f32_dropout_mask(uint64_t seed, int64_t first, int64_t n, uint64_t threshold, float scale, float* mask,
                      Isa isa = best_isa());

// One output row of a 2×2 stride-2 max pool over input rows r0, r1 (at least 2·ow floats each):
// out[j] = max of the window, idx[j] = the winning tap (0 r0[2j], 1 r0[2j+1], 2 r1[2j],
// 3 r1[2j+1]); the first maximum in that order wins, as in the reference MaxPool (a NaN seed
// sticks, a later NaN never replaces).
void f32_maxpool2x2_argmax_row(const float* r0, const float* r1, int64_t ow, float* out, uint8_t* idx,
                               Isa isa = best_isa());
// Its backward: d0[2j + t] and d1[2j + t] receive dy[j] at the recorded tap and 0 elsewhere
// (every one of the 4·ow floats is written).
void f32_maxpool2x2_grad_row(const float* dy, const uint8_t* idx, int64_t ow, float* d0, float* d1,
                             Isa isa = best_isa());

// Depthwise convolution weight gradient, one plane at a time: adds to the lane partial sums
// acc[(i·k + j)·8 + l] (k·k·8 floats, zeroed by the caller before its first plane) the products
// dy[oy][ox] · x[oy·s + i − pad_t][ox·s + j − pad_l] (zero outside x [h × w]) of the columns
// ox ≡ l (mod 8), for a k×k window, stride s (1 or 2); f32_dwconv_wgrad_finish then adds each
// tap's 8 lanes in order. Keeping lanes across planes (the images of a channel) leaves one
// horizontal sum per channel instead of one per plane. `scratch` holds the zero-padded plane
// (f32_dwconv_wgrad_scratch_floats). Products and sums are rounded separately on both paths (no
// FMA), in the same order, so they agree exactly.
int64_t f32_dwconv_wgrad_scratch_floats(int64_t oh, int64_t ow, int64_t k, int64_t stride);
void f32_dwconv_wgrad_plane(const float* x, int64_t h, int64_t w, const float* dy, int64_t oh, int64_t ow, int64_t k,
                            int64_t stride, int64_t pad_t, int64_t pad_l, float* scratch, float* acc,
                            Isa isa = best_isa());
// dw[t] = acc[t·8] + acc[t·8 + 1] + ... + acc[t·8 + 7] (in that order) for the k·k taps.
void f32_dwconv_wgrad_finish(const float* acc, int64_t k, float* dw);

// ---- AVX2 builds of the same bodies (training_kernels_avx2.cpp; only when isa_supported(kAvx2)) --
namespace training_avx2 {
void f32_shifted_sums(const float* x, int64_t n, float shift, float* sum, float* sum_sq);
void f32_scale_shift(const float* x, int64_t n, float a, float b, const Activation& act, float* y);
void f32_bn_grad_sums(const float* x, const float* dy, int64_t n, float mean, float a, float b, const Activation& act,
                      float* sum_dz, float* sum_dz_xc);
void f32_bn_grad_apply(const float* x, const float* dy, int64_t n, float mean, float a, float b, const Activation& act,
                       float k, float mean_dz, float c, float* dx, bool stream);
void f32_relu_grad(const float* y, const float* dy, int64_t n, float* dx);
void f32_vmul(const float* x, const float* m, int64_t n, float* y);
void f32_dropout_mask(uint64_t seed, int64_t first, int64_t n, uint64_t threshold, float scale, float* mask);
void f32_maxpool2x2_argmax_row(const float* r0, const float* r1, int64_t ow, float* out, uint8_t* idx);
void f32_maxpool2x2_grad_row(const float* dy, const uint8_t* idx, int64_t ow, float* d0, float* d1);
void f32_dwconv_wgrad_plane(const float* x, int64_t h, int64_t w, const float* dy, int64_t oh, int64_t ow, int64_t k,
                            int64_t stride, int64_t pad_t, int64_t pad_l, float* scratch, float* acc);
}  // namespace training_avx2

}  // namespace xnn::kernels
