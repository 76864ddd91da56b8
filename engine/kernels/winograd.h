// Winograd convolution F(m×m, 3×3) for 3×3, stride 1, dilation 1, groups 1 fp32 NCHW convolutions
// (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016). An output tile of m×m
// pixels is computed from an α×α input tile (α = m + 2) as Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A; summed
// over input channels, the element-wise product becomes α² independent GEMMs, and the
// multiplications per output drop from 9 to α²/m² (F(4,3): 2.25, F(6,3): 1.78).
//
// Interpolation points, as in ncnn and NNPACK: F(4,3) 0, ±1, ±2, ∞; F(6,3) 0, ±1, ±2, ±1/2, ∞.
// Larger tiles trade accuracy for speed: the transform coefficients grow (up to 32 in F(6,3)'s
// Aᵀ), and fp32 rounding with them. Measured on ResNet-18's layers, both tiles stay well within
// the project's 1e-4 budget (worst: F(6,3) 2.6e-5 at 512 channels; figures in winograd.cpp).
//
// Stages of WinogradConv3x3::run (the stage micro-kernels are declared at the bottom):
//   pack      input NCHW → zero-padded, channel-interleaved [cin/8][hp][wp][8]. Every tile then
//             reads whole 8-channel vectors with no edge cases, so the transforms need neither
//             transposes nor bounds checks; the padded copy is one cheap pass over the input.
//   input     per tile: V[tile][ξ][cin] = Bᵀ d B, vectorised over 8 channels.
//   gemm      per ξ: M[tile][ξ][cout] = Σ_cin V[tile][ξ][cin] · U[ξ][cin][cout], a 6×16
//             register-blocked kernel (6 tiles × 16 output channels). U is packed once, in the
//             constructor, in the kernel's panel layout; V is written by the input transform
//             directly in the layout the kernel reads, so nothing is repacked per call (the
//             generic f32_gemm would repack V for every ξ and pads N to its 16-column panels,
//             which wastes 3/4 of the work on small images where only 4–9 tiles exist).
//   output    per tile: Y = Aᵀ m A + bias (+ residual), activation, clipped at the right and
//             bottom edges, vectorised over 8 output channels and transposed to NCHW rows.
//
// Weight storage. U is α²/9 times the size of the weights (F(4,3) 4×, F(6,3) 7.1×), and each U
// element is used once per tile. On deep layers with few tiles (512 channels at 7×7: U = 36 MiB
// for F(4,3), 4 tiles) streaming U from DRAM costs several times the arithmetic, so when U would
// exceed kMaxTransformedWeightBytes the constructor keeps the raw weights (packed
// [cout/16][cin][9][16], no bigger than im2col's) and run() transforms them per block of tiles, a
// chunk of input channels at a time into an L2-resident buffer that the GEMMs consume at once
// (70–120 vector operations per 8 output channels and input channel, instead of reading 4·α²
// bytes per output channel and input channel from DRAM).
//
// Tiles are processed in blocks sized so a block's V and M stay in L2 (block_count in
// winograd.cpp); threads own whole blocks, or, when an image has too few tiles for that, share
// each stage (tiles × channel groups; ξ × output blocks, or output blocks with raw weights;
// tiles × output channel groups). Every output is computed by the same operations in the same
// order whatever the thread count, so results do not depend on it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"
#include "engine/kernels/cpu_features.h"

namespace xnn::kernels {

enum class WinogradTile { kF43 = 4, kF63 = 6 };  // output tile m; alpha = m + 2

// Epilogue for convolutions: out = act(conv + bias[c] + residual[same index as out]).
struct ConvEpilogue {
  const float* bias = nullptr;
  const float* residual = nullptr;
  Activation act;
};

// How WinogradConv3x3 keeps its weights (see "Weight storage" above). kAuto: transformed up to
// kMaxTransformedWeightBytes of U, raw above; the others force one form (tests, benchmarks).
enum class WinogradWeights { kAuto, kTransformed, kRaw };
inline constexpr size_t kMaxTransformedWeightBytes = size_t{8} << 20;
// With AVX-512, a layer that would keep raw weights and has at most this many F(4,3) tiles per
// image runs im2col + the zmm GEMM instead (choose_winograd_tile, measurements in winograd.cpp).
inline constexpr int64_t kMaxTilesForZmmGemmOverRawWinograd = 4;
// With AVX-512, a layer with transformed weights larger than kMinStreamedWinogradWeightBytes whose
// U bytes per multiply F(4,3) saves exceed kMaxWinogradWeightBytesPerSavedMultiply runs im2col +
// the zmm GEMM instead (planes of 14x14 and smaller; measurements in winograd.cpp).
inline constexpr double kMaxWinogradWeightBytesPerSavedMultiply = 0.1;
inline constexpr size_t kMinStreamedWinogradWeightBytes = size_t{5} << 19;  // 2.5 MiB

class WinogradConv3x3 {
 public:
  // weights: [cout][cin][3][3] fp32. Transforms (U = G g Gᵀ, in double) and packs them once here,
  // or, for kRaw storage, only packs them.
  // With a pool the transform is spread over it (training transforms its weights every step).
  WinogradConv3x3(int64_t cout, int64_t cin, const float* weights, WinogradTile tile, Isa isa,
                  WinogradWeights storage = WinogradWeights::kAuto, ThreadPool* pool = nullptr);

  // One image: input [cin][h][w], output [cout][oh][ow] with oh = h + pad_t + pad_b - 2 etc.
  // (the caller gives oh/ow and pad_t/pad_l; the rest of the padding is implied). Thread-safe
  // (const); uses per-thread scratch (slots 2 and 3) so steady state does not allocate.
  void run(const float* input, int64_t h, int64_t w, int64_t pad_t, int64_t pad_l, float* output, int64_t oh,
           int64_t ow, const ConvEpilogue& ep, ThreadPool* pool) const;

  // `images` images at once (input i at input + i·input_stride, output i at output +
  // i·output_stride): their tiles are blocked together, so small images (7×7: 4 tiles each)
  // still fill the GEMM micro-kernel's rows (12 tiles with AVX-512, 6 with AVX2). Each output is
  // computed exactly as run() computes it for its image alone. No residual (it would need a
  // per-image stride).
  void run_batch(int64_t images, const float* input, int64_t input_stride, int64_t h, int64_t w, int64_t pad_t,
                 int64_t pad_l, float* output, int64_t output_stride, int64_t oh, int64_t ow, const ConvEpilogue& ep,
                 ThreadPool* pool) const;
  // Images per run_batch call whose tiles fill whole GEMM rows (at most `limit`).
  int64_t images_per_full_rows(int64_t oh, int64_t ow, int64_t limit) const;

  std::string name() const;  // e.g. "f32_conv3x3s1_winograd_f63__avx2"
  size_t packed_weight_bytes() const { return u_floats_ * sizeof(float); }
  bool raw_weights() const { return raw_; }  // weights transformed per run (deep layers)
  int64_t cout() const { return cout_; }
  int64_t cin() const { return cin_; }
  WinogradTile tile() const { return tile_; }
  Isa isa() const { return isa_; }

 private:
  int64_t cout_, cin_;
  WinogradTile tile_;
  Isa isa_;
  bool raw_ = false;
  size_t u_floats_ = 0;
  std::shared_ptr<float[]> u_;  // U: [α²][cout/16][cin][16]; raw: [cout/16][cin][9][16]; zero past cout
};

// ---- Weight gradient of a 3×3 stride-1 convolution (training), on the same transforms ----
// dw[m][c][i][j] = Σ_n Σ_y dy[n][m][y] · x[n][c][y + (i, j) − pad] for `images` images
// (x [images][cin][h][w], dy [images][cout][oh][ow], dw [cout][cin][3][3], overwritten).
// Differentiating Y = Aᵀ[(G g Gᵀ) ⊙ (Bᵀ d B)]A with respect to g gives, per tile,
//   dW_tile = Gᵀ [ (A dY Aᵀ) ⊙ (Bᵀ d B) ] G,
// and the sum over tiles moves inside: per ξ, S_ξ[m][c] = Σ_tiles E_ξ[m] · V_ξ[c] with
// E = A dY Aᵀ (dY's m×m tile, zero past the output, to α×α) and V = Bᵀ d B (the forward's input
// transform), a GEMM over tiles; then dW = Gᵀ S G once per (m, c), in double. Multiplications per
// output-gradient pixel and (m, c) drop from 9 to α²/m² as in the forward. Images are split into
// one contiguous chunk per thread, each with its own S, summed in chunk order at the end: the
// result depends on the thread count only through that order. Uses per-thread scratch slots 2-3.
void f32_conv3x3s1_winograd_wgrad(WinogradTile tile, int64_t images, int64_t cin, int64_t cout, const float* x,
                                  int64_t h, int64_t w, int64_t pad_t, int64_t pad_l, const float* dy, int64_t oh,
                                  int64_t ow, float* dw, ThreadPool* pool, Isa isa);

// Which tile (if any) pays for this layer on this ISA; std::nullopt = use im2col+GEMM. The
// measurements behind the rule are in the comment above its definition (winograd.cpp).
std::optional<WinogradTile> choose_winograd_tile(int64_t cin, int64_t cout, int64_t oh, int64_t ow, Isa isa);

// Stage micro-kernels (internal to WinogradConv3x3; declared here so the AVX2 ones, compiled
// in winograd_avx2.cpp with -mavx2 -mfma, are reachable from the baseline driver).
namespace winograd {

// Packs input channels [8·group, 8·group + 8) (zero past cin) into dst[hp][wp][8], with
// dst[py][px][l] = input[8·group + l][py - pad_t][px - pad_l] and zero outside the image.
using PackInputFn = void (*)(const float* input, int64_t cin, int64_t h, int64_t w, int64_t pad_t, int64_t pad_l,
                             int64_t group, int64_t hp, int64_t wp, float* dst);
// Input transform of one α×α tile whose top-left corner in packed group 0 is src (rows wp·8
// floats apart, groups group_stride floats apart), for groups [g_begin, g_end):
// v[ξ·v_xi_stride + 8·g + l] = (Bᵀ d B)[ξ] of channel 8·g + l, with ξ = row·α + column.
using InputTransformFn = void (*)(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                  float* v, int64_t v_xi_stride);
// Output-gradient transform of one m×m tile (the weight gradient's E = A dY Aᵀ): src is the
// tile's top-left corner in packed dY (same layout as pack_input's, rows wp·8 floats apart,
// groups group_stride apart, zero past the output), for groups [g_begin, g_end):
// e[ξ·e_xi_stride + 8·g + l] = (A dY Aᵀ)[ξ] of channel 8·g + l.
using GradTransformFn = void (*)(const float* src, int64_t wp, int64_t group_stride, int64_t g_begin, int64_t g_end,
                                 float* e, int64_t e_xi_stride);
// c[i·ldc + j] (+)= Σ_{p<k} v[i·ldv + p] · u[p·16 + j] for i < tiles, j < 16 (one ξ, one block
// of 16 output channels); adds to c when accumulate (a later chunk of input channels).
using GemmFn = void (*)(int64_t tiles, int64_t k, const float* v, int64_t ldv, const float* u, float* c, int64_t ldc,
                        bool accumulate);
// Weight transform of k input channels × 16 output channels: w = raw weights [k][9][16] (taps
// row-major), u[ξ·u_xi_stride + p·16 + j] = (G g Gᵀ)[ξ] of input channel p, output channel j.
using WeightTransformFn = void (*)(const float* w, int64_t k, float* u, int64_t u_xi_stride);
// Output transform of one tile whose Winograd-domain values are m[ξ·m_xi_stride + co], for
// output channels [co_begin, co_end) (co_begin a multiple of 8): writes the tile's outputs at
// rows y0.., columns x0.. of output [cout][oh][ow] (clipped at oh/ow) with the epilogue applied.
using OutputTransformFn = void (*)(const float* m, int64_t m_xi_stride, int64_t co_begin, int64_t co_end, float* output,
                                   int64_t oh, int64_t ow, int64_t y0, int64_t x0, const ConvEpilogue& ep);

struct Kernels {
  PackInputFn pack_input;
  InputTransformFn input_transform;
  GemmFn gemm;
  OutputTransformFn output_transform;
  WeightTransformFn weight_transform;
};
// The stage kernels of a tile size on an ISA, and the weight transform's G (α×3, in double).
const Kernels& stage_kernels(WinogradTile tile, Isa isa);
const double (*transform_g(WinogradTile tile))[3];

void f32_winograd_pack_input_c8__scalar(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                                        int64_t, float*);
void f32_winograd_f43_input__scalar(const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t);
void f32_winograd_f63_input__scalar(const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t);
void f32_winograd_gemm_6x16__scalar(int64_t, int64_t, const float*, int64_t, const float*, float*, int64_t, bool);
void f32_winograd_f43_weights__scalar(const float*, int64_t, float*, int64_t);
void f32_winograd_f63_weights__scalar(const float*, int64_t, float*, int64_t);
void f32_winograd_f43_output__scalar(const float*, int64_t, int64_t, int64_t, float*, int64_t, int64_t, int64_t,
                                     int64_t, const ConvEpilogue&);
void f32_winograd_f63_output__scalar(const float*, int64_t, int64_t, int64_t, float*, int64_t, int64_t, int64_t,
                                     int64_t, const ConvEpilogue&);

void f32_winograd_f43_grad__scalar(const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t);
void f32_winograd_f63_grad__scalar(const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t);
void f32_winograd_f43_grad__avx2(const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t);
void f32_winograd_f63_grad__avx2(const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t);

void f32_winograd_pack_input_c8__avx2(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                                      int64_t, float*);
void f32_winograd_f43_input__avx2(const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t);
void f32_winograd_f63_input__avx2(const float*, int64_t, int64_t, int64_t, int64_t, float*, int64_t);
void f32_winograd_gemm_6x16__avx2(int64_t, int64_t, const float*, int64_t, const float*, float*, int64_t, bool);
// AVX-512 (winograd_avx512.cpp; only when avx512_enabled()): the same GEMM, 12 tiles per zmm tile.
void f32_winograd_gemm_12x16__avx512(int64_t, int64_t, const float*, int64_t, const float*, float*, int64_t, bool);
void f32_winograd_f43_weights__avx2(const float*, int64_t, float*, int64_t);
void f32_winograd_f63_weights__avx2(const float*, int64_t, float*, int64_t);
void f32_winograd_f43_output__avx2(const float*, int64_t, int64_t, int64_t, float*, int64_t, int64_t, int64_t, int64_t,
                                   const ConvEpilogue&);
void f32_winograd_f63_output__avx2(const float*, int64_t, int64_t, int64_t, float*, int64_t, int64_t, int64_t, int64_t,
                                   const ConvEpilogue&);

}  // namespace winograd
}  // namespace xnn::kernels
