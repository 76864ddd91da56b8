#include "engine/kernels/scratch.h"

#include <cstdlib>
#include <string>

#include "engine/core/error.h"

namespace xnn::kernels {
namespace {
struct ScratchSlot {
  float* data = nullptr;
  size_t floats = 0;
  ~ScratchSlot() { std::free(data); }
};
constexpr int kScratchSlots = 4;
}  // namespace

float* thread_scratch_f32(size_t floats, int slot) {
  XNN_CHECK(slot >= 0 && slot < kScratchSlots, "thread_scratch_f32: bad slot");
  thread_local ScratchSlot slots[kScratchSlots];
  ScratchSlot& s = slots[slot];
  if (s.floats < floats) {
    std::free(s.data);
    const size_t bytes = ((floats + 16) * sizeof(float) + 63) / 64 * 64;
    s.data = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!s.data) {
      s.floats = 0;
      throw Error("out of memory for kernel scratch (" + std::to_string(bytes) + " bytes)");
    }
    s.floats = floats;
  }
  return s.data;
}

}  // namespace xnn::kernels
