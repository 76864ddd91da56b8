// fp32 elementwise kernels for the CPU backend: vector exp, the vector paths of the fused
// activations, binary arithmetic (Add/Sub/Mul/Div) in the three broadcast forms models use, and
// softmax over contiguous rows.
//
// Every kernel has a scalar path (the definition: plain C++ with the reference op's semantics)
// and an AVX2+FMA path (elementwise_avx2.cpp). Binary arithmetic is IEEE-exact on both paths
// (one rounding per op, as the reference); exp, sigmoid and silu are polynomial on AVX2 and
// accurate to a few ulp, with exp overflowing to +inf, underflowing to 0 and passing NaN through.
//
// Aliasing: an output may be the same buffer as a full-size input (the session runs these ops
// in place); every element is read before it is written.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

// ---- exp ------------------------------------------------------------------------------------
// y[i] = exp(x[i]).
void f32_vexp(int64_t n, const float* x, float* y, Isa isa = best_isa());

// ---- activations ----------------------------------------------------------------------------
// y[i] = apply_activation_scalar(x[i], act) (AVX2: the same function to a few ulp for
// Sigmoid/Silu, HardSwish/HardSigmoid with one fused rounding; the rest bit-exact).
void f32_vact(int64_t n, const float* x, float* y, const Activation& act, Isa isa = best_isa());
// The same over the pool, in chunks (serial below a size where threading does not pay).
void f32_activation(int64_t n, const float* x, float* y, const Activation& act, ThreadPool* pool, Isa isa);
// "f32_vrelu__avx2", "f32_vclamp__scalar", ... ("f32_vcopy__<isa>" for kNone).
std::string activation_kernel_name(ActKind kind, Isa isa);

// ---- binary arithmetic ----------------------------------------------------------------------
enum class BinaryOp { kAdd, kSub, kMul, kDiv };
enum class BroadcastKind {
  kSame,     // a, b and out all have numel() elements
  kScalar,   // the small operand is one element, the other has numel() elements
  kChannel,  // the full operand is [outer][channels][inner]; the small one is [channels],
             // shared by every outer index (per-channel scaling, SE blocks, bias over the last dim)
};

struct BinaryBroadcast {
  BroadcastKind kind = BroadcastKind::kSame;
  bool small_is_a = false;  // kScalar/kChannel: the broadcast operand is a (out = small op full)
  int64_t outer = 1, channels = 1, inner = 1;
  int64_t numel() const { return outer * channels * inner; }
};

// Which form out = a op b takes under numpy broadcasting of shapes a and b; false when it is
// none of them (the caller then uses the reference kernel).
bool plan_binary_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, BinaryBroadcast* plan);

// out = act(a op b) in the form `bc` describes; a and b as in plan_binary_broadcast.
void f32_binary(BinaryOp op, const BinaryBroadcast& bc, const float* a, const float* b, float* out,
                const Activation& act, ThreadPool* pool, Isa isa);
// "f32_vadd__avx2" (same shape), "f32_vmulc__avx2" (scalar), "f32_vrsubc__scalar" (scalar on the
// left of a Sub/Div), "f32_vmul_channel__avx2" (per channel).
std::string binary_kernel_name(BinaryOp op, const BinaryBroadcast& bc, Isa isa);

// Contiguous micro-kernels.
// out[i] = act(a[i] op b[i])
void f32_vbinary(BinaryOp op, int64_t n, const float* a, const float* b, float* out, const Activation& act, Isa isa);
// out[i] = act(a[i] op b), or act(b op a[i]) when `reversed`
void f32_vbinaryc(BinaryOp op, int64_t n, const float* a, float b, bool reversed, float* out, const Activation& act,
                  Isa isa);

// ---- softmax --------------------------------------------------------------------------------
// Each of `rows` rows of `len` contiguous floats: y = exp(x - max) / sum(exp(x - max)).
void f32_softmax(int64_t rows, int64_t len, const float* x, float* y, ThreadPool* pool, Isa isa);
std::string softmax_kernel_name(Isa isa);  // "f32_softmax__avx2"

// ---- AVX2 entry points (elementwise_avx2.cpp): call only when isa_supported(Isa::kAvx2) ---------
void f32_vexp__avx2(int64_t n, const float* x, float* y);
void f32_vact__avx2(int64_t n, const float* x, float* y, const Activation& act);
void f32_vbinary__avx2(BinaryOp op, int64_t n, const float* a, const float* b, float* out);
void f32_vbinaryc__avx2(BinaryOp op, int64_t n, const float* a, float b, bool reversed, float* out);
void f32_softmax__avx2(int64_t len, const float* x, float* y);

}  // namespace xnn::kernels
