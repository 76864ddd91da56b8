// AlignedVector<T>: a std::vector whose storage starts on a 64-byte (cache-line) boundary, for
// packed weights that kernels stream with full-width vector loads. A 64-byte zmm load from a
// std::vector (16-byte aligned by operator new) straddles two cache lines three times out of
// four, and each straddling load costs two L1 accesses: the batch-1 sliced sparse GEMV
// (spmv_sliced.h, 784->300 at 80% zeros) ran 1.5x slower from such storage than from aligned.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace xnn {

inline constexpr size_t kCacheLineBytes = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    // aligned_alloc needs a size that is a multiple of the alignment.
    const size_t bytes = (n * sizeof(T) + kCacheLineBytes - 1) / kCacheLineBytes * kCacheLineBytes;
    void* p = std::aligned_alloc(kCacheLineBytes, bytes == 0 ? kCacheLineBytes : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) noexcept { std::free(p); }

  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept { return true; }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace xnn
