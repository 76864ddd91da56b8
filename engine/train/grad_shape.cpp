// Backward of the ops that move data without arithmetic: views (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity), Transpose, Concat, Gather (embedding lookup: a scatter-add) and Dropout
// (whose training forward draws the mask here), constant-mode Pad.
#include <algorithm>
#include <cstring>

#include "engine/kernels/training_kernels.h"
#include "engine/train/autograd.h"

namespace xnn::train {
namespace {

void copy_grad(BackwardContext& c) {
  if (!c.wants(0)) return;
  std::memcpy(c.grad_input(0).raw(), c.grad_output(0).raw(), c.grad_input(0).nbytes());
}

int64_t norm_axis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

// Dropout: keep each element with probability 1-p and scale it by 1/(1-p). The draws for
// elements 2j and 2j+1 are the low and high 32 bits of a 64-bit hash of (step seed, j), so the
// mask does not depend on thread count or timing (and one hash serves two elements).
void dropout_forward(ForwardContext& c) {
  const Tensor& x = *c.inputs[0];
  Tensor& y = *c.outputs[0];
  float ratio = c.node.attr_float("ratio", 0.5f);
  if (c.inputs.size() > 1 && c.inputs[1] && c.inputs[1]->defined()) ratio = static_cast<float>(c.inputs[1]->scalar_as_double());
  const int64_t n = x.numel();
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  Tensor& mask = c.state.slot(0, DType::kF32, x.shape());
  float* m = mask.data<float>();
  if (!c.training || ratio <= 0.0f) {
    std::memcpy(yp, xp, x.nbytes());
    for (int64_t i = 0; i < n; ++i) m[i] = 1.0f;
  } else {
    const float scale = ratio >= 1.0f ? 0.0f : 1.0f / (1.0f - ratio);
    // A 32-bit uniform draw u keeps its element when u >= ratio·2³² (ratio 1 keeps none).
    const uint64_t threshold = static_cast<uint64_t>(static_cast<double>(ratio) * 4294967296.0);
    // Blocks of the batch (even sizes, so pairs never straddle two) on the pool: each element's
    // draw depends only on its index.
    constexpr int64_t kBlock = 1 << 14;
    const kernels::Isa isa = kernels::best_isa();
    parallel_for(c.pool, (n + kBlock - 1) / kBlock, [&](int64_t b) {
      const int64_t begin = b * kBlock, end = std::min(n, begin + kBlock);
      kernels::f32_dropout_mask(c.step_seed, begin, end - begin, threshold, scale, m + begin, isa);
      kernels::f32_vmul(xp + begin, m + begin, end - begin, yp + begin, isa);
    });
  }
  if (c.outputs.size() > 1 && c.outputs[1]) {
    bool* mo = c.outputs[1]->data<bool>();
    for (int64_t i = 0; i < n; ++i) mo[i] = m[i] != 0.0f;
  }
}

void transpose_grad(BackwardContext& c) {
  if (!c.wants(0)) return;
  const Tensor& dy = c.grad_output(0);
  Tensor& dx = c.grad_input(0);
  const int rank = dx.rank();
  std::vector<int64_t> perm = c.node.attr_ints("perm");
  if (perm.empty())
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  // dy[i0..] = x[i_perm]; walk dy in order and scatter into dx.
  std::vector<int64_t> xstride(static_cast<size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) xstride[static_cast<size_t>(d)] = xstride[static_cast<size_t>(d + 1)] * dx.dim(d + 1);
  std::vector<int64_t> step(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) step[static_cast<size_t>(d)] = xstride[static_cast<size_t>(perm[static_cast<size_t>(d)])];
  const float* g = dy.data<float>();
  float* o = dx.data<float>();
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t off = 0;
  const int64_t n = dy.numel();
  for (int64_t i = 0; i < n; ++i) {
    o[off] = g[i];
    for (int d = rank - 1; d >= 0; --d) {
      off += step[static_cast<size_t>(d)];
      if (++idx[static_cast<size_t>(d)] < dy.dim(d)) break;
      off -= step[static_cast<size_t>(d)] * dy.dim(d);
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

void concat_grad(BackwardContext& c) {
  const Tensor& dy = c.grad_output(0);
  const int rank = dy.rank();
  const int64_t axis = norm_axis(c.node.attr_int("axis"), rank);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dy.dim(d);
  for (int d = static_cast<int>(axis) + 1; d < rank; ++d) inner *= dy.dim(d);
  const int64_t total = dy.dim(static_cast<int>(axis));
  const float* g = dy.data<float>();
  int64_t begin = 0;
  for (int i = 0; i < static_cast<int>(c.inputs.size()); ++i) {
    const int64_t len = c.input(i).dim(static_cast<int>(axis));
    if (c.wants(i)) {
      float* dx = c.grad_input(i).data<float>();
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dx + o * len * inner, g + (o * total + begin) * inner, static_cast<size_t>(len * inner) * sizeof(float));
    }
    begin += len;
  }
}

void gather_grad(BackwardContext& c) {
  if (!c.wants(0)) return;
  const Tensor& data = c.input(0);
  const Tensor& indices = c.input(1);
  Tensor& dx = c.grad_input(0);
  const int rank = data.rank();
  const int64_t axis = norm_axis(c.node.attr_int("axis", 0), rank);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= data.dim(d);
  for (int d = static_cast<int>(axis) + 1; d < rank; ++d) inner *= data.dim(d);
  const int64_t len = data.dim(static_cast<int>(axis));
  const int64_t count = indices.numel();
  const float* g = c.grad_output(0).data<float>();
  float* o = dx.data<float>();
  std::memset(o, 0, dx.nbytes());
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t j = 0; j < count; ++j) {
      int64_t k = indices.scalar_as_int(j);
      if (k < 0) k += len;
      float* dst = o + (a * len + k) * inner;
      const float* src = g + (a * count + j) * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
    }
  }
}

// Constant-mode Pad: the gradient of the input is the matching window of the output gradient
// (zero where a negative pad cropped the input away).
void pad_grad(BackwardContext& c) {
  if (!c.wants(0)) return;
  const std::string mode = c.node.attr_string("mode", "constant");
  if (mode != "constant") c.unsupported("Pad mode '" + mode + "' has no backward (only 'constant')");
  const Tensor& x = c.input(0);
  const Tensor& dy = c.grad_output(0);
  const int rank = x.rank();
  std::vector<int64_t> pads = c.input(1).to_int_vector();
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0);
  if (c.has_input(3)) {  // opset 18 axes
    const std::vector<int64_t> axes = c.input(3).to_int_vector();
    for (size_t i = 0; i < axes.size(); ++i) begin[static_cast<size_t>(norm_axis(axes[i], rank))] = pads[i];
  } else {
    for (int d = 0; d < rank; ++d) begin[static_cast<size_t>(d)] = pads[static_cast<size_t>(d)];
  }
  float* dx = c.grad_input(0).data<float>();
  const float* g = dy.data<float>();
  std::vector<int64_t> ystride(static_cast<size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) ystride[static_cast<size_t>(d)] = ystride[static_cast<size_t>(d + 1)] * dy.dim(d + 1);
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t off = 0;
    bool inside = true;
    for (int d = 0; d < rank; ++d) {
      const int64_t yi = idx[static_cast<size_t>(d)] + begin[static_cast<size_t>(d)];
      if (yi < 0 || yi >= dy.dim(d)) inside = false;
      off += yi * ystride[static_cast<size_t>(d)];
    }
    dx[i] = inside ? g[off] : 0.0f;
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < x.dim(d)) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace

void register_shape_grads(GradRegistry& r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) r.add({op, {0}, {}, copy_grad});
  r.add({"Dropout", {0}, dropout_forward, [](BackwardContext& c) {
           if (!c.wants(0)) return;
           const float* m = c.state.saved.at(0).data<float>();
           const float* dy = c.grad_output(0).data<float>();
           float* dx = c.grad_input(0).data<float>();
           kernels::f32_vmul(dy, m, c.grad_input(0).numel(), dx, kernels::best_isa());
         }});
  r.add({"Transpose", {0}, {}, transpose_grad});
  std::vector<int> every_input(64);  // variadic: Concat of up to 64 inputs
  for (int i = 0; i < 64; ++i) every_input[static_cast<size_t>(i)] = i;
  r.add({"Concat", every_input, {}, concat_grad});
  r.add({"Gather", {0}, {}, gather_grad});
  r.add({"Pad", {0}, {}, pad_grad});
}

}  // namespace xnn::train
