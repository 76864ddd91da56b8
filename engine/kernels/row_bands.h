// Helpers of the banded producer-consumer drivers (conv1x1_dwconv.cpp, conv_direct_maxpool.cpp):
// which input rows a band of windowed output rows reads, one contiguous range of output rows per
// thread, and keeping the rows two consecutive bands share.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "engine/core/thread_pool.h"

namespace xnn::kernels::bands {

// About a third of a 1-2 MB L2: a band, the consumer's working rows and the producer's input rows
// stay in it together.
constexpr int64_t kBandBytes = 384 * 1024;

// Input rows [begin, end) (clipped to [0, in_h)) that output rows [out0, out1) of a window of
// `kernel` rows, `stride` apart, `pad_t` rows above the input, read.
struct RowRange {
  int64_t begin, end;
};
inline RowRange window_rows(int64_t out0, int64_t out1, int64_t kernel, int64_t stride, int64_t pad_t, int64_t in_h) {
  return {std::max<int64_t>(0, out0 * stride - pad_t), std::min<int64_t>(in_h, (out1 - 1) * stride - pad_t + kernel)};
}

// Splits output rows [0, rows) into one contiguous range per thread of the pool and calls
// fn(begin, end) for each, each range walking its bands in order on its own thread.
template <typename F>
void for_each_row_range(ThreadPool* pool, int64_t rows, F&& fn) {
  const int64_t parts = std::clamp<int64_t>(pool ? pool->threads() : 1, 1, rows);
  parallel_for(pool, parts, [&](int64_t t) { fn(t * rows / parts, (t + 1) * rows / parts); });
}

// A band buffer of `channels` planes `channel_stride` floats apart, each holding input rows
// [have0, have1) of width `width`, row have0 first. advance_to(need_begin), before a band that
// needs rows from need_begin on: keeps the rows it shares with the last band (moved to each
// plane's front) or drops them all, and returns the first row the buffer lacks (the caller
// computes from there and sets have1).
struct BandBuffer {
  float* data;
  int64_t channels, channel_stride, width;
  int64_t have0 = 0, have1 = 0;

  int64_t advance_to(int64_t need_begin) {
    if (need_begin >= have1 || need_begin < have0) {
      have0 = have1 = need_begin;  // nothing to keep
    } else if (need_begin > have0) {
      const int64_t keep = (have1 - need_begin) * width, from = (need_begin - have0) * width;
      for (int64_t c = 0; c < channels; ++c) {
        std::memmove(data + c * channel_stride, data + c * channel_stride + from,
                     static_cast<size_t>(keep) * sizeof(float));
      }
      have0 = need_begin;
    }
    return have1;
  }
};

}  // namespace xnn::kernels::bands
