// Int8 depthwise convolution for small planes (7×7, 14×14, 28×28 outputs): the "flat" variant of
// qs8_dwconv (qdepthwise.h: same arguments, same semantics, same bytes), for CPUs with
// AVX512-VNNI and VBMI.
//
// Why: qs8_dwconv's row kernels put 16 outputs of one row in a zmm, copy the padded rows of every
// channel into a buffer first, and set up per channel; on 7×7 planes a row fills 7 of 16 lanes
// and the set-up outweighs the arithmetic (MobileNetV2's 960-channel 7×7 layers ran at ~5
// GMAC/s, slower than our fp32 depthwise). Here a zmm holds 16 *consecutive outputs of the plane
// in raster order*, spanning rows; the input bytes they read are a window of whole input rows of
// at most 127 bytes, loaded straight from the unpadded plane into two zmm (no padded copy), with
// byte 127 set to the input zero point. For every tap quad (the k² taps in row-major order, four
// per quad, weight 0 past the last), one vpermt2b gathers each lane's four input bytes (taps
// outside the image pick byte 127) and one vpdpbusd adds the four products: ceil(k²/4) permutes and
// dot products per 16 outputs, and the output vector is the next 16 bytes of the NCHW output plane.
// The permute indices depend only on the shape: QDwFlatPlan computes them once, at preparation.
// Where every window fits in 63 bytes (7×7 with k 3/5, 14×14 stride 1 with k 3) one register and
// vpermb do (vpermt2b is three uops on Intel, vpermb one).
//
// Fits (qs8_dwconv_flat_plan returns a plan) when every group of 16 consecutive outputs reads
// at most 127 bytes of whole input rows: e.g. 7×7 with k 3/5 (stride 1, or stride 2 from 14×14),
// 14×14 stride 1 with k 3/5, 28×28 stride 1 with k 3; not 14×14 stride 2 from 28×28.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/kernels/depthwise.h"
#include "engine/kernels/requantize.h"

namespace xnn::kernels {

struct QDwFlatPlan {
  DepthwiseParams shape;
  int64_t vectors = 0;  // ceil(out_h·out_w / 16)
  int quads = 0;        // ceil(k² / 4)
  // Every vector's window fits in 63 bytes: one register and vpermb (one uop), byte 63 the zero
  // point; else two registers and vpermt2b (three uops on Intel), byte 127.
  bool one_register = false;
  // Per vector: the window's first byte in the input plane, how many of its 128 bytes lie inside
  // the plane (the rest load as 0 and are never picked), and how many of its 16 outputs exist.
  std::vector<int64_t> window;
  std::vector<int32_t> window_bytes, outputs;
  // Per vector and quad, 64 permute indices: byte 4i + j = the window byte of tap 4q + j of
  // output 16v + i, or the zero point's byte outside the image or past the last tap.
  std::vector<uint8_t> index;
};

// The plan for this shape, or nullopt where a group of 16 outputs reads more than 127 bytes
// (or the kernel is not k×k with k <= 7, stride 1 or 2, or the shape is empty).
std::optional<QDwFlatPlan> qs8_dwconv_flat_plan(const DepthwiseParams& p);

// Whether the plan beats qs8_dwconv's row kernels: output rows narrower than 16, whose zmm the
// row kernels leave partly empty. Measured (one thread, Sapphire Rapids, rows / flat time):
// 960×7² k3 4.4×, 672×7² k5 2.9×, 576×14² k3 1.7×, 480×14² k5 1.4×, 14²→7² stride 2 3.0-3.4×;
// 192×28² k3 0.94× (rows of 28 fill the row kernel's lanes well enough).
bool qs8_dwconv_flat_pays(const QDwFlatPlan& plan);

// Whether the flat kernel runs here (AVX512-VNNI and VBMI, unless XNN_ISA caps them); the same
// condition as qs8_dwconv_vnni_enabled().
bool qs8_dwconv_flat_enabled();

// qs8_dwconv over the plan's shape (only when qs8_dwconv_flat_enabled()).
void qs8_dwconv_flat(const QDwFlatPlan& plan, const uint8_t* input, uint8_t x_zero_point, const int8_t* weights,
                     const int32_t* bias, const QRequant& rq, uint8_t* output, ThreadPool* pool);

// "qs8_dwconv3x3s1_flat__avx512vnni", ...
std::string qs8_dwconv_flat_kernel_name(const QDwFlatPlan& plan);

namespace internal {
// Channels [c0, c1) (qdepthwise_flat_avx512vbmi.cpp).
void qs8_dwconv_flat_channels__avx512vnni(const QDwFlatPlan& plan, int64_t c0, int64_t c1, const uint8_t* input,
                                          uint8_t x_zero_point, const int8_t* weights, const int32_t* bias,
                                          const QRequant& rq, uint8_t* output);
}  // namespace internal

}  // namespace xnn::kernels
