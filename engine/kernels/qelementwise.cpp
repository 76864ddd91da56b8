#include "engine/kernels/qelementwise.h"

#include <algorithm>

#include "engine/kernels/qelementwise_internal.h"

namespace xnn::kernels {
namespace {

// Chunks of this many elements per task: large enough that a task outweighs waking a thread.
constexpr int64_t kChunk = 16384;

template <typename F>
void over_chunks(int64_t n, ThreadPool* pool, F&& f) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_for(pool, chunks, [&](int64_t c) { f(c * kChunk, std::min(n, (c + 1) * kChunk)); });
}

// v in [lower, upper] (|v| <= 255) rounded half to even, plus zp: 1.5·2^23 puts the units digit
// at the last mantissa bit, so the add rounds as lrintf does and the subtract is exact.
inline uint8_t round_clamped(float v, float lower, float upper, int32_t zp) {
  constexpr float kMagic = 12582912.0f;
  v = std::min(std::max(v, lower), upper);
  const float r = (v + kMagic) - kMagic;
  return static_cast<uint8_t>(static_cast<int32_t>(r) + zp);
}

}  // namespace

namespace internal {

// The loops over one chunk take every parameter by value, so the compiler sees that the output
// cannot change them and vectorises.
void u8_qlinear_add_chunk__scalar(int64_t n, const uint8_t* a, const uint8_t* b, float ma, float mb, int32_t za,
                                  int32_t zb, int32_t zy, uint8_t* y) {
  const float lower = static_cast<float>(-zy), upper = static_cast<float>(255 - zy);
  for (int64_t i = 0; i < n; ++i) {
    const float pa = ma * static_cast<float>(static_cast<int32_t>(a[i]) - za);
    const float pb = mb * static_cast<float>(static_cast<int32_t>(b[i]) - zb);
    y[i] = round_clamped(pa + pb, lower, upper, zy);
  }
}

void f32_quantize_u8_chunk__scalar(int64_t n, const float* x, float scale, int32_t zp, uint8_t* y) {
  const float lower = static_cast<float>(-zp), upper = static_cast<float>(255 - zp);
  for (int64_t i = 0; i < n; ++i) y[i] = round_clamped(x[i] / scale, lower, upper, zp);
}

}  // namespace internal

void u8_qlinear_add(int64_t n, const uint8_t* a, const uint8_t* b, const QAddParams& p, uint8_t* y, ThreadPool* pool,
                    Isa isa) {
  const auto chunk = isa == Isa::kAvx2 ? internal::u8_qlinear_add_chunk__avx2 : internal::u8_qlinear_add_chunk__scalar;
  over_chunks(n, pool, [&](int64_t begin, int64_t end) {
    chunk(end - begin, a + begin, b + begin, p.a_multiplier, p.b_multiplier, p.a_zero_point, p.b_zero_point,
          p.y_zero_point, y + begin);
  });
}

void f32_quantize_u8(int64_t n, const float* x, float scale, int32_t zero_point, uint8_t* y, ThreadPool* pool,
                     Isa isa) {
  const auto chunk = isa == Isa::kAvx2 ? internal::f32_quantize_u8_chunk__avx2 : internal::f32_quantize_u8_chunk__scalar;
  over_chunks(n, pool, [&](int64_t begin, int64_t end) { chunk(end - begin, x + begin, scale, zero_point, y + begin); });
}

}  // namespace xnn::kernels
