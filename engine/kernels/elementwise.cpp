// Scalar paths (the definitions), ISA dispatch, threading and broadcast planning of the
// elementwise kernels. The AVX2 paths live in elementwise_avx2.cpp.
#include "engine/kernels/elementwise.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"

namespace xnn::kernels {
namespace {

// Elements per task when splitting over the pool: large enough that a task outweighs the
// hand-off (a few microseconds), small enough to balance two to eight threads.
constexpr int64_t kChunk = 16384;
// Below this many elements a call runs on the calling thread.
constexpr int64_t kParallelMin = 2 * kChunk;

bool use_avx2(Isa isa) { return isa == Isa::kAvx2 && isa_supported(Isa::kAvx2); }

float binary_scalar(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
  }
  return 0;
}

template <typename F>
void for_chunks(int64_t n, ThreadPool* pool, F&& f) {
  if (n < kParallelMin || !pool || pool->threads() == 1) {
    f(int64_t{0}, n);
    return;
  }
  const int64_t tasks = (n + kChunk - 1) / kChunk;
  parallel_for(pool, tasks, [&](int64_t t) {
    const int64_t begin = t * kChunk;
    f(begin, std::min(n, begin + kChunk));
  });
}

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "add";
    case BinaryOp::kSub: return "sub";
    case BinaryOp::kMul: return "mul";
    case BinaryOp::kDiv: return "div";
  }
  return "";
}

std::string suffix(Isa isa) { return use_avx2(isa) ? "__avx2" : "__scalar"; }

}  // namespace

// ---- exp and activations --------------------------------------------------------------------

void f32_vexp(int64_t n, const float* x, float* y, Isa isa) {
  if (use_avx2(isa)) return f32_vexp__avx2(n, x, y);
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i]);
}

void f32_vact(int64_t n, const float* x, float* y, const Activation& act, Isa isa) {
  if (use_avx2(isa)) return f32_vact__avx2(n, x, y, act);
  for (int64_t i = 0; i < n; ++i) y[i] = apply_activation_scalar(x[i], act);
}

void f32_activation(int64_t n, const float* x, float* y, const Activation& act, ThreadPool* pool, Isa isa) {
  for_chunks(n, pool, [&](int64_t b, int64_t e) { f32_vact(e - b, x + b, y + b, act, isa); });
}

std::string activation_kernel_name(ActKind kind, Isa isa) {
  const char* op = "vcopy";
  switch (kind) {
    case ActKind::kNone: op = "vcopy"; break;
    case ActKind::kRelu: op = "vrelu"; break;
    case ActKind::kClip: op = "vclamp"; break;
    case ActKind::kLeakyRelu: op = "vlrelu"; break;
    case ActKind::kHardSwish: op = "vhswish"; break;
    case ActKind::kHardSigmoid: op = "vhsigmoid"; break;
    case ActKind::kSigmoid: op = "vsigmoid"; break;
    case ActKind::kSilu: op = "vsilu"; break;
  }
  return std::string("f32_") + op + suffix(isa);
}

// ---- binary ---------------------------------------------------------------------------------

// With a fused activation, the AVX2 paths run the arithmetic and then the activation over
// blocks of this many floats, so the second pass reads from L1.
constexpr int64_t kActBlock = 2048;

void f32_vbinary(BinaryOp op, int64_t n, const float* a, const float* b, float* out, const Activation& act, Isa isa) {
  if (use_avx2(isa)) {
    if (act.kind == ActKind::kNone) return f32_vbinary__avx2(op, n, a, b, out);
    for (int64_t i = 0; i < n; i += kActBlock) {
      const int64_t m = std::min(kActBlock, n - i);
      f32_vbinary__avx2(op, m, a + i, b + i, out + i);
      f32_vact__avx2(m, out + i, out + i, act);
    }
    return;
  }
  // Without an activation, one loop per op: plain enough for the compiler to vectorise.
  if (act.kind == ActKind::kNone) {
    switch (op) {
      case BinaryOp::kAdd: for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i]; return;
      case BinaryOp::kSub: for (int64_t i = 0; i < n; ++i) out[i] = a[i] - b[i]; return;
      case BinaryOp::kMul: for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i]; return;
      case BinaryOp::kDiv: for (int64_t i = 0; i < n; ++i) out[i] = a[i] / b[i]; return;
    }
  }
  for (int64_t i = 0; i < n; ++i) out[i] = apply_activation_scalar(binary_scalar(op, a[i], b[i]), act);
}

void f32_vbinaryc(BinaryOp op, int64_t n, const float* a, float b, bool reversed, float* out, const Activation& act,
                  Isa isa) {
  if (use_avx2(isa)) {
    if (act.kind == ActKind::kNone) return f32_vbinaryc__avx2(op, n, a, b, reversed, out);
    for (int64_t i = 0; i < n; i += kActBlock) {
      const int64_t m = std::min(kActBlock, n - i);
      f32_vbinaryc__avx2(op, m, a + i, b, reversed, out + i);
      f32_vact__avx2(m, out + i, out + i, act);
    }
    return;
  }
  if (reversed) {
    for (int64_t i = 0; i < n; ++i) out[i] = apply_activation_scalar(binary_scalar(op, b, a[i]), act);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = apply_activation_scalar(binary_scalar(op, a[i], b), act);
  }
}

bool plan_binary_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b, BinaryBroadcast* plan) {
  const size_t rank = std::max(a.size(), b.size());
  // Right-align both shapes (numpy) and compute the output shape; fail on incompatible dims.
  std::vector<int64_t> pa(rank, 1), pb(rank, 1), out(rank, 1);
  std::copy(a.begin(), a.end(), pa.begin() + static_cast<long>(rank - a.size()));
  std::copy(b.begin(), b.end(), pb.begin() + static_cast<long>(rank - b.size()));
  for (size_t i = 0; i < rank; ++i) {
    if (pa[i] != pb[i] && pa[i] != 1 && pb[i] != 1) return false;
    out[i] = pa[i] == 1 ? pb[i] : pa[i];
  }
  int64_t na = 1, nb = 1, n = 1;
  for (size_t i = 0; i < rank; ++i) na *= pa[i], nb *= pb[i], n *= out[i];
  BinaryBroadcast p;
  p.inner = n;
  if (na == n && nb == n) {
    *plan = p;  // same element count and compatible shapes: identical up to unit dims
    return true;
  }
  if (na != n && nb != n) return false;  // both operands broadcast
  p.small_is_a = na != n;
  const std::vector<int64_t>& small = p.small_is_a ? pa : pb;
  if ((p.small_is_a ? na : nb) == 1) {
    p.kind = BroadcastKind::kScalar;
    *plan = p;
    return true;
  }
  // Per channel: the small operand's non-unit dims form one contiguous run [first, last] where it
  // matches the output; dims after the run are the inner block, dims before it the outer one.
  size_t last = rank;
  while (last > 0 && small[last - 1] == 1) --last;
  size_t first = last - 1;
  while (first > 0 && small[first - 1] == out[first - 1]) --first;
  for (size_t i = 0; i < first; ++i) {
    if (small[i] != 1) return false;
  }
  p.kind = BroadcastKind::kChannel;
  p.outer = p.channels = p.inner = 1;
  for (size_t i = 0; i < first; ++i) p.outer *= out[i];
  for (size_t i = first; i < last; ++i) p.channels *= out[i];
  for (size_t i = last; i < rank; ++i) p.inner *= out[i];
  *plan = p;
  return true;
}

void f32_binary(BinaryOp op, const BinaryBroadcast& bc, const float* a, const float* b, float* out,
                const Activation& act, ThreadPool* pool, Isa isa) {
  const int64_t n = bc.numel();
  if (n == 0) return;
  switch (bc.kind) {
    case BroadcastKind::kSame:
      for_chunks(n, pool, [&](int64_t s, int64_t e) { f32_vbinary(op, e - s, a + s, b + s, out + s, act, isa); });
      return;
    case BroadcastKind::kScalar: {
      const float c = bc.small_is_a ? a[0] : b[0];
      const float* full = bc.small_is_a ? b : a;
      for_chunks(n, pool, [&](int64_t s, int64_t e) {
        f32_vbinaryc(op, e - s, full + s, c, bc.small_is_a, out + s, act, isa);
      });
      return;
    }
    case BroadcastKind::kChannel: break;
  }
  const float* small = bc.small_is_a ? a : b;
  const float* full = bc.small_is_a ? b : a;
  if (bc.inner == 1) {
    // Each outer row is a same-shape op between the full operand's row and `small`.
    const int64_t rows_per_task = std::max<int64_t>(1, kChunk / bc.channels);
    const int64_t tasks = (bc.outer + rows_per_task - 1) / rows_per_task;
    const auto task = [&](int64_t t) {
      const int64_t end = std::min(bc.outer, (t + 1) * rows_per_task);
      for (int64_t o = t * rows_per_task; o < end; ++o) {
        const float* row = full + o * bc.channels;
        float* dst = out + o * bc.channels;
        if (bc.small_is_a) {
          f32_vbinary(op, bc.channels, small, row, dst, act, isa);
        } else {
          f32_vbinary(op, bc.channels, row, small, dst, act, isa);
        }
      }
    };
    if (n < kParallelMin) {
      for (int64_t t = 0; t < tasks; ++t) task(t);
    } else {
      parallel_for(pool, tasks, task);
    }
    return;
  }
  // inner > 1: every (outer, channel) block of `inner` elements meets one scalar.
  const int64_t blocks = bc.outer * bc.channels;
  const int64_t blocks_per_task = std::max<int64_t>(1, kChunk / bc.inner);
  const int64_t tasks = (blocks + blocks_per_task - 1) / blocks_per_task;
  const auto task = [&](int64_t t) {
    const int64_t end = std::min(blocks, (t + 1) * blocks_per_task);
    for (int64_t k = t * blocks_per_task; k < end; ++k) {
      f32_vbinaryc(op, bc.inner, full + k * bc.inner, small[k % bc.channels], bc.small_is_a, out + k * bc.inner, act,
                   isa);
    }
  };
  if (n < kParallelMin) {
    for (int64_t t = 0; t < tasks; ++t) task(t);
  } else {
    parallel_for(pool, tasks, task);
  }
}

std::string binary_kernel_name(BinaryOp op, const BinaryBroadcast& bc, Isa isa) {
  std::string name = std::string("f32_v");
  switch (bc.kind) {
    case BroadcastKind::kSame: name += op_name(op); break;
    case BroadcastKind::kScalar: {
      const bool reversed = bc.small_is_a && (op == BinaryOp::kSub || op == BinaryOp::kDiv);
      name += std::string(reversed ? "r" : "") + op_name(op) + "c";
      break;
    }
    case BroadcastKind::kChannel: name += std::string(op_name(op)) + "_channel"; break;
  }
  return name + suffix(isa);
}

// ---- softmax --------------------------------------------------------------------------------

void f32_softmax(int64_t rows, int64_t len, const float* x, float* y, ThreadPool* pool, Isa isa) {
  if (rows <= 0 || len <= 0) return;
  const bool avx2 = use_avx2(isa);
  const auto row = [&](int64_t r) {
    const float* xr = x + r * len;
    float* yr = y + r * len;
    if (avx2) return f32_softmax__avx2(len, xr, yr);
    // The reference's arithmetic, in its order.
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < len; ++i) max = std::max(max, xr[i]);
    float sum = 0;
    for (int64_t i = 0; i < len; ++i) {
      yr[i] = std::exp(xr[i] - max);
      sum += yr[i];
    }
    for (int64_t i = 0; i < len; ++i) yr[i] /= sum;
  };
  const int64_t rows_per_task = std::max<int64_t>(1, kChunk / len);
  const int64_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  const auto task = [&](int64_t t) {
    const int64_t end = std::min(rows, (t + 1) * rows_per_task);
    for (int64_t r = t * rows_per_task; r < end; ++r) row(r);
  };
  if (rows * len < kParallelMin / 4) {  // exp makes softmax worth threading at smaller sizes
    for (int64_t t = 0; t < tasks; ++t) task(t);
  } else {
    parallel_for(pool, tasks, task);
  }
}

std::string softmax_kernel_name(Isa isa) { return "f32_softmax" + suffix(isa); }

}  // namespace xnn::kernels
