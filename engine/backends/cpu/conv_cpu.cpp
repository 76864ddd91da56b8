// Conv and ai.xnn FusedConv (2-D, fp32, NCHW, constant weights) on the CPU.
//
// Algorithm rule (per node, at preparation; --tune replaces it by timing the candidates):
//   1. depthwise (group == C_in == C_out), square 3x3/5x5/7x7 kernel, stride 1 or 2, dilation 1
//        -> f32_dwconv (direct, vectorised along the output row);
//   2. group 1, 1x1 kernel, stride 1, no padding -> GEMM on the input as is
//        (A = weights [C_out x C_in], B = input [C_in x H*W]); on a 1x1 plane without a
//        residual (squeeze-excitation's reduce/expand convs) -> GEMV on the weights as stored:
//        the GEMM would pad N = 1 to a 16-wide panel and pack per call (EfficientNet-B0's 32 SE
//        convs: 1.02 ms through the GEMM at 1 thread);
//   3. group 1, square 3x3/5x5/7x7 kernel, equal strides 1 or 2, dilation 1, and either
//        C_in <= 4 (first layers on grey or RGB images) at stride 1, or at stride 2 with
//        C_out <= 16 or an output plane <= 32x32 (with AVX-512: any, the 224x224 stems), or a
//        5x5/7x7 kernel at stride 1 with
//        C_in <= 16 and an output plane <= 32x32 -> f32_conv_direct. There im2col's K =
//        C_in*k*k is too short, or its columns too few, for the GEMM to amortise packing
//        (measured ratios at f32_conv_direct_pays); on large planes with many output channels
//        the GEMM's wide tiles win again on AVX2 (ResNet's and MobileNetV2's 224x224 stems);
//   4. group 1, 3x3, stride 1, dilation 1, and choose_winograd_tile() says Winograd pays for
//        these channel counts and output size -> Winograd F(4,3) or F(6,3);
//   5. anything else -> im2col + GEMM per group.
// Bias, the residual input Z of FusedConv and its activation are applied in the epilogue of
// every algorithm, so a fused node writes its output once.
// Producer-consumer fusion (fuse_consumer): a 1x1 GEMM conv whose only reader is a depthwise
// conv on the AVX-512 kernels computes both, in bands of rows (kernels/conv1x1_dwconv.h), when
// its output is at least kMinBandedConv1x1Bytes: the expansion and depthwise of an inverted
// bottleneck, whose expanded tensor otherwise goes to memory and back. Likewise a depthwise
// conv whose only reader is a 1x1 conv (the projection, residual included), from
// kMinBandedDwconvBytes of depthwise output; and a direct-convolution stem on the AVX-512 stem
// kernel whose only reader is a max pool (kernels/conv_direct_maxpool.h), from
// kMinBandedStemBytes of stem output.
#include <chrono>
#include <optional>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/backends/cpu/pool_cpu.h"
#include "engine/ops/fused_activation.h"
#include "engine/kernels/conv1x1_dwconv.h"
#include "engine/kernels/conv_direct_maxpool.h"
#include "engine/kernels/depthwise.h"
#include "engine/kernels/direct_conv.h"
#include "engine/kernels/gemm.h"
#include "engine/kernels/gemv.h"
#include "engine/kernels/im2col.h"
#include "engine/kernels/scratch.h"
#include "engine/kernels/winograd.h"
#include "engine/ops/nn_common.h"
#include "engine/ops/op_helpers.h"

namespace xnn {
namespace {

using kernels::Isa;

enum class ConvAlgo { kDepthwise, kGemv1x1, kGemm1x1, kDirect, kWinograd43, kWinograd63, kIm2col };

struct ConvShape {
  int64_t n = 0, cin = 0, h = 0, w = 0, cout = 0, oh = 0, ow = 0, kh = 0, kw = 0, group = 1;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
  bool residual = false;  // FusedConv's Z input
  int64_t cin_g() const { return cin / group; }
  int64_t cout_g() const { return cout / group; }
};

// Smallest 1x1 output banded together with its depthwise reader. Measured one pair at a time
// with warm caches (f32_conv1x1_dwconv vs f32_gemm then f32_dwconv, 1 thread; the VM's phases
// move it): 96x112x112 (4.8 MB) 0.59-0.69x the time in one harness, 0.89-0.91x in
// xnn_kernel_bench's BM_f32_conv1x1_dwconv_* an hour later; 144x56x56 (1.8 MB) 0.97-1.07x,
// 192x28x28 1.02-1.10x (the bands' fixed costs with nothing to save). In MobileNetV2 the pair
// took 0.81x; banding from 1 MB up gained nothing end to end.
constexpr int64_t kMinBandedConv1x1Bytes = int64_t{4} << 20;
// Smallest depthwise output banded together with its 1x1 reader (the projection of an inverted
// bottleneck, 16-32 output channels: bound by reading that output). One pair at a time, warm
// caches, 1 thread (f32_dwconv_conv1x1 vs f32_dwconv then f32_gemm): 144x56x56 (1.8 MB) -> 24
// with residual 0.81-0.83x, 32x112x112 -> 16 0.81-0.82x; 144x28x28 -> 32 0.96-0.99x, 192x28x28
// -> 32 0.99-1.03x, 576x14x14 -> 96 1.05x.
constexpr int64_t kMinBandedDwconvBytes = int64_t{1} << 20;
// Smallest stem output banded together with its max pool reader (SqueezeNet's 64x111x111 and
// ResNet-18's 64x112x112: 3.2 MB, which the pool otherwise reads back from L3).
constexpr int64_t kMinBandedStemBytes = int64_t{1} << 20;

class ConvKernel final : public CpuKernel {
 public:
  ConvKernel(const ConvShape& s, ConvAlgo algo, const Tensor& weights, const float* bias, bool has_residual,
             kernels::Activation act, Isa isa)
      : s_(s), algo_(algo), weights_(weights), bias_(bias), has_residual_(has_residual), act_(act), isa_(isa) {
    const float* w = weights.data<float>();
    switch (algo_) {
      case ConvAlgo::kWinograd43:
      case ConvAlgo::kWinograd63:
        winograd_.emplace(s.cout, s.cin, w,
                          algo_ == ConvAlgo::kWinograd43 ? kernels::WinogradTile::kF43 : kernels::WinogradTile::kF63, isa);
        break;
      case ConvAlgo::kGemm1x1:
      case ConvAlgo::kIm2col: {
        const int64_t k = s.cin_g() * s.kh * s.kw;
        for (int64_t g = 0; g < s.group; ++g) {
          packed_.emplace_back(s.cout_g(), k, kernels::MatrixRef{w + g * s.cout_g() * k, k, 1}, isa);
        }
        break;
      }
      case ConvAlgo::kDepthwise:
      case ConvAlgo::kGemv1x1:
      case ConvAlgo::kDirect: break;
    }
  }

  std::string name() const override {
    if (fused_ && fused_->max_pool) {
      const kernels::Pool2dParams& mp = *fused_->max_pool;
      const auto geometry = [](int64_t kh, int64_t kw, int64_t sh) {
        return std::to_string(kh) + "x" + std::to_string(kw) + "s" + std::to_string(sh);
      };
      return "f32_conv" + geometry(s_.kh, s_.kw, s_.sh) + "_maxpool" + geometry(mp.kernel_h, mp.kernel_w, mp.stride_h) +
             "_bands+" + kernels::conv_direct_kernel_name(direct_params(), isa_) + "+" +
             kernels::maxpool2d_kernel_name(mp, isa_);
    }
    if (fused_ && algo_ == ConvAlgo::kDepthwise) {
      return "f32_" + dw_geometry_name() + "_conv1x1_bands+" + kernels::dwconv_kernel_name(dw_params(), isa_) + "+" +
             kernels::gemm_kernel_name(isa_);
    }
    if (fused_) {
      return "f32_conv1x1_" + fused_->kernel->dw_geometry_name() + "_bands+" + kernels::gemm_kernel_name(isa_) + "+" +
             fused_->kernel->name();
    }
    switch (algo_) {
      case ConvAlgo::kDepthwise: return kernels::dwconv_kernel_name(dw_params(), isa_);
      case ConvAlgo::kDirect: return kernels::conv_direct_kernel_name(direct_params(), isa_);
      case ConvAlgo::kWinograd43:
      case ConvAlgo::kWinograd63: return winograd_->name();
      case ConvAlgo::kGemv1x1: return "f32_conv1x1_" + kernels::gemv_kernel_name(isa_);
      case ConvAlgo::kGemm1x1: return "f32_conv1x1_gemm+" + kernels::gemm_kernel_name(isa_);
      case ConvAlgo::kIm2col: return "f32_conv_im2col+" + kernels::gemm_kernel_name(isa_);
    }
    return "?";
  }

  bool fuse_consumer(CpuKernel& consumer, std::span<const Tensor* const> consumer_inputs,
                     std::span<Tensor* const> consumer_outputs) override {
    if (fused_ || has_residual_ || consumer_outputs.empty() || !consumer_outputs[0]) return false;
    if (auto* pool_reader = dynamic_cast<MaxPool2dKernel*>(&consumer)) {
      return consumer_outputs.size() == 1 && fuse_max_pool(*pool_reader, consumer_outputs[0]);
    }
    auto* reader = dynamic_cast<ConvKernel*>(&consumer);
    if (!reader) return false;
    if (reader->s_.n != s_.n || reader->s_.cin != s_.cout || reader->s_.h != s_.oh || reader->s_.w != s_.ow) return false;
    const int64_t intermediate_bytes = s_.cout * s_.oh * s_.ow * static_cast<int64_t>(sizeof(float));
    if (algo_ == ConvAlgo::kGemm1x1 && s_.group == 1) {
      // The expansion: this 1x1 conv and its depthwise reader.
      if (reader->algo_ != ConvAlgo::kDepthwise || intermediate_bytes < kMinBandedConv1x1Bytes ||
          !kernels::conv1x1_dwconv_supported(packed_[0], reader->dw_params(), isa_)) {
        return false;
      }
    } else if (algo_ == ConvAlgo::kDepthwise) {
      // The projection: this depthwise conv and its group-1 1x1 reader.
      if (reader->algo_ != ConvAlgo::kGemm1x1 || reader->s_.group != 1 || intermediate_bytes < kMinBandedDwconvBytes ||
          !kernels::dwconv_conv1x1_supported(dw_params(), reader->packed_[0], isa_)) {
        return false;
      }
    } else {
      return false;
    }
    const Tensor* residual = reader->has_residual_ && consumer_inputs.size() > 3 ? consumer_inputs[3] : nullptr;
    if (reader->has_residual_ && !residual) return false;
    fused_ = FusedReader{reader, residual, consumer_outputs[0], std::nullopt};
    return true;
  }

  // The stem and the max pool after it (f32_conv_direct_maxpool), per image.
  bool fuse_max_pool(const MaxPool2dKernel& reader, Tensor* output) {
    kernels::Pool2dParams image_pool = reader.params();
    if (algo_ != ConvAlgo::kDirect || image_pool.planes != s_.n * s_.cout) return false;
    image_pool.planes = s_.cout;
    if (s_.cout * s_.oh * s_.ow * static_cast<int64_t>(sizeof(float)) < kMinBandedStemBytes ||
        !kernels::conv_direct_maxpool_supported(direct_params(), image_pool, isa_)) {
      return false;
    }
    fused_ = FusedReader{nullptr, nullptr, output, image_pool};
    return true;
  }

  void run(KernelContext& ctx) override {
    if (fused_) return run_fused(ctx.input(0).data<float>(), ctx.pool());
    const float* x = ctx.input(0).data<float>();
    const float* z = has_residual_ ? ctx.input(3).data<float>() : nullptr;
    float* y = ctx.output(0).data<float>();
    run_raw(x, z, y, ctx.pool());
  }

  // "dwconv3x3s2": a depthwise conv's part of a fused kernel's name.
  std::string dw_geometry_name() const {
    const std::string k = std::to_string(s_.kh);
    return "dwconv" + k + "x" + k + "s" + std::to_string(s_.sh);
  }

  kernels::DirectConvParams direct_params() const {
    return kernels::DirectConvParams{s_.cin, s_.cout, s_.h, s_.w, s_.oh, s_.ow, s_.kh, s_.sh, s_.pt, s_.pl};
  }

  kernels::DepthwiseParams dw_params() const {
    return kernels::DepthwiseParams{s_.cin, s_.h, s_.w, s_.oh, s_.ow, s_.kh, s_.sh, s_.pt, s_.pl};
  }

  // This conv and its fused reader, image by image, in bands of rows; the intermediate is never
  // written.
  void run_fused(const float* x, ThreadPool* pool) const {
    float* y = fused_->output->data<float>();
    if (fused_->max_pool) {
      const kernels::Pool2dParams& mp = *fused_->max_pool;
      for (int64_t b = 0; b < s_.n; ++b) {
        kernels::f32_conv_direct_maxpool(direct_params(), weights_.data<float>(), bias_, act_, mp,
                                         x + b * s_.cin * s_.h * s_.w, y + b * mp.planes * mp.out_h * mp.out_w, pool,
                                         isa_);
      }
      return;
    }
    const ConvKernel& r = *fused_->kernel;
    const int64_t in_image = s_.cin * s_.h * s_.w, out_image = r.s_.cout * r.s_.oh * r.s_.ow;
    const float* z = fused_->residual ? fused_->residual->data<float>() : nullptr;
    for (int64_t b = 0; b < s_.n; ++b) {
      const float* zb = z ? z + b * out_image : nullptr;
      if (algo_ == ConvAlgo::kDepthwise) {
        kernels::f32_dwconv_conv1x1(kernels::DwconvStage{dw_params(), weights_.data<float>(), bias_, nullptr, act_},
                                    kernels::Conv1x1Stage{&r.packed_[0], r.bias_, r.act_, zb}, x + b * in_image,
                                    y + b * out_image, pool);
      } else {
        kernels::f32_conv1x1_dwconv(kernels::Conv1x1Stage{&packed_[0], bias_, act_},
                                    kernels::DwconvStage{r.dw_params(), r.weights_.data<float>(), r.bias_, zb, r.act_},
                                    x + b * in_image, y + b * out_image, pool);
      }
    }
  }

  void run_raw(const float* x, const float* z, float* y, ThreadPool* pool) const {
    const int64_t in_image = s_.cin * s_.h * s_.w, out_plane = s_.oh * s_.ow, out_image = s_.cout * out_plane;
    for (int64_t b = 0; b < s_.n; ++b) {
      const float* xb = x + b * in_image;
      float* yb = y + b * out_image;
      const float* zb = z ? z + b * out_image : nullptr;
      switch (algo_) {
        case ConvAlgo::kDepthwise: {
          kernels::f32_dwconv(dw_params(), xb, weights_.data<float>(), bias_, zb, act_, yb, pool, isa_);
          break;
        }
        case ConvAlgo::kDirect:
          kernels::f32_conv_direct(direct_params(), xb, weights_.data<float>(), bias_, zb, act_, yb, pool, isa_);
          break;
        case ConvAlgo::kWinograd43:
        case ConvAlgo::kWinograd63:
          winograd_->run(xb, s_.h, s_.w, s_.pt, s_.pl, yb, s_.oh, s_.ow, kernels::ConvEpilogue{bias_, zb, act_}, pool);
          break;
        case ConvAlgo::kGemv1x1:
          kernels::f32_gemv(s_.cout, s_.cin, weights_.data<float>(), s_.cin, xb, bias_, act_, yb, pool, isa_);
          break;
        case ConvAlgo::kGemm1x1:
          for (int64_t g = 0; g < s_.group; ++g) {
            gemm(g, kernels::MatrixRef{xb + g * s_.cin_g() * s_.h * s_.w, s_.h * s_.w, 1}, yb, zb, pool);
          }
          break;
        case ConvAlgo::kIm2col:
          for (int64_t g = 0; g < s_.group; ++g) im2col_gemm(g, xb + g * s_.cin_g() * s_.h * s_.w, yb, zb, pool);
          break;
      }
    }
  }

 private:
  void gemm(int64_t g, kernels::MatrixRef b, float* yb, const float* zb, ThreadPool* pool) const {
    const int64_t out_plane = s_.oh * s_.ow, row0 = g * s_.cout_g();
    kernels::GemmEpilogue ep;
    ep.bias = bias_ ? bias_ + row0 : nullptr;
    ep.residual = zb ? zb + row0 * out_plane : nullptr;
    ep.ldr = out_plane;
    ep.act = act_;
    kernels::f32_gemm(packed_[static_cast<size_t>(g)], out_plane, b, yb + row0 * out_plane, out_plane, ep, pool);
  }

  // im2col + GEMM over blocks of output columns: each block's columns [K x nb] are built in
  // this thread's scratch (slot 2), small enough to stay in L2 while the GEMM packs them. With
  // enough blocks, threads take whole blocks (im2col runs in parallel too); otherwise blocks
  // run in turn and the GEMM itself is parallel.
  void im2col_gemm(int64_t g, const float* xg, float* yb, const float* zb, ThreadPool* pool) const {
    const int64_t k = s_.cin_g() * s_.kh * s_.kw, n = s_.oh * s_.ow;
    const int64_t nb = kernels::im2col_block_columns(k, n);
    const int64_t blocks = (n + nb - 1) / nb;
    const int threads = pool ? pool->threads() : 1;
    const bool by_block = blocks >= 2 * threads;
    const kernels::PackedA& a = packed_[static_cast<size_t>(g)];
    // On AVX-512 CPUs the columns are gathered straight into the GEMM's 16-wide B panels (no
    // row-major column matrix, no packing of it per call).
    const bool panels = a.isa() == Isa::kAvx2 && kernels::avx512_enabled() &&
                        kernels::f32_gemm_panel_shape(a.isa(), a.family()).nr == 16;
    auto block = [&](int64_t bi, ThreadPool* gemm_pool) {
      const int64_t c0 = bi * nb, cols = std::min(nb, n - c0);
      float* col = kernels::thread_scratch_f32(static_cast<size_t>(k * (cols + 15) / 16 * 16), 2);
      const int64_t row0 = g * s_.cout_g();
      kernels::GemmEpilogue ep;
      ep.bias = bias_ ? bias_ + row0 : nullptr;
      ep.residual = zb ? zb + row0 * n + c0 : nullptr;
      ep.ldr = n;
      ep.act = act_;
      if (panels) {
        // When the GEMM of this block is split over the pool, so is its gather (whole panels per
        // task); otherwise it would be the block's serial part (ResNet-18's layer3/4 convs have
        // 1-3 blocks).
        const int64_t npanels = (cols + 15) / 16;
        const int64_t tasks = gemm_pool ? std::min<int64_t>(npanels, gemm_pool->threads()) : 1;
        parallel_for(gemm_pool, tasks, [&](int64_t t) {
          const int64_t p0 = t * npanels / tasks, p1 = (t + 1) * npanels / tasks;
          const int64_t q0 = p0 * 16, q1 = std::min(cols, p1 * 16);
          if (q0 < q1) kernels::f32_im2col_panels16__avx512(im2col_geometry(), xg, c0 + q0, q1 - q0, col + p0 * 16 * k);
        });
        kernels::f32_gemm_packed_b(a, cols, col, yb + row0 * n + c0, n, ep, gemm_pool);
      } else {
        im2col_block(xg, c0, cols, col);
        kernels::f32_gemm(a, cols, kernels::MatrixRef{col, cols, 1}, yb + row0 * n + c0, n, ep, gemm_pool);
      }
    };
    if (by_block) {
      parallel_for(pool, blocks, [&](int64_t bi) { block(bi, nullptr); });
    } else {
      for (int64_t bi = 0; bi < blocks; ++bi) block(bi, pool);
    }
  }

  kernels::Im2colGeometry im2col_geometry() const {
    kernels::Im2colGeometry geo;
    geo.channels = s_.cin_g(), geo.in_h = s_.h, geo.in_w = s_.w, geo.out_h = s_.oh, geo.out_w = s_.ow;
    geo.kernel_h = s_.kh, geo.kernel_w = s_.kw, geo.stride_h = s_.sh, geo.stride_w = s_.sw;
    geo.dilation_h = s_.dh, geo.dilation_w = s_.dw, geo.pad_t = s_.pt, geo.pad_l = s_.pl;
    return geo;
  }

  // Rows r of the column matrix for output positions [c0, c0 + cols): input pixel of kernel
  // tap (c, ki, kj) for each output position, 0 in the padding.
  void im2col_block(const float* xg, int64_t c0, int64_t cols, float* col) const {
    const int64_t k = s_.cin_g() * s_.kh * s_.kw;
    for (int64_t r = 0; r < k; ++r) {
      const int64_t c = r / (s_.kh * s_.kw), ki = (r / s_.kw) % s_.kh, kj = r % s_.kw;
      const float* plane = xg + c * s_.h * s_.w;
      float* dst = col + r * cols;
      int64_t p = c0;
      const int64_t end = c0 + cols;
      while (p < end) {
        const int64_t oy = p / s_.ow, ox0 = p % s_.ow;
        const int64_t run = std::min(s_.ow - ox0, end - p);  // positions left in this output row
        const int64_t iy = oy * s_.sh + ki * s_.dh - s_.pt;
        float* d = dst + (p - c0);
        if (iy < 0 || iy >= s_.h) {
          std::fill(d, d + run, 0.0f);
        } else {
          const float* srow = plane + iy * s_.w;
          const int64_t base = kj * s_.dw - s_.pl;  // ix = ox * sw + base
          // Output columns whose input column is inside [0, w).
          const IndexRange valid = valid_range(base + ox0 * s_.sw, s_.sw, s_.w, run);
          std::fill(d, d + valid.begin, 0.0f);
          const float* src = srow + base + (ox0 + valid.begin) * s_.sw;
          if (s_.sw == 1) {
            std::copy(src, src + valid.size(), d + valid.begin);
          } else {
            for (int64_t i = 0; i < valid.size(); ++i) d[valid.begin + i] = src[i * s_.sw];
          }
          std::fill(d + std::max(valid.end, valid.begin), d + run, 0.0f);
        }
        p += run;
      }
    }
  }

  ConvShape s_;
  ConvAlgo algo_;
  Tensor weights_;
  const float* bias_;
  bool has_residual_;
  kernels::Activation act_;
  Isa isa_;
  std::vector<kernels::PackedA> packed_;
  std::optional<kernels::WinogradConv3x3> winograd_;
  // Set by fuse_consumer: the reader this conv computes too, with that node's planned output —
  // its depthwise reader when this is a 1x1 conv, its 1x1 reader when this is a depthwise conv
  // (kernel, and the reader's residual or null), or the max pool after a direct-conv stem
  // (max_pool: its geometry for one image; kernel and residual null).
  struct FusedReader {
    const ConvKernel* kernel;
    const Tensor* residual;
    Tensor* output;
    std::optional<kernels::Pool2dParams> max_pool;
  };
  std::optional<FusedReader> fused_;
};

// Group 1, square kernel and stride the direct kernel supports (any C_in).
bool direct_applies(const ConvShape& s) {
  return s.group == 1 && s.kh == s.kw && s.sh == s.sw && s.dh == 1 && s.dw == 1 &&
         kernels::f32_conv_direct_supported(s.kh, s.sh, 1);
}

// Rule 3 (kernels::f32_conv_direct_pays holds the thresholds and the measurements behind them).
bool direct_pays(const ConvShape& s) {
  return direct_applies(s) && kernels::f32_conv_direct_pays(s.cin, s.cout, s.kh, s.sh, s.oh, s.ow);
}

std::vector<ConvAlgo> candidates(const ConvShape& s, Isa isa) {
  std::vector<ConvAlgo> c;
  const bool depthwise = s.group == s.cin && s.group == s.cout && s.group > 1;
  if (depthwise && s.kh == s.kw && s.sh == s.sw && s.dh == 1 && s.dw == 1 &&
      kernels::f32_dwconv_supported(s.kh, s.sh, 1)) {
    c.push_back(ConvAlgo::kDepthwise);
  }
  if (s.group == 1 && s.kh == 1 && s.kw == 1 && s.sh == 1 && s.sw == 1 && s.pt == 0 && s.pl == 0 && s.pb == 0 &&
      s.pr == 0) {
    if (s.h * s.w == 1 && !s.residual) c.push_back(ConvAlgo::kGemv1x1);
    c.push_back(ConvAlgo::kGemm1x1);
  }
  if (direct_pays(s)) c.push_back(ConvAlgo::kDirect);
  if (s.group == 1 && s.kh == 3 && s.kw == 3 && s.sh == 1 && s.sw == 1 && s.dh == 1 && s.dw == 1) {
    const auto tile = kernels::choose_winograd_tile(s.cin, s.cout, s.oh, s.ow, isa);
    if (tile) c.push_back(*tile == kernels::WinogradTile::kF63 ? ConvAlgo::kWinograd63 : ConvAlgo::kWinograd43);
  }
  c.push_back(ConvAlgo::kIm2col);
  return c;
}

// Every applicable algorithm, for --tune (the rule's pick first).
std::vector<ConvAlgo> tune_candidates(const ConvShape& s, Isa isa) {
  std::vector<ConvAlgo> c = candidates(s, isa);
  if (s.group == 1 && s.kh == 3 && s.kw == 3 && s.sh == 1 && s.sw == 1 && s.dh == 1 && s.dw == 1) {
    for (ConvAlgo a : {ConvAlgo::kWinograd43, ConvAlgo::kWinograd63}) {
      if (std::find(c.begin(), c.end(), a) == c.end()) c.push_back(a);
    }
  }
  // Direct beyond the rule's bounds: a measurement may find it pays for a few more channels.
  if (direct_applies(s) && s.cin <= 32 &&
      std::find(c.begin(), c.end(), ConvAlgo::kDirect) == c.end()) {
    c.push_back(ConvAlgo::kDirect);
  }
  return c;
}

std::unique_ptr<CpuKernel> make_conv_kernel(const CpuKernelPrepareContext& ctx) {
  const Node& n = ctx.node;
  if (ctx.inputs.size() < 2 || ctx.outputs.empty()) return nullptr;
  const TensorInfo& x = ctx.inputs[0];
  const TensorInfo& w = ctx.inputs[1];
  if (x.dtype != DType::kF32 || w.dtype != DType::kF32 || x.shape.size() != 4 || !w.value) return nullptr;
  if (w.shape.size() != 4 || ctx.outputs[0].shape.size() != 4) return nullptr;
  const float* bias = nullptr;
  if (ctx.inputs.size() > 2 && ctx.inputs[2].dtype != DType::kUnknown) {
    if (!ctx.inputs[2].value || ctx.inputs[2].dtype != DType::kF32) return nullptr;
    bias = ctx.inputs[2].value->data<float>();
  }
  const bool has_residual = ctx.inputs.size() > 3 && ctx.inputs[3].dtype != DType::kUnknown;
  if (has_residual && (ctx.inputs[3].dtype != DType::kF32 || ctx.inputs[3].shape != ctx.outputs[0].shape)) {
    return nullptr;
  }
  ConvShape s;
  s.n = x.shape[0], s.cin = x.shape[1], s.h = x.shape[2], s.w = x.shape[3];
  s.cout = w.shape[0], s.kh = w.shape[2], s.kw = w.shape[3];
  s.group = n.attr_int("group", 1);
  s.residual = has_residual;
  if (s.group < 1 || s.cin % s.group || s.cout % s.group || w.shape[1] != s.cin / s.group) return nullptr;
  const WindowGeometry geo = window_geometry(n, {s.h, s.w}, {s.kh, s.kw}, false);
  s.sh = geo.strides[0], s.sw = geo.strides[1], s.dh = geo.dilations[0], s.dw = geo.dilations[1];
  s.pt = geo.pads_begin[0], s.pl = geo.pads_begin[1], s.pb = geo.pads_end[0], s.pr = geo.pads_end[1];
  s.oh = geo.out[0], s.ow = geo.out[1];
  if (s.oh != ctx.outputs[0].shape[2] || s.ow != ctx.outputs[0].shape[3] || s.oh <= 0 || s.ow <= 0) return nullptr;
  const kernels::Activation act = fused_activation(n);
  const Tensor& weights = *w.value;

  if (!ctx.tune) {
    return std::make_unique<ConvKernel>(s, candidates(s, ctx.isa).front(), weights, bias, has_residual, act, ctx.isa);
  }
  // --tune: time each candidate on this shape (random input; 1 warm-up + best of 3).
  std::vector<ConvAlgo> algos = tune_candidates(s, ctx.isa);
  Tensor in(DType::kF32, x.shape), out(DType::kF32, ctx.outputs[0].shape);
  Tensor res = has_residual ? Tensor(DType::kF32, ctx.outputs[0].shape) : Tensor();
  float* xi = in.data<float>();
  for (int64_t i = 0; i < in.numel(); ++i) xi[i] = static_cast<float>((i * 7919) % 17) / 17.0f - 0.5f;
  std::unique_ptr<ConvKernel> best;
  double best_ms = 1e300;
  for (ConvAlgo a : algos) {
    auto k = std::make_unique<ConvKernel>(s, a, weights, bias, has_residual, act, ctx.isa);
    double t_best = 1e300;
    for (int rep = 0; rep < 4; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      k->run_raw(xi, has_residual ? res.data<float>() : nullptr, out.data<float>(), ctx.pool);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (rep > 0) t_best = std::min(t_best, ms);
    }
    if (t_best < best_ms) best_ms = t_best, best = std::move(k);
  }
  return best;
}

}  // namespace

void register_cpu_conv_kernels(CpuKernelRegistry& r) {
  r.add("Conv", "", make_conv_kernel);
  r.add("FusedConv", "ai.xnn", make_conv_kernel);
}

}  // namespace xnn
