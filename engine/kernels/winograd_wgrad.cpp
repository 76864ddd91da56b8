// Weight gradient of a 3×3 stride-1 convolution on Winograd transforms (winograd.h explains the
// algebra): the driver and the scalar output-gradient transforms. The AVX2 transforms are in
// winograd_avx2.cpp beside the forward's; the input transform, the input packing and the G
// matrices are the forward's own.
//
// Per thread, a chunk of images goes through in slices of a few images (about 128 tiles):
//   pack      x → padded channel-interleaved planes (the forward's pack_input), and dy likewise
//             (no padding; zero past the output, so partial edge tiles contribute nothing)
//   transform V[t][ξ][c] = Bᵀ d B per tile (the forward's input transform), E[t][ξ][m] = A dY Aᵀ
//   panels    E_ξ copied into the GEMM micro-kernel's A panels (mr output channels × tiles)
//   gemm      S_ξ[m][c] += Σ_t E_ξ[m][t] · V_ξ[t][c] for each ξ, V read in place
//             (f32_gemm_panels: rows of V are whole tiles apart)
// and at the end dW = Gᵀ S G per (m, c), in double, from the sum of the threads' S.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/core/error.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/scratch.h"
#include "engine/kernels/winograd.h"

namespace xnn::kernels {
namespace winograd {
namespace {

// A for F(4,3) and F(6,3) (m → α, e[ξ] = Σ_p Aᵀ[p][ξ] g[p]) on 8 lanes; the AVX2 kernels use the
// same factorisation.
inline void grad_1d_f43(const float* g, int64_t gs, float* e, int64_t es) {
  for (int l = 0; l < 8; ++l) {
    const float g0 = g[l], g1 = g[gs + l], g2 = g[2 * gs + l], g3 = g[3 * gs + l];
    const float a = g0 + g2, b = g1 + g3, c = 4.0f * g2 + g0, d = 8.0f * g3 + (g1 + g1);
    e[l] = g0;
    e[es + l] = a + b;
    e[2 * es + l] = a - b;
    e[3 * es + l] = c + d;
    e[4 * es + l] = c - d;
    e[5 * es + l] = g3;
  }
}

inline void grad_1d_f63(const float* g, int64_t gs, float* e, int64_t es) {
  for (int l = 0; l < 8; ++l) {
    const float g0 = g[l], g1 = g[gs + l], g2 = g[2 * gs + l], g3 = g[3 * gs + l], g4 = g[4 * gs + l];
    const float g5 = g[5 * gs + l];
    const float a = (g0 + g2) + g4, b = (g1 + g3) + g5;
    const float c = 16.0f * g4 + (4.0f * g2 + g0), d = 32.0f * g5 + (8.0f * g3 + (g1 + g1));
    const float f = 0.0625f * g4 + (0.25f * g2 + g0), h = 0.03125f * g5 + (0.125f * g3 + 0.5f * g1);
    e[l] = g0;
    e[es + l] = a + b;
    e[2 * es + l] = a - b;
    e[3 * es + l] = c + d;
    e[4 * es + l] = c - d;
    e[5 * es + l] = f + h;
    e[6 * es + l] = f - h;
    e[7 * es + l] = g5;
  }
}

template <int M>
void grad_tile_scalar(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end, float* e,
                      int64_t e_xi_stride) {
  constexpr int A = M + 2;
  for (int64_t g = g_begin; g < g_end; ++g) {
    const float* s = src + g * group_stride;
    float t[M][A][8];  // horizontal pass, t[row][ξx][lane]
    for (int r = 0; r < M; ++r) {
      if constexpr (M == 4) {
        grad_1d_f43(s + r * wp * 8, 8, &t[r][0][0], 8);
      } else {
        grad_1d_f63(s + r * wp * 8, 8, &t[r][0][0], 8);
      }
    }
    for (int xx = 0; xx < A; ++xx) {
      if constexpr (M == 4) {
        grad_1d_f43(&t[0][xx][0], A * 8, e + xx * e_xi_stride + g * 8, A * e_xi_stride);
      } else {
        grad_1d_f63(&t[0][xx][0], A * 8, e + xx * e_xi_stride + g * 8, A * e_xi_stride);
      }
    }
  }
}

}  // namespace

void f32_winograd_f43_grad__scalar(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                   float* e, int64_t e_xi_stride) {
  grad_tile_scalar<4>(src, wp, group_stride, g_begin, g_end, e, e_xi_stride);
}

void f32_winograd_f63_grad__scalar(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                   float* e, int64_t e_xi_stride) {
  grad_tile_scalar<6>(src, wp, group_stride, g_begin, g_end, e, e_xi_stride);
}

}  // namespace winograd

namespace {

int64_t round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

winograd::GradTransformFn grad_transform(WinogradTile tile, Isa isa) {
  using namespace winograd;
  if (isa == Isa::kAvx2) return tile == WinogradTile::kF43 ? f32_winograd_f43_grad__avx2 : f32_winograd_f63_grad__avx2;
  return tile == WinogradTile::kF43 ? f32_winograd_f43_grad__scalar : f32_winograd_f63_grad__scalar;
}

}  // namespace

void f32_conv3x3s1_winograd_wgrad(WinogradTile tile, int64_t images, int64_t cin, int64_t cout, const float* x,
                                  int64_t h, int64_t w, int64_t pad_t, int64_t pad_l, const float* dy, int64_t oh,
                                  int64_t ow, float* dw, ThreadPool* pool, Isa isa) {
  XNN_CHECK(images >= 0 && cin > 0 && cout > 0 && h >= 0 && w >= 0 && pad_t >= 0 && pad_l >= 0,
            "winograd wgrad: negative size or padding");
  XNN_CHECK(isa_supported(isa), "winograd wgrad: ISA " + std::string(isa_name(isa)) + " not supported by this CPU");
  std::fill(dw, dw + cout * cin * 9, 0.0f);
  if (images == 0 || oh <= 0 || ow <= 0) return;
  const winograd::Kernels& k = winograd::stage_kernels(tile, isa);
  const winograd::GradTransformFn grad = grad_transform(tile, isa);
  const F32GemmKernels family = best_f32_gemm_kernels();
  const GemmPanelShape ps = f32_gemm_panel_shape(isa, family);

  const int64_t m = static_cast<int64_t>(tile), a = m + 2, xi = a * a;
  const int64_t tiles_y = (oh + m - 1) / m, tiles_x = (ow + m - 1) / m, image_tiles = tiles_y * tiles_x;
  // Packed x: the forward's geometry (tiles read α×α windows); packed dy: m×m windows.
  const int64_t groups_c = (cin + 7) / 8, hp = tiles_y * m + 2, wp = tiles_x * m + 2, x_group = hp * wp * 8;
  // With 16-row A panels (the AVX-512 GEMM) the gradient transform writes E straight into them,
  // a pair of 8-channel groups per panel (an odd last group is paired with a zero one).
  const bool direct_panels = ps.mr == 16;
  const int64_t groups_m = direct_panels ? (cout + 15) / 16 * 2 : (cout + 7) / 8;
  const int64_t hq = tiles_y * m, wq = tiles_x * m, dy_group = hq * wq * 8;
  // Per-tile strides with a cache line of slack (as the forward: power-of-two strides alias in L1).
  const int64_t v_xi = groups_c * 8 + 16, v_stride = xi * v_xi + 16;
  const int64_t e_xi = groups_m * 8 + 16, e_stride = xi * e_xi + 16;
  const int64_t mp = round_up(cout, ps.mr);

  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(pool ? pool->threads() : 1, images));
  // About 128 tiles per slice: deep enough GEMMs, V and E of a slice still in L2.
  const int64_t slice = std::clamp<int64_t>(128 / image_tiles, 1, (images + chunks - 1) / chunks);
  const int64_t slice_tiles = slice * image_tiles;
  const size_t s_floats = static_cast<size_t>(xi * cout * cin);
  // Each chunk's S, summed by the calling thread at the end (grows once, then reused).
  // (A thread_local of the calling thread: workers get its address, never name it themselves.)
  thread_local std::vector<float> partial_storage;
  if (partial_storage.size() < static_cast<size_t>(chunks) * s_floats)
    partial_storage.resize(static_cast<size_t>(chunks) * s_floats);
  float* const partial = partial_storage.data();

  parallel_for(pool, chunks, [&](int64_t chunk) {
    const int64_t n0 = images * chunk / chunks, n1 = images * (chunk + 1) / chunks;
    float* s_acc = partial + static_cast<size_t>(chunk) * s_floats;
    // Slot 2: packed x and dy of a slice; slot 3: V, E and the A panels.
    float* px = thread_scratch_f32(static_cast<size_t>(slice * (groups_c * x_group + groups_m * dy_group)), 2);
    float* pdy = px + slice * groups_c * x_group;
    float* v = thread_scratch_f32(static_cast<size_t>(slice_tiles * (v_stride + e_stride) + xi * mp * slice_tiles), 3);
    float* e = v + slice_tiles * v_stride;
    float* apanels = e + slice_tiles * e_stride;
    bool first = true;
    for (int64_t n = n0; n < n1; n += slice) {
      const int64_t cnt = std::min(slice, n1 - n), tiles = cnt * image_tiles;
      for (int64_t i = 0; i < cnt; ++i) {
        for (int64_t g = 0; g < groups_c; ++g)
          k.pack_input(x + (n + i) * cin * h * w, cin, h, w, pad_t, pad_l, g, hp, wp,
                       px + (i * groups_c + g) * x_group);
        for (int64_t g = 0; g < groups_m; ++g)
          k.pack_input(dy + (n + i) * cout * oh * ow, cout, oh, ow, 0, 0, g, hq, wq, pdy + (i * groups_m + g) * dy_group);
      }
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t img = t / image_tiles, it = t % image_tiles, ty = it / tiles_x, tx = it % tiles_x;
        k.input_transform(px + img * groups_c * x_group + (ty * m * wp + tx * m) * 8, wp, x_group, 0, groups_c,
                          v + t * v_stride, v_xi);
        const float* dy_tile = pdy + img * groups_m * dy_group + (ty * m * wq + tx * m) * 8;
        if (direct_panels) {
          // Panel p of E_ξ at apanels + ξ·mp·tiles + p·16·tiles, row t at + 16·t: the transform's
          // ξ stride is mp·tiles and its 8·g offsets cover the panel's two groups.
          for (int64_t p = 0; p < groups_m / 2; ++p)
            grad(dy_tile + 2 * p * dy_group, wq, dy_group, 0, 2, apanels + p * 16 * tiles + t * 16, mp * tiles);
        } else {
          grad(dy_tile, wq, dy_group, 0, groups_m, e + t * e_stride, e_xi);
        }
      }
      for (int64_t q = 0; q < xi; ++q) {
        // A panels of E_ξ: panel p, row t = output channels [p·mr, p·mr + mr) of tile t.
        float* aq = apanels + q * mp * tiles;
        for (int64_t p0 = 0; p0 < mp && !direct_panels; p0 += ps.mr) {
          const int64_t valid = std::clamp<int64_t>(cout - p0, 0, ps.mr);
          float* panel = aq + p0 * tiles;
          for (int64_t t = 0; t < tiles; ++t) {
            const float* src = e + t * e_stride + q * e_xi + p0;
            float* dst = panel + t * ps.mr;
            std::memcpy(dst, src, static_cast<size_t>(valid) * sizeof(float));
            for (int64_t r = valid; r < ps.mr; ++r) dst[r] = 0.0f;
          }
        }
        f32_gemm_panels(cout, cin, tiles, aq, v + q * v_xi, v_stride, ps.nr, s_acc + q * cout * cin, cin, !first, isa,
                        family);
      }
      first = false;
    }
  });

  // dW = Gᵀ S G per (m, c), S summed over the chunks in order.
  const double(*G)[3] = winograd::transform_g(tile);
  parallel_for(pool, cout, [&](int64_t mo) {
    std::vector<double> s(static_cast<size_t>(xi));
    for (int64_t ci = 0; ci < cin; ++ci) {
      for (int64_t q = 0; q < xi; ++q) {
        double acc = 0;
        for (int64_t chunk = 0; chunk < chunks; ++chunk)
          acc += partial[static_cast<size_t>(chunk) * s_floats + static_cast<size_t>((q * cout + mo) * cin + ci)];
        s[static_cast<size_t>(q)] = acc;
      }
      for (int i = 0; i < 3; ++i) {
        double t[8];  // (Gᵀ S)[i][η]
        for (int64_t eta = 0; eta < a; ++eta) {
          double v2 = 0;
          for (int64_t ksi = 0; ksi < a; ++ksi) v2 += G[ksi][i] * s[static_cast<size_t>(ksi * a + eta)];
          t[eta] = v2;
        }
        for (int j = 0; j < 3; ++j) {
          double v2 = 0;
          for (int64_t eta = 0; eta < a; ++eta) v2 += t[eta] * G[eta][j];
          dw[(mo * cin + ci) * 9 + i * 3 + j] = static_cast<float>(v2);
        }
      }
    }
  });
}

}  // namespace xnn::kernels
