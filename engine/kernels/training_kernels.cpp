// Dispatch and the baseline build of the training kernels (bodies in training_kernels_impl.h).
#include "engine/kernels/training_kernels.h"

#include "engine/kernels/training_kernels_impl.h"

namespace xnn::kernels {
namespace impl = training_impl;

void f32_shifted_sums(const float* x, int64_t n, float shift, float* sum, float* sum_sq, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_shifted_sums(x, n, shift, sum, sum_sq);
  impl::shifted_sums(x, n, shift, sum, sum_sq);
}

bool training_fusable(const Activation& act) {
  switch (act.kind) {
    case ActKind::kNone:
    case ActKind::kRelu:
    case ActKind::kClip:
    case ActKind::kLeakyRelu:
    case ActKind::kHardSwish:
    case ActKind::kHardSigmoid: return true;
    default: return false;
  }
}

void f32_scale_shift(const float* x, int64_t n, float a, float b, const Activation& act, float* y, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_scale_shift(x, n, a, b, act, y);
  impl::scale_shift(x, n, a, b, act, y);
}

void f32_bn_grad_sums(const float* x, const float* dy, int64_t n, float mean, float a, float b, const Activation& act,
                      float* sum_dz, float* sum_dz_xc, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_bn_grad_sums(x, dy, n, mean, a, b, act, sum_dz, sum_dz_xc);
  impl::bn_grad_sums(x, dy, n, mean, a, b, act, sum_dz, sum_dz_xc);
}

void f32_bn_grad_apply(const float* x, const float* dy, int64_t n, float mean, float a, float b, const Activation& act,
                       float k, float mean_dz, float c, float* dx, bool stream, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_bn_grad_apply(x, dy, n, mean, a, b, act, k, mean_dz, c, dx, stream);
  impl::bn_grad_apply(x, dy, n, mean, a, b, act, k, mean_dz, c, dx);
}

void f32_relu_grad(const float* y, const float* dy, int64_t n, float* dx, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_relu_grad(y, dy, n, dx);
  impl::relu_grad(y, dy, n, dx);
}

void f32_vmul(const float* x, const float* m, int64_t n, float* y, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_vmul(x, m, n, y);
  impl::vmul(x, m, n, y);
}

void f32_dropout_mask(uint64_t seed, int64_t first, int64_t n, uint64_t threshold, float scale, float* mask, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_dropout_mask(seed, first, n, threshold, scale, mask);
  impl::dropout_mask(seed, first, n, threshold, scale, mask);
}

void f32_maxpool2x2_argmax_row(const float* r0, const float* r1, int64_t ow, float* out, uint8_t* idx, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_maxpool2x2_argmax_row(r0, r1, ow, out, idx);
  impl::maxpool2x2_argmax_row(r0, r1, ow, out, idx);
}

void f32_maxpool2x2_grad_row(const float* dy, const uint8_t* idx, int64_t ow, float* d0, float* d1, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_maxpool2x2_grad_row(dy, idx, ow, d0, d1);
  impl::maxpool2x2_grad_row(dy, idx, ow, d0, d1);
}

int64_t f32_dwconv_wgrad_scratch_floats(int64_t oh, int64_t ow, int64_t k, int64_t stride) {
  const impl::DwGradLayout l = impl::dwconv_wgrad_layout(oh, ow, k, stride);
  return l.rows * l.row_floats + 8;
}

void f32_dwconv_wgrad_plane(const float* x, int64_t h, int64_t w, const float* dy, int64_t oh, int64_t ow, int64_t k,
                            int64_t stride, int64_t pad_t, int64_t pad_l, float* scratch, float* acc, Isa isa) {
  if (isa == Isa::kAvx2) return training_avx2::f32_dwconv_wgrad_plane(x, h, w, dy, oh, ow, k, stride, pad_t, pad_l, scratch, acc);
  impl::dwconv_wgrad_plane(x, h, w, dy, oh, ow, k, stride, pad_t, pad_l, scratch, acc);
}

void f32_dwconv_wgrad_finish(const float* acc, int64_t k, float* dw) {
  for (int64_t t = 0; t < k * k; ++t) {
    float s = 0;
    for (int l = 0; l < 8; ++l) s += acc[t * 8 + l];
    dw[t] = s;
  }
}

}  // namespace xnn::kernels
