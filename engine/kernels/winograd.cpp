// Winograd F(4,3) / F(6,3) convolution: weight transform, driver (blocking, threading), scalar
// stage micro-kernels and the tile selection rule. The AVX2 stage kernels are in
// winograd_avx2.cpp; layouts and the stage contracts are described in winograd.h.
#include "engine/kernels/winograd.h"

#include <algorithm>
#include <numeric>
#include <cstdlib>
#include <cstring>

#include "engine/core/error.h"
#include "engine/kernels/scratch.h"

namespace xnn::kernels {
namespace winograd {
namespace {

// ---- 1-D transforms, scalar. Each element is 8 lanes (8 channels of one pixel); element i of
// the input is at d + i·ds, element j of the result at w + j·ws. Same factorisation as the AVX2
// kernels (fewer operations than the matrices, and no large intermediate sums). ----

inline void input_1d_f43(const float* d, int64_t ds, float* w, int64_t ws) {
  for (int l = 0; l < 8; ++l) {
    const float d0 = d[l], d1 = d[ds + l], d2 = d[2 * ds + l], d3 = d[3 * ds + l], d4 = d[4 * ds + l];
    const float d5 = d[5 * ds + l];
    const float d42 = d4 - d2, d31 = d3 - d1;
    w[l] = 4.0f * d0 - 5.0f * d2 + d4;
    w[ws + l] = (d3 + d4) - 4.0f * (d1 + d2);
    w[2 * ws + l] = (d4 - d3) + 4.0f * (d1 - d2);
    w[3 * ws + l] = d42 + 2.0f * d31;
    w[4 * ws + l] = d42 - 2.0f * d31;
    w[5 * ws + l] = 4.0f * d1 - 5.0f * d3 + d5;
  }
}

inline void input_1d_f63(const float* d, int64_t ds, float* w, int64_t ws) {
  for (int l = 0; l < 8; ++l) {
    const float d0 = d[l], d1 = d[ds + l], d2 = d[2 * ds + l], d3 = d[3 * ds + l], d4 = d[4 * ds + l];
    const float d5 = d[5 * ds + l], d6 = d[6 * ds + l], d7 = d[7 * ds + l];
    w[l] = (d0 - d6) + 5.25f * (d4 - d2);
    w[7 * ws + l] = (d7 - d1) + 5.25f * (d3 - d5);
    const float t1 = (d2 + d6) - 4.25f * d4, t2 = (d1 + d5) - 4.25f * d3;
    w[ws + l] = t1 + t2;
    w[2 * ws + l] = t1 - t2;
    const float t3 = (d6 + 0.25f * d2) - 1.25f * d4, t4 = (0.5f * d1 + 2.0f * d5) - 2.5f * d3;
    w[3 * ws + l] = t3 + t4;
    w[4 * ws + l] = t3 - t4;
    const float t5 = d6 + 4.0f * (d2 - 1.25f * d4), t6 = (2.0f * d1 + 0.5f * d5) - 2.5f * d3;
    w[5 * ws + l] = t5 + t6;
    w[6 * ws + l] = t5 - t6;
  }
}

inline void output_1d_f43(const float* m, int64_t ms, float* o, int64_t os) {
  for (int l = 0; l < 8; ++l) {
    const float a = m[ms + l] + m[2 * ms + l], b = m[ms + l] - m[2 * ms + l];
    const float c = m[3 * ms + l] + m[4 * ms + l], d = m[3 * ms + l] - m[4 * ms + l];
    o[l] = m[l] + a + c;
    o[os + l] = b + 2.0f * d;
    o[2 * os + l] = a + 4.0f * c;
    o[3 * os + l] = b + 8.0f * d + m[5 * ms + l];
  }
}

inline void output_1d_f63(const float* m, int64_t ms, float* o, int64_t os) {
  for (int l = 0; l < 8; ++l) {
    const float a = m[ms + l] + m[2 * ms + l], b = m[ms + l] - m[2 * ms + l];
    const float c = m[3 * ms + l] + m[4 * ms + l], d = m[3 * ms + l] - m[4 * ms + l];
    const float e = m[5 * ms + l] + m[6 * ms + l], f = m[5 * ms + l] - m[6 * ms + l];
    o[l] = (m[l] + a) + (c + e);
    o[os + l] = b + 2.0f * d + 0.5f * f;
    o[2 * os + l] = a + 4.0f * c + 0.25f * e;
    o[3 * os + l] = b + 8.0f * d + 0.125f * f;
    o[4 * os + l] = a + 16.0f * c + 0.0625f * e;
    o[5 * os + l] = b + 32.0f * d + 0.03125f * f + m[7 * ms + l];
  }
}

template <int M>
inline void input_1d(const float* d, int64_t ds, float* w, int64_t ws) {
  if constexpr (M == 4) {
    input_1d_f43(d, ds, w, ws);
  } else {
    input_1d_f63(d, ds, w, ws);
  }
}

template <int M>
inline void output_1d(const float* m, int64_t ms, float* o, int64_t os) {
  if constexpr (M == 4) {
    output_1d_f43(m, ms, o, os);
  } else {
    output_1d_f63(m, ms, o, os);
  }
}

template <int M>
void input_tile_scalar(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end, float* v,
                       int64_t v_xi_stride) {
  constexpr int A = M + 2;
  for (int64_t g = g_begin; g < g_end; ++g) {
    const float* s = src + g * group_stride;
    float t[A][A][8];  // horizontal pass, t[row][ξx][lane]
    for (int r = 0; r < A; ++r) input_1d<M>(s + r * wp * 8, 8, &t[r][0][0], 8);
    for (int xx = 0; xx < A; ++xx) input_1d<M>(&t[0][xx][0], A * 8, v + xx * v_xi_stride + g * 8, A * v_xi_stride);
  }
}

template <int M>
void output_tile_scalar(const float* m, int64_t m_xi_stride, int64_t co_begin, int64_t co_end, float* output,
                        int64_t oh, int64_t ow, int64_t y0, int64_t x0, const ConvEpilogue& ep) {
  constexpr int A = M + 2;
  const int64_t rows = std::min<int64_t>(M, oh - y0), cols = std::min<int64_t>(M, ow - x0);
  const int64_t plane = oh * ow;
  for (int64_t co = co_begin; co < co_end; co += 8) {
    float s[A][M][8], o[M][M][8];
    for (int xy = 0; xy < A; ++xy) output_1d<M>(m + xy * A * m_xi_stride + co, m_xi_stride, &s[xy][0][0], 8);
    for (int ox = 0; ox < M; ++ox) output_1d<M>(&s[0][ox][0], M * 8, &o[0][ox][0], M * 8);
    const int64_t n = std::min<int64_t>(8, co_end - co);
    for (int64_t l = 0; l < n; ++l) {
      const float bias = ep.bias ? ep.bias[co + l] : 0.0f;
      for (int64_t oy = 0; oy < rows; ++oy) {
        const int64_t off = (co + l) * plane + (y0 + oy) * ow + x0;
        for (int64_t ox = 0; ox < cols; ++ox) {
          float x = o[oy][ox][l] + bias;
          if (ep.residual) x += ep.residual[off + ox];
          output[off + ox] = apply_activation_scalar(x, ep.act);
        }
      }
    }
  }
}

}  // namespace

void f32_winograd_pack_input_c8__scalar(const float* input, int64_t cin, int64_t h, int64_t w, int64_t pad_t,
                                        int64_t pad_l, int64_t group, int64_t hp, int64_t wp, float* dst) {
  const int64_t c0 = group * 8, nc = std::min<int64_t>(8, cin - c0);
  for (int64_t py = 0; py < hp; ++py) {
    float* drow = dst + py * wp * 8;
    const int64_t iy = py - pad_t;
    for (int64_t px = 0; px < wp; ++px) {
      const int64_t ix = px - pad_l;
      const bool inside = iy >= 0 && iy < h && ix >= 0 && ix < w;
      for (int64_t l = 0; l < 8; ++l) drow[px * 8 + l] = inside && l < nc ? input[((c0 + l) * h + iy) * w + ix] : 0.0f;
    }
  }
}

void f32_winograd_f43_input__scalar(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                    float* v, int64_t v_xi_stride) {
  input_tile_scalar<4>(src, wp, group_stride, g_begin, g_end, v, v_xi_stride);
}

void f32_winograd_f63_input__scalar(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                    float* v, int64_t v_xi_stride) {
  input_tile_scalar<6>(src, wp, group_stride, g_begin, g_end, v, v_xi_stride);
}

namespace {

// 4 floats: GCC/Clang generic vectors, lowered to baseline SSE2 (no AVX here). Used where the
// auto-vectoriser produced shuffle-heavy code for the GEMM (plain loops ran at 1/3 the rate).
typedef float f4 __attribute__((vector_size(16)));

inline f4 load4(const float* p) {
  f4 x;
  std::memcpy(&x, p, sizeof(x));
  return x;
}
inline void store4(float* p, f4 x) { std::memcpy(p, &x, sizeof(x)); }

// R rows (tiles) × 16 output channels.
template <int R>
void gemm_rows_scalar(int64_t k, const float* v, int64_t ldv, const float* u, float* c, int64_t ldc, bool accumulate) {
  f4 acc[R][4];
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < 4; ++q) acc[r][q] = accumulate ? load4(c + r * ldc + 4 * q) : f4{0, 0, 0, 0};
  }
  for (int64_t p = 0; p < k; ++p) {
    const f4 u0 = load4(u + p * 16), u1 = load4(u + p * 16 + 4), u2 = load4(u + p * 16 + 8);
    const f4 u3 = load4(u + p * 16 + 12);
    for (int r = 0; r < R; ++r) {
      const float a = v[r * ldv + p];
      const f4 b = {a, a, a, a};
      acc[r][0] += b * u0;
      acc[r][1] += b * u1;
      acc[r][2] += b * u2;
      acc[r][3] += b * u3;
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int q = 0; q < 4; ++q) store4(c + r * ldc + 4 * q, acc[r][q]);
  }
}

}  // namespace

void f32_winograd_gemm_6x16__scalar(int64_t tiles, int64_t k, const float* v, int64_t ldv, const float* u, float* c,
                                    int64_t ldc, bool accumulate) {
  // Two rows at a time: 2×4 accumulators and a 16-wide row of U fill the 16 SSE registers, and
  // each load of U feeds two rows.
  int64_t i = 0;
  for (; i + 2 <= tiles; i += 2) gemm_rows_scalar<2>(k, v + i * ldv, ldv, u, c + i * ldc, ldc, accumulate);
  if (i < tiles) gemm_rows_scalar<1>(k, v + i * ldv, ldv, u, c + i * ldc, ldc, accumulate);
}

namespace {

// G for one column of 3 taps (16 lanes = output channels), as the AVX2 kernel factors it.
template <int M>
void weights_1d(const float* g0, const float* g1, const float* g2, float* u, int64_t us) {
  for (int l = 0; l < 16; ++l) {
    const float a = g0[l], b = g1[l], c = g2[l], t0 = a + c;
    if constexpr (M == 4) {
      const float t1 = a * (1.0f / 24) + c * (1.0f / 6);
      u[l] = a * 0.25f;
      u[us + l] = (t0 + b) * (-1.0f / 6);
      u[2 * us + l] = (t0 - b) * (-1.0f / 6);
      u[3 * us + l] = b * (1.0f / 12) + t1;
      u[4 * us + l] = t1 - b * (1.0f / 12);
      u[5 * us + l] = c;
    } else {
      const float t1 = a * (1.0f / 90) + c * (2.0f / 45), t2 = a * (32.0f / 45) + c * (8.0f / 45);
      u[l] = a;
      u[us + l] = (t0 + b) * (-2.0f / 9);
      u[2 * us + l] = (t0 - b) * (-2.0f / 9);
      u[3 * us + l] = b * (1.0f / 45) + t1;
      u[4 * us + l] = t1 - b * (1.0f / 45);
      u[5 * us + l] = b * (16.0f / 45) + t2;
      u[6 * us + l] = t2 - b * (16.0f / 45);
      u[7 * us + l] = c;
    }
  }
}

template <int M>
void weight_tile_scalar(const float* w, int64_t k, float* u, int64_t u_xi_stride) {
  constexpr int A = M + 2;
  for (int64_t p = 0; p < k; ++p) {
    const float* g = w + p * 144;
    float t[A][3][16];  // G g
    for (int c = 0; c < 3; ++c) weights_1d<M>(g + c * 16, g + (3 + c) * 16, g + (6 + c) * 16, &t[0][c][0], 3 * 16);
    for (int xy = 0; xy < A; ++xy) {
      weights_1d<M>(&t[xy][0][0], &t[xy][1][0], &t[xy][2][0], u + xy * A * u_xi_stride + p * 16, u_xi_stride);
    }
  }
}

}  // namespace

void f32_winograd_f43_weights__scalar(const float* w, int64_t k, float* u, int64_t u_xi_stride) {
  weight_tile_scalar<4>(w, k, u, u_xi_stride);
}

void f32_winograd_f63_weights__scalar(const float* w, int64_t k, float* u, int64_t u_xi_stride) {
  weight_tile_scalar<6>(w, k, u, u_xi_stride);
}

void f32_winograd_f43_output__scalar(const float* m, int64_t m_xi_stride, int64_t co_begin, int64_t co_end,
                                     float* output, int64_t oh, int64_t ow, int64_t y0, int64_t x0,
                                     const ConvEpilogue& ep) {
  output_tile_scalar<4>(m, m_xi_stride, co_begin, co_end, output, oh, ow, y0, x0, ep);
}

void f32_winograd_f63_output__scalar(const float* m, int64_t m_xi_stride, int64_t co_begin, int64_t co_end,
                                     float* output, int64_t oh, int64_t ow, int64_t y0, int64_t x0,
                                     const ConvEpilogue& ep) {
  output_tile_scalar<6>(m, m_xi_stride, co_begin, co_end, output, oh, ow, y0, x0, ep);
}

}  // namespace winograd

namespace winograd {

const Kernels& stage_kernels(WinogradTile tile, Isa isa) {
  static const Kernels f43_scalar{f32_winograd_pack_input_c8__scalar, f32_winograd_f43_input__scalar,
                                  f32_winograd_gemm_6x16__scalar, f32_winograd_f43_output__scalar,
                                  f32_winograd_f43_weights__scalar};
  static const Kernels f63_scalar{f32_winograd_pack_input_c8__scalar, f32_winograd_f63_input__scalar,
                                  f32_winograd_gemm_6x16__scalar, f32_winograd_f63_output__scalar,
                                  f32_winograd_f63_weights__scalar};
  static const Kernels f43_avx2{f32_winograd_pack_input_c8__avx2, f32_winograd_f43_input__avx2,
                                f32_winograd_gemm_6x16__avx2, f32_winograd_f43_output__avx2,
                                f32_winograd_f43_weights__avx2};
  static const Kernels f63_avx2{f32_winograd_pack_input_c8__avx2, f32_winograd_f63_input__avx2,
                                f32_winograd_gemm_6x16__avx2, f32_winograd_f63_output__avx2,
                                f32_winograd_f63_weights__avx2};
  // On AVX-512 CPUs the transforms stay AVX2 and the batched GEMM (most of the work) runs on zmm.
  static const Kernels f43_avx512{f32_winograd_pack_input_c8__avx2, f32_winograd_f43_input__avx2,
                                  f32_winograd_gemm_12x16__avx512, f32_winograd_f43_output__avx2,
                                  f32_winograd_f43_weights__avx2};
  static const Kernels f63_avx512{f32_winograd_pack_input_c8__avx2, f32_winograd_f63_input__avx2,
                                  f32_winograd_gemm_12x16__avx512, f32_winograd_f63_output__avx2,
                                  f32_winograd_f63_weights__avx2};
  if (isa == Isa::kAvx2 && avx512_enabled()) return tile == WinogradTile::kF43 ? f43_avx512 : f63_avx512;
  if (isa == Isa::kAvx2) return tile == WinogradTile::kF43 ? f43_avx2 : f63_avx2;
  return tile == WinogradTile::kF43 ? f43_scalar : f63_scalar;
}

}  // namespace winograd

namespace {

using winograd::Kernels;
using winograd::stage_kernels;

// G (α×3) of the weight transform U = G g Gᵀ, for the same points as the Bᵀ/Aᵀ factorisations.
constexpr double kG43[6][3] = {{1.0 / 4, 0, 0},
                               {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                               {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                               {1.0 / 24, 1.0 / 12, 1.0 / 6},
                               {1.0 / 24, -1.0 / 12, 1.0 / 6},
                               {0, 0, 1}};
constexpr double kG63[8][3] = {{1, 0, 0},
                               {-2.0 / 9, -2.0 / 9, -2.0 / 9},
                               {-2.0 / 9, 2.0 / 9, -2.0 / 9},
                               {1.0 / 90, 1.0 / 45, 2.0 / 45},
                               {1.0 / 90, -1.0 / 45, 2.0 / 45},
                               {32.0 / 45, 16.0 / 45, 8.0 / 45},
                               {32.0 / 45, -16.0 / 45, 8.0 / 45},
                               {0, 0, 1}};

}  // namespace

const double (*winograd::transform_g(WinogradTile tile))[3] { return tile == WinogradTile::kF43 ? kG43 : kG63; }

namespace {

int64_t round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

size_t transformed_weight_bytes(int64_t cout, int64_t cin, WinogradTile tile) {
  const int64_t a = static_cast<int64_t>(tile) + 2;
  return static_cast<size_t>(a * a * round_up(cout, 16) * cin) * sizeof(float);
}

// Per-run geometry. Strides get 16 floats (one cache line) of slack past the channel counts:
// at power-of-two strides the α² rows of a tile (written by the input transform, read by the
// output transform), the 6 tile rows the GEMM reads at once and the α² panels of a weight
// chunk would all map to the same few L1 sets (with 512 channels F(6,3) ran 3× slower).
struct Geometry {
  int64_t m, a, xi;  // tile, α, α²
  int64_t tiles_y, tiles_x, tiles;
  int64_t groups, cin8, cout16;  // input channel groups of 8; padded channel counts
  int64_t hp, wp;                // packed (padded) input rows / columns
  int64_t v_xi, m_xi;            // floats per ξ within a tile's V and M
  int64_t v_stride, m_stride;    // floats per tile in V and in M
  int64_t kc;                    // raw weights: input channels per weight-transform chunk
};

// Number of tile blocks. A block's V and M (α²·(cin + cout) floats per tile) should stay in L2
// (2 MiB per core here, 1 MiB of it for V+M; U and the packed input use the rest), but every
// block streams all of U through the cache once (or, with raw weights, transforms all of it), so
// blocks must not get so small that U dominates: at least 24 tiles with transformed weights, 96
// with raw ones (there V and M live in L3; re-transforming the weights costs more).
int64_t block_count(const Geometry& g, bool raw) {
  constexpr int64_t kBlockBytes = 1 << 20, kMaxTiles = 120;
  const int64_t min_tiles = raw ? 96 : 24;
  const int64_t per_tile = (g.v_stride + g.m_stride) * static_cast<int64_t>(sizeof(float));
  const int64_t t = std::clamp<int64_t>(kBlockBytes / per_tile, min_tiles, std::max(min_tiles, kMaxTiles));
  return (g.tiles + t - 1) / t;
}

}  // namespace

WinogradConv3x3::WinogradConv3x3(int64_t cout, int64_t cin, const float* weights, WinogradTile tile, Isa isa,
                                 WinogradWeights storage, ThreadPool* pool)
    : cout_(cout), cin_(cin), tile_(tile), isa_(isa) {
  XNN_CHECK(cout > 0 && cin > 0, "WinogradConv3x3: channel counts must be positive");
  XNN_CHECK(tile == WinogradTile::kF43 || tile == WinogradTile::kF63, "WinogradConv3x3: tile must be F(4,3) or F(6,3)");
  XNN_CHECK(isa_supported(isa), "WinogradConv3x3: ISA " + std::string(isa_name(isa)) + " not supported by this CPU");
  raw_ = storage == WinogradWeights::kRaw ||
         (storage == WinogradWeights::kAuto && transformed_weight_bytes(cout, cin, tile) > kMaxTransformedWeightBytes);
  const int a = static_cast<int>(tile) + 2;
  const int64_t blocks = round_up(cout, 16) / 16;
  u_floats_ = static_cast<size_t>((raw_ ? 9 : a * a) * blocks * cin * 16);
  const size_t bytes = (u_floats_ * sizeof(float) + 63) / 64 * 64;
  float* u = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!u) throw Error("out of memory for Winograd weights (" + std::to_string(bytes) + " bytes)");
  u_ = std::shared_ptr<float[]>(u, [](float* p) { std::free(p); });
  std::memset(u, 0, bytes);
  if (raw_) {
    // [cout/16][cin][9][16]: what f32_winograd_*_weights reads, 16 output channels per tap.
    for (int64_t co = 0; co < cout; ++co) {
      for (int64_t ci = 0; ci < cin; ++ci) {
        for (int t = 0; t < 9; ++t)
          u[(((co / 16) * cin + ci) * 9 + t) * 16 + co % 16] = weights[(co * cin + ci) * 9 + t];
      }
    }
    return;
  }
  // U[ξ][cout/16][cin][16]: the 16 output channels of one GEMM panel are contiguous per input
  // channel, the layout f32_winograd_gemm_6x16 streams. Computed in double, rounded once.
  const double(*G)[3] = a == 6 ? kG43 : kG63;
  parallel_for(pool, cout, [&](int64_t co) {
    for (int64_t ci = 0; ci < cin; ++ci) {
      const float* g = weights + (co * cin + ci) * 9;
      double gg[8][3];  // G g
      for (int i = 0; i < a; ++i) {
        for (int j = 0; j < 3; ++j) gg[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
      }
      for (int i = 0; i < a; ++i) {
        for (int j = 0; j < a; ++j) {
          const double x = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];
          u[(((i * a + j) * blocks + co / 16) * cin + ci) * 16 + co % 16] = static_cast<float>(x);
        }
      }
    }
  });
}

int64_t WinogradConv3x3::images_per_full_rows(int64_t oh, int64_t ow, int64_t limit) const {
  // GEMM rows of the batched kernel: 12 tiles on zmm, 6 on ymm (scalar: 2).
  const int64_t row = isa_ == Isa::kAvx2 ? (avx512_enabled() ? 12 : 6) : 2;
  const int64_t m = static_cast<int64_t>(tile_);
  const int64_t tiles = ((oh + m - 1) / m) * ((ow + m - 1) / m);
  const int64_t images = row / std::gcd(row, std::max<int64_t>(tiles, 1));
  return std::clamp<int64_t>(images, 1, std::max<int64_t>(limit, 1));
}

std::string WinogradConv3x3::name() const {
  return std::string("f32_conv3x3s1_winograd_") + (tile_ == WinogradTile::kF43 ? "f43" : "f63") + "__" +
         std::string(isa_name(isa_));
}

void WinogradConv3x3::run(const float* input, int64_t h, int64_t w, int64_t pad_t, int64_t pad_l, float* output,
                          int64_t oh, int64_t ow, const ConvEpilogue& ep, ThreadPool* pool) const {
  run_batch(1, input, 0, h, w, pad_t, pad_l, output, 0, oh, ow, ep, pool);
}

void WinogradConv3x3::run_batch(int64_t images, const float* input, int64_t input_stride, int64_t h, int64_t w,
                                int64_t pad_t, int64_t pad_l, float* output, int64_t output_stride, int64_t oh,
                                int64_t ow, const ConvEpilogue& ep, ThreadPool* pool) const {
  XNN_CHECK(h >= 0 && w >= 0 && pad_t >= 0 && pad_l >= 0 && images >= 0, "WinogradConv3x3: negative size or padding");
  XNN_CHECK(images <= 1 || !ep.residual, "WinogradConv3x3: a residual needs one image per run");
  if (oh <= 0 || ow <= 0 || images == 0) return;
  const Kernels& k = stage_kernels(tile_, isa_);
  Geometry g;
  g.m = static_cast<int64_t>(tile_);
  g.a = g.m + 2;
  g.xi = g.a * g.a;
  g.tiles_y = (oh + g.m - 1) / g.m;
  g.tiles_x = (ow + g.m - 1) / g.m;
  const int64_t image_tiles = g.tiles_y * g.tiles_x;
  g.tiles = images * image_tiles;  // tile t is tile t % image_tiles of image t / image_tiles
  g.groups = (cin_ + 7) / 8;
  g.cin8 = g.groups * 8;
  g.cout16 = round_up(cout_, 16);
  g.hp = g.tiles_y * g.m + 2;
  g.wp = g.tiles_x * g.m + 2;
  g.v_xi = g.cin8 + 16;
  g.m_xi = g.cout16 + 16;
  g.v_stride = g.xi * g.v_xi + 16;
  g.m_stride = g.xi * g.m_xi + 16;
  // 256 KiB of transformed weights per chunk (L2): 112 input channels for F(4,3), 64 for F(6,3).
  g.kc = std::min(cin_, std::max<int64_t>(8, (65536 / (g.xi * 16)) / 8 * 8));
  const int64_t group_stride = g.hp * g.wp * 8;
  const int64_t nb = g.cout16 / 16;
  const int64_t uc_xi = g.kc * 16 + 16;
  const int64_t uc_floats = g.xi * uc_xi;
  const float* u = u_.get();

  // Stage 1: the padded, channel-interleaved copy of the input, shared read-only by all tasks.
  const int64_t image_stride = g.groups * group_stride;
  float* packed = thread_scratch_f32(static_cast<size_t>(images * image_stride), 2);
  parallel_for(pool, images * g.groups, [&](int64_t task) {
    const int64_t img = task / g.groups, grp = task % g.groups;
    k.pack_input(input + img * input_stride, cin_, h, w, pad_t, pad_l, grp, g.hp, g.wp,
                 packed + img * image_stride + grp * group_stride);
  });

  auto input_tile = [&](int64_t t, int64_t g0, int64_t g1, float* vt) {
    const int64_t img = t / image_tiles, it = t % image_tiles;
    const float* src = packed + img * image_stride + ((it / g.tiles_x) * g.m * g.wp + (it % g.tiles_x) * g.m) * 8;
    k.input_transform(src, g.wp, group_stride, g0, g1, vt, g.v_xi);
  };
  auto output_tile = [&](const float* mt, int64_t t, int64_t co_begin, int64_t co_end) {
    const int64_t img = t / image_tiles, it = t % image_tiles;
    k.output_transform(mt, g.m_xi, co_begin, co_end, output + img * output_stride, oh, ow, (it / g.tiles_x) * g.m,
                       (it % g.tiles_x) * g.m, ep);
  };
  // Transformed weights: the GEMM of one ξ and one 16-channel output block j, for nt tiles.
  auto gemm_xi = [&](int64_t nt, const float* v, float* mm, int64_t xi, int64_t j) {
    k.gemm(nt, cin_, v + xi * g.v_xi, g.v_stride, u + (xi * nb + j) * cin_ * 16, mm + xi * g.m_xi + j * 16, g.m_stride,
           false);
  };
  // Raw weights: the GEMMs of one output block j for all ξ; U is made a chunk of input channels
  // at a time in uc (L2), and the chunks accumulate in M.
  auto gemm_raw = [&](int64_t nt, const float* v, float* mm, int64_t j, float* uc) {
    for (int64_t c0 = 0; c0 < cin_; c0 += g.kc) {
      const int64_t kc = std::min(g.kc, cin_ - c0);
      k.weight_transform(u + (j * cin_ + c0) * 144, kc, uc, uc_xi);
      for (int64_t xi = 0; xi < g.xi; ++xi) {
        k.gemm(nt, kc, v + xi * g.v_xi + c0, g.v_stride, uc + xi * uc_xi, mm + xi * g.m_xi + j * 16, g.m_stride,
               c0 > 0);
      }
    }
  };

  const int threads = pool ? pool->threads() : 1;
  int64_t blocks = block_count(g, raw_);
  // Too few cache-sized blocks to share, but at least a 6-tile GEMM row per thread: one block per
  // thread all the same. Each then streams all of the transformed weights (L2/L3) but touches
  // only its own tiles; splitting every stage across the threads instead moved each stage's
  // output between the cores' caches and made 2 threads slower than one (SqueezeNet's
  // 32->128 @ 27x27, 49 tiles: 0.33 ms on 1 thread, 0.56 on 2 split by stage, 0.28 by block;
  // 64->256 @ 13x13: 0.38, 0.39, 0.29). Raw weights keep the stage split, whose weight
  // transforms are shared out instead of repeated per block.
  const bool block_per_thread = threads > 1 && !raw_ && blocks < 2 * threads && g.tiles >= 6 * threads;
  if (block_per_thread) blocks = threads;
  if (threads == 1 || blocks >= 2 * threads || block_per_thread) {
    // Enough tiles: each task owns a block of tiles through all stages, in its own scratch. One
    // thread: blocks of whole 6-tile GEMM rows (a 1-row remainder runs the 6×16 kernel at a third
    // of its rate); several: equal shares for the threads.
    blocks = round_up(blocks, threads);
    int64_t t_block = (g.tiles + blocks - 1) / blocks;
    if (threads == 1) t_block = std::min(round_up(t_block, 6), g.tiles);
    blocks = (g.tiles + t_block - 1) / t_block;
    parallel_for(pool, blocks, [&](int64_t b) {
      const int64_t t0 = b * t_block, nt = std::min(t_block, g.tiles - t0);
      float* v =
          thread_scratch_f32(static_cast<size_t>(t_block * (g.v_stride + g.m_stride) + (raw_ ? uc_floats : 0)), 3);
      float* mm = v + t_block * g.v_stride;
      float* uc = mm + t_block * g.m_stride;
      for (int64_t i = 0; i < nt; ++i) input_tile(t0 + i, 0, g.groups, v + i * g.v_stride);
      if (raw_) {
        for (int64_t j = 0; j < nb; ++j) gemm_raw(nt, v, mm, j, uc);
      } else {
        // ξ outer: a U panel (cin × 16) is reused from L1 by every 6-tile row of the block, and
        // V[·][ξ] by every output block.
        for (int64_t xi = 0; xi < g.xi; ++xi) {
          for (int64_t j = 0; j < nb; ++j) gemm_xi(nt, v, mm, xi, j);
        }
      }
      for (int64_t i = 0; i < nt; ++i) output_tile(mm + i * g.m_stride, t0 + i, 0, cout_);
    });
    return;
  }

  // Few tiles (small images): all tiles in one block, each stage split across the threads.
  float* v = thread_scratch_f32(static_cast<size_t>(g.tiles * (g.v_stride + g.m_stride)), 3);
  float* mm = v + g.tiles * g.v_stride;
  const int64_t g_chunks = std::clamp<int64_t>((4 * threads + g.tiles - 1) / g.tiles, 1, g.groups);
  const int64_t g_per = (g.groups + g_chunks - 1) / g_chunks;
  parallel_for(pool, g.tiles * g_chunks, [&](int64_t task) {
    const int64_t t = task / g_chunks, g0 = (task % g_chunks) * g_per, g1 = std::min(g.groups, g0 + g_per);
    if (g0 < g1) input_tile(t, g0, g1, v + t * g.v_stride);
  });
  if (raw_) {
    // Tasks are output-channel blocks (each transforms its own weights once). The packed input
    // is dead now, so slot 2 holds each thread's weight chunk.
    parallel_for(pool, nb, [&](int64_t j) { gemm_raw(g.tiles, v, mm, j, thread_scratch_f32(uc_floats, 2)); });
  } else {
    parallel_for(pool, g.xi * nb, [&](int64_t task) { gemm_xi(g.tiles, v, mm, task / nb, task % nb); });
  }
  const int64_t cgroups = (cout_ + 7) / 8;
  const int64_t c_chunks = std::clamp<int64_t>((4 * threads + g.tiles - 1) / g.tiles, 1, cgroups);
  const int64_t c_per = (cgroups + c_chunks - 1) / c_chunks * 8;
  parallel_for(pool, g.tiles * c_chunks, [&](int64_t task) {
    const int64_t t = task / c_chunks, c0 = (task % c_chunks) * c_per, c1 = std::min(cout_, c0 + c_per);
    if (c0 < c1) output_tile(mm + t * g.m_stride, t, c0, c1);
  });
}

// Selection rule. Measured on one core of this machine (Xeon, Sapphire Rapids class, AVX2+FMA peak
// 82 GFLOP/s, 2 MiB L2, ~20 GB/s from L3 and ~5 GB/s from DRAM per core; shared with other jobs,
// so runs vary by ±20%: best of several runs) with engine/bench/winograd_bench.cpp. Effective
// GFLOP/s (direct-convolution flops / time), pad 1, batch 1, one thread, bias + Relu. "warm": one
// layer in a loop; "cold": caches evicted before each run, as for a layer inside a whole network.
// "im2col" = im2col + the packed f32_gemm.
//
//   cin = cout @ h×w         AVX2 warm             AVX2 cold            scalar warm
//                         F(4,3) F(6,3) im2col  F(4,3) F(6,3) im2col  F(4,3) F(6,3) im2col
//   64 @ 56                 228    225     61     209    154     51      57     60     16
//   128 @ 28                243    248     68     170    212     66      77     76     18
//   256 @ 14 (raw weights)  159    130     72      99    119     69      54     44     18
//   512 @ 7  (raw weights)   86     53     60      67     47     52      31     17     17
//   64 @ 48                 204    240     52     190    227     52
//   128 @ 48                220    268     61     200    239     60
//   64 @ 24                 240    236     60     160    160     53
//   16 @ 56                 133    142     36
//   8 @ 56                   56     65     28
//   4 @ 56                   12     13     22
//
// Error, max |out - ref| / max(1, max |ref|) against a double-precision direct convolution
// (inputs N(0,1), Kaiming-normal weights; DISABLED_ErrorReport in kernels_winograd_test.cpp):
//   F(4,3)  5.4e-6 (64@56)  9.1e-6 (128@28)  9.8e-6 (256@14)  2.0e-5 (512@7)
//   F(6,3)  8.8e-6          1.2e-5           1.8e-5           2.6e-5     (all within 1e-4)
//
// Hence:
//  * fewer than 8 input or output channels: im2col (an 8-channel group is mostly padding and the
//    transforms dominate; at 4 channels im2col wins);
//  * the Winograd-domain work per output, α²·tiles / (oh·ow), counts the partial tiles at the
//    edges. F(6,3) is taken only where it is at least 15% below F(4,3)'s: sizes that split into
//    6×6 tiles (48, 24: 1.78 vs 2.25 multiplies per output; F(6,3) 15-20% faster at 48, even at
//    24 where fixed costs weigh more), not 56 or 28 (2.04 vs 2.25: a tie within the noise above,
//    so F(4,3)'s smaller error and 1.8× smaller weights decide), 14 (2.94 both) or 7 (5.2 vs
//    2.94). And only with transformed weights (U ≤ kMaxTransformedWeightBytes): re-making U per
//    run costs 64/36 of F(4,3)'s;
//  * if even the chosen tile leaves over 4.5 multiplies per output (half of direct's 9: tiny
//    images, mostly padding), im2col: the transforms would eat the rest of the gain;
//  * scalar: F(4,3) (F(6,3) ties at 56 and 28 and is slower below).
// So all of ResNet-18's stride-1 3×3 layers run F(4,3) on AVX2.
//
// With AVX-512 the im2col GEMM runs the zmm 16x16 kernel (its weight panels prefetched), and
// raw-weight layers with at most kMaxTilesForZmmGemmOverRawWinograd tiles go to it instead:
// measured on the Sapphire Rapids VM, one thread, 512 @ 7 (4 tiles, U 36 MiB so raw):
// winograd_bench warm F(4,3) 3.05 ms vs im2col 2.28 ms (cold 3.14 vs 3.36); inside ResNet-18
// (--tune, per-op profile) 3.67 vs 2.73 ms for each of layer4's three stride-1 convolutions.
// 256 @ 14 (16 tiles) stays Winograd there: 1.38 vs 2.03 ms warm.
// Transformed weights on small planes can cost more to stream than F(4,3) saves: at 14×14 each
// multiply saved reads 0.12 bytes of U (36·4 bytes per channel pair over 196 outputs that save
// 6.1 multiplies each), and in a whole network U comes from L3 or DRAM. Above
// kMaxWinogradWeightBytesPerSavedMultiply (0.1: planes of 14×14 and smaller), when U is also
// larger than kMinStreamedWinogradWeightBytes, the zmm im2col GEMM (reading 1/4 of those bytes)
// takes the layer: GoogLeNet's 3×3 layers at 14×14 and 7×7 (U 2.9-7.4 MB) 6.6-6.8 -> 5.6-5.7 ms
// in all (per-op profile, alternating binaries, 1 thread, 2026-12-06). SqueezeNet's 13×13
// layers (U 1.3 and 2.4 MB) went either way with the VM's phase (the model 7-10% faster in
// three A/B runs, those layers 7-20% slower in a later one), so they stay Winograd; 27×27
// (0.03 bytes per saved multiply) and 28×28 stay too (ResNet-18's 128 @ 28 as im2col: the model
// 8% slower).
std::optional<WinogradTile> choose_winograd_tile(int64_t cin, int64_t cout, int64_t oh, int64_t ow, Isa isa) {
  if (cin < 8 || cout < 8 || oh <= 0 || ow <= 0) return std::nullopt;
  auto work = [&](int64_t m) {
    const int64_t a = m + 2;
    return static_cast<double>(a * a * ((oh + m - 1) / m) * ((ow + m - 1) / m)) / static_cast<double>(oh * ow);
  };
  const double w43 = work(4), w63 = work(6);
  const bool f63 = isa == Isa::kAvx2 && w63 <= 0.85 * w43 &&
                   transformed_weight_bytes(cout, cin, WinogradTile::kF63) <= kMaxTransformedWeightBytes;
  if ((f63 ? w63 : w43) > 4.5) return std::nullopt;
  const int64_t tiles43 = ((oh + 3) / 4) * ((ow + 3) / 4);
  // Transformed weights are read from memory once per run, 144·cin·cout bytes, however few the
  // outputs; per multiply that F(4,3) saves over im2col that is 144 / (oh·ow·(9 − w43)) bytes.
  const size_t u43 = transformed_weight_bytes(cout, cin, WinogradTile::kF43);
  if (!f63 && isa == Isa::kAvx2 && avx512_enabled() && u43 <= kMaxTransformedWeightBytes &&
      u43 > kMinStreamedWinogradWeightBytes &&
      144.0 / (static_cast<double>(oh * ow) * (9.0 - w43)) > kMaxWinogradWeightBytesPerSavedMultiply) {
    return std::nullopt;
  }
  if (!f63 && isa == Isa::kAvx2 && avx512_enabled() && tiles43 <= kMaxTilesForZmmGemmOverRawWinograd &&
      transformed_weight_bytes(cout, cin, WinogradTile::kF43) > kMaxTransformedWeightBytes) {
    return std::nullopt;
  }
  return f63 ? WinogradTile::kF63 : WinogradTile::kF43;
}

}  // namespace xnn::kernels
