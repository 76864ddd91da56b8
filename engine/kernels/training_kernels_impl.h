// Bodies of the training kernels (training_kernels.h), included by training_kernels.cpp
// (baseline build) and training_kernels_avx2.cpp (-mavx2 -mfma) inside a namespace of their
// own. Plain loops the compiler vectorises: independent lanes, no data-dependent branches.
// Sums keep eight explicit lanes, so the two builds add in the same order.
#pragma once
#include <algorithm>
#include <cstdint>

#include "engine/kernels/activation.h"

// The bodies are in an anonymous namespace: each including file gets its own copy, compiled with
// its own flags. As ordinary inline functions, the linker could keep one copy for both, and the
// baseline path might then run AVX2 code.
namespace xnn::kernels::training_impl {
namespace {

inline constexpr int kLanes = 16;

inline void shifted_sums(const float* x, int64_t n, float shift, float* sum, float* sum_sq) {
  float a[kLanes] = {}, b[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - shift;
      a[j] += d;
      b[j] += d * d;
    }
  }
  float s = 0, q = 0;
  for (; i < n; ++i) {
    const float d = x[i] - shift;
    s += d;
    q += d * d;
  }
  for (int j = 0; j < kLanes; ++j) s += a[j], q += b[j];
  *sum = s;
  *sum_sq = q;
}

// The fused activation's value and derivative (training_kernels.h), written out here rather
// than taken from activation.h: an inline function of a shared header compiled into the AVX2
// file could stand in for the baseline copy (see the note on the namespace above).
inline float act_value(float z, const Activation& a) {
  switch (a.kind) {
    case ActKind::kRelu: return z > 0 ? z : 0.0f;
    case ActKind::kClip: return z < a.alpha ? a.alpha : (z > a.beta ? a.beta : z);
    case ActKind::kLeakyRelu: return z >= 0 ? z : z * a.alpha;
    case ActKind::kHardSwish: {
      float t = z / 6.0f + 0.5f;
      t = t < 0 ? 0 : (t > 1 ? 1 : t);
      return z * t;
    }
    case ActKind::kHardSigmoid: {
      const float t = a.alpha * z + a.beta;
      return t < 0 ? 0.0f : (t > 1 ? 1.0f : t);
    }
    default: return z;
  }
}

inline float act_grad(float z, float g, const Activation& a) {
  switch (a.kind) {
    case ActKind::kRelu: return z > 0 ? g : 0.0f;
    case ActKind::kClip: return z > a.alpha && z < a.beta ? g : 0.0f;
    case ActKind::kLeakyRelu: return z > 0 ? g : a.alpha * g;
    case ActKind::kHardSwish: return z < -3.0f ? 0.0f : (z <= 3.0f ? g * (z / 3.0f + 0.5f) : g);
    case ActKind::kHardSigmoid: {
      const float t = a.alpha * z + a.beta;
      return t > 0 && t < 1 ? a.alpha * g : 0.0f;
    }
    default: return g;
  }
}

inline void scale_shift(const float* x, int64_t n, float a, float b, const Activation& act, float* y) {
  if (act.kind == ActKind::kNone) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
  } else if (act.kind == ActKind::kRelu) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i] * a + b;
      y[i] = v > 0.0f ? v : 0.0f;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = act_value(x[i] * a + b, act);
  }
}

// dz of the BatchNorm output: dy through the fused activation's derivative at z = x·a + b.
inline float dz_at(const float* x, const float* dy, int64_t i, float a, float b, const Activation& act) {
  return act.kind == ActKind::kNone ? dy[i] : act_grad(x[i] * a + b, dy[i], act);
}

inline void bn_grad_sums(const float* x, const float* dy, int64_t n, float mean, float a, float b,
                         const Activation& act, float* sum_dz, float* sum_dz_xc) {
  float la[kLanes] = {}, lb[kLanes] = {};
  float s = 0, q = 0;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) {
      const float dz = dz_at(x, dy, i + j, a, b, act);
      la[j] += dz;
      lb[j] += dz * (x[i + j] - mean);
    }
  }
  for (; i < n; ++i) {
    const float dz = dz_at(x, dy, i, a, b, act);
    s += dz;
    q += dz * (x[i] - mean);
  }
  for (int j = 0; j < kLanes; ++j) s += la[j], q += lb[j];
  *sum_dz = s;
  *sum_dz_xc = q;
}

inline void bn_grad_apply(const float* x, const float* dy, int64_t n, float mean, float a, float b,
                          const Activation& act, float k, float mean_dz, float c, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = k * (dz_at(x, dy, i, a, b, act) - mean_dz - (x[i] - mean) * c);
}

inline void relu_grad(const float* y, const float* dy, int64_t n, float* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

inline void vmul(const float* x, const float* m, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * m[i];
}

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

inline void dropout_mask(uint64_t seed, int64_t first, int64_t n, uint64_t threshold, float scale, float* mask) {
  for (int64_t i = 0; i < n; i += 2) {
    const uint64_t h = splitmix64(seed + static_cast<uint64_t>((first + i) / 2));
    mask[i] = (h & 0xFFFFFFFFu) >= threshold ? scale : 0.0f;
    if (i + 1 < n) mask[i + 1] = (h >> 32) >= threshold ? scale : 0.0f;
  }
}

inline void maxpool2x2_argmax_row(const float* r0, const float* r1, int64_t ow, float* out, uint8_t* idx) {
  for (int64_t j = 0; j < ow; ++j) {
    const float a = r0[2 * j], b = r0[2 * j + 1], c = r1[2 * j], d = r1[2 * j + 1];
    const bool tb = b > a;
    float m = tb ? b : a;
    const bool tc = c > m;
    m = tc ? c : m;
    const bool td = d > m;
    m = td ? d : m;
    out[j] = m;
    idx[j] = static_cast<uint8_t>(td ? 3 : tc ? 2 : tb ? 1 : 0);
  }
}

inline void maxpool2x2_grad_row(const float* dy, const uint8_t* idx, int64_t ow, float* d0, float* d1) {
  for (int64_t j = 0; j < ow; ++j) {
    const float g = dy[j];
    const int t = idx[j];
    d0[2 * j] = t == 0 ? g : 0.0f;
    d0[2 * j + 1] = t == 1 ? g : 0.0f;
    d1[2 * j] = t == 2 ? g : 0.0f;
    d1[2 * j + 1] = t == 3 ? g : 0.0f;
  }
}

// ---- depthwise weight gradient ----
// The padded plane: rows of the window rows the outputs read, (oh − 1)·s + k of them. Stride 1:
// each row holds columns [0, (ow8 − 1) + k) of the padded input, ow8 = ow rounded up to 8 (the
// last 8-column block reads past ow; its dy lanes are zero). Stride 2: the even columns, then the
// odd ones, each half `half` floats, so tap j of column ox is half[j % 2][ox + j / 2].
struct DwGradLayout {
  int64_t rows, row_floats, half;
};

inline DwGradLayout dwconv_wgrad_layout(int64_t oh, int64_t ow, int64_t k, int64_t stride) {
  const int64_t ow8 = (ow + 7) / 8 * 8;
  DwGradLayout l;
  l.rows = (oh - 1) * stride + k;
  if (stride == 1) {
    l.half = 0;
    l.row_floats = ow8 + k - 1;
  } else {
    l.half = ow8 + (k - 1) / 2 + 1;
    l.row_floats = 2 * l.half;
  }
  return l;
}

inline void dwconv_wgrad_pad(const float* x, int64_t h, int64_t w, int64_t stride, int64_t pad_t, int64_t pad_l,
                             const DwGradLayout& l, float* xp) {
  for (int64_t r = 0; r < l.rows; ++r) {
    float* row = xp + r * l.row_floats;
    for (int64_t q = 0; q < l.row_floats; ++q) row[q] = 0.0f;
    const int64_t iy = r - pad_t;
    if (iy < 0 || iy >= h) continue;
    const float* src = x + iy * w;
    if (stride == 1) {
      // Padded column c = ix + pad_l, as far as the row goes.
      const int64_t n = std::min(w, l.row_floats - pad_l);
      for (int64_t ix = 0; ix < n; ++ix) row[ix + pad_l] = src[ix];
    } else {
      // Slot p of the even half holds padded column 2p (input column 2p − pad_l), slot p of the
      // odd half column 2p + 1.
      for (int64_t half = 0; half < 2; ++half) {
        float* dst = row + half * l.half;
        const int64_t first = std::max<int64_t>(0, (pad_l - half + 1) / 2);  // 2p + half − pad_l >= 0
        for (int64_t p = first; p < l.half; ++p) {
          const int64_t ix = 2 * p + half - pad_l;
          if (ix >= w) break;
          dst[p] = src[ix];
        }
      }
    }
  }
}

inline void dwconv_wgrad_plane(const float* x, int64_t h, int64_t w, const float* dy, int64_t oh, int64_t ow,
                               int64_t k, int64_t stride, int64_t pad_t, int64_t pad_l, float* scratch, float* acc) {
  const DwGradLayout l = dwconv_wgrad_layout(oh, ow, k, stride);
  dwconv_wgrad_pad(x, h, w, stride, pad_t, pad_l, l, scratch);
  for (int64_t i = 0; i < k; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      float* lanes = acc + (i * k + j) * 8;
      const int64_t col0 = stride == 1 ? j : (j % 2) * l.half + j / 2;
      for (int64_t oy = 0; oy < oh; ++oy) {
        const float* src = scratch + (oy * stride + i) * l.row_floats + col0;
        const float* g = dy + oy * ow;
        for (int64_t ox = 0; ox < ow; ++ox) lanes[ox % 8] += g[ox] * src[ox];
      }
    }
  }
}

}  // namespace
}  // namespace xnn::kernels::training_impl
