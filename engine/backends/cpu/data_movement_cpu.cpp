// Transpose, Slice and ReduceMean-over-trailing-axes on the CPU. The reference kernels
// recompute their plans (and allocate small vectors) on every run; these compute the strided
// copy once at preparation and run it without allocating, in parallel over output rows.
// Concat, Split and friends keep their reference kernels: those already are plain memcpy.
#include <array>
#include <cstring>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/ops/tensor_ops.h"

namespace xnn {
namespace {

constexpr size_t kMaxRank = 8;

// dst (contiguous, dims `shape`) = src[offset + sum_d i_d * strides[d]], with dims that merge
// (contiguous in both) collapsed so the inner copy is as long as possible.
class StridedCopyKernel final : public CpuKernel {
 public:
  StridedCopyKernel(std::string name, size_t elem, Shape shape, int64_t offset, std::vector<int64_t> strides)
      : name_(std::move(name)), elem_(elem), offset_(offset) {
    // Collapse: axis d merges into d+1 when strides[d] == strides[d+1] * shape[d+1].
    Shape s;
    std::vector<int64_t> st;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      if (!s.empty() && st.back() == strides[d] * shape[d]) {
        s.back() *= shape[d];
        st.back() = strides[d];
      } else {
        s.push_back(shape[d]);
        st.push_back(strides[d]);
      }
    }
    if (s.empty()) s = {1}, st = {1};
    rank_ = s.size();
    for (size_t d = 0; d < rank_; ++d) shape_[d] = s[d], strides_[d] = st[d];
    inner_ = shape_[rank_ - 1];
    rows_ = 1;
    for (size_t d = 0; d + 1 < rank_; ++d) rows_ *= shape_[d];
  }
  static bool fits(const Shape& shape) { return shape.size() <= kMaxRank; }

  std::string name() const override { return name_; }

  void run(KernelContext& ctx) override {
    const char* src = static_cast<const char*>(ctx.input(0).raw()) + offset_ * static_cast<int64_t>(elem_);
    char* dst = static_cast<char*>(ctx.output(0).raw());
    const int64_t inner_bytes = inner_ * static_cast<int64_t>(elem_);
    const int64_t chunks = std::min<int64_t>(rows_, 64);
    parallel_for(ctx.pool(), chunks, [&](int64_t c) {
      const int64_t r0 = rows_ * c / chunks, r1 = rows_ * (c + 1) / chunks;
      for (int64_t r = r0; r < r1; ++r) {
        int64_t rem = r, off = 0;
        for (size_t d = rank_ - 1; d-- > 0;) {
          off += (rem % shape_[d]) * strides_[d];
          rem /= shape_[d];
        }
        const char* s = src + off * static_cast<int64_t>(elem_);
        char* o = dst + r * inner_bytes;
        const int64_t step = strides_[rank_ - 1];
        if (step == 1) {
          std::memcpy(o, s, static_cast<size_t>(inner_bytes));
        } else if (elem_ == 4) {
          const float* sf = reinterpret_cast<const float*>(s);
          float* of = reinterpret_cast<float*>(o);
          for (int64_t i = 0; i < inner_; ++i) of[i] = sf[i * step];
        } else {
          for (int64_t i = 0; i < inner_; ++i) std::memcpy(o + i * elem_, s + i * step * elem_, elem_);
        }
      }
    });
  }

 private:
  std::string name_;
  size_t elem_;
  int64_t offset_;
  size_t rank_ = 0;
  std::array<int64_t, kMaxRank> shape_{}, strides_{};
  int64_t inner_ = 1, rows_ = 1;
};

std::unique_ptr<CpuKernel> make_transpose(const CpuKernelPrepareContext& ctx) {
  const TensorInfo& x = ctx.inputs[0];
  if (!StridedCopyKernel::fits(x.shape) || x.shape.empty()) return nullptr;
  const int rank = static_cast<int>(x.shape.size());
  std::vector<int64_t> perm = ctx.node.attr_ints("perm", {});
  if (perm.empty()) {
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  if (static_cast<int>(perm.size()) != rank) return nullptr;
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape);
  Shape out(perm.size());
  std::vector<int64_t> strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + rank : perm[i];
    if (p < 0 || p >= rank) return nullptr;
    out[i] = x.shape[static_cast<size_t>(p)];
    strides[i] = in_strides[static_cast<size_t>(p)];
  }
  if (out != ctx.outputs[0].shape) return nullptr;
  return std::make_unique<StridedCopyKernel>("x" + std::to_string(8 * dtype_size(x.dtype)) + "_transpose_strided",
                                             dtype_size(x.dtype), out, 0, strides);
}

std::unique_ptr<CpuKernel> make_slice(const CpuKernelPrepareContext& ctx) {
  const TensorInfo& x = ctx.inputs[0];
  if (!StridedCopyKernel::fits(x.shape) || x.shape.empty() || ctx.inputs.size() < 3) return nullptr;
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    if (ctx.inputs[i].dtype != DType::kUnknown && !ctx.inputs[i].value) return nullptr;
  }
  const std::vector<int64_t> starts = ctx.inputs[1].value->to_int_vector();
  const size_t n = starts.size();
  std::vector<int64_t> axes, steps(n, 1);
  for (size_t k = 0; k < n; ++k) axes.push_back(static_cast<int64_t>(k));
  if (ctx.inputs.size() > 3 && ctx.inputs[3].value) axes = ctx.inputs[3].value->to_int_vector();
  if (ctx.inputs.size() > 4 && ctx.inputs[4].value) steps = ctx.inputs[4].value->to_int_vector();
  if (axes.size() != n || steps.size() != n) return nullptr;
  const int rank = static_cast<int>(x.shape.size());
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape);
  std::vector<int64_t> strides = in_strides;
  int64_t offset = 0;
  const Shape& out = ctx.outputs[0].shape;
  for (size_t k = 0; k < n; ++k) {
    const int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a < 0 || a >= rank || steps[k] == 0) return nullptr;
    const int64_t dim = x.shape[static_cast<size_t>(a)];
    int64_t start = starts[k] < 0 ? starts[k] + dim : starts[k];
    start = steps[k] > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - 1, 0));
    if (out[static_cast<size_t>(a)] > 0) offset += start * in_strides[static_cast<size_t>(a)];
    strides[static_cast<size_t>(a)] = steps[k] * in_strides[static_cast<size_t>(a)];
  }
  if (shape_numel(out) == 0) return nullptr;
  return std::make_unique<StridedCopyKernel>("x" + std::to_string(8 * dtype_size(x.dtype)) + "_slice_strided",
                                             dtype_size(x.dtype), out, offset, strides);
}

// Mean over the trailing axes of a contiguous f32 tensor (GlobalAveragePool written as
// ReduceMean, as torchvision's ShuffleNet and others export it).
class MeanRowsKernel final : public CpuKernel {
 public:
  MeanRowsKernel(int64_t rows, int64_t cols) : rows_(rows), cols_(cols) {}
  std::string name() const override { return "f32_mean_rows__scalar"; }
  void run(KernelContext& ctx) override {
    const float* x = ctx.input(0).data<float>();
    float* y = ctx.output(0).data<float>();
    parallel_for(ctx.pool(), std::min<int64_t>(rows_, 64), [&](int64_t c) {
      const int64_t chunks = std::min<int64_t>(rows_, 64);
      for (int64_t r = rows_ * c / chunks; r < rows_ * (c + 1) / chunks; ++r) {
        const float* row = x + r * cols_;
        // Four partial sums in double keep the result close to the reference's double sum.
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t i = 0;
        for (; i + 4 <= cols_; i += 4) s0 += row[i], s1 += row[i + 1], s2 += row[i + 2], s3 += row[i + 3];
        for (; i < cols_; ++i) s0 += row[i];
        y[r] = static_cast<float>((s0 + s1 + s2 + s3) / static_cast<double>(cols_));
      }
    });
  }

 private:
  int64_t rows_, cols_;
};

std::unique_ptr<CpuKernel> make_reduce_mean(const CpuKernelPrepareContext& ctx) {
  const TensorInfo& x = ctx.inputs[0];
  if (x.dtype != DType::kF32 || x.shape.empty()) return nullptr;
  std::vector<int64_t> axes;
  if (ctx.inputs.size() > 1 && ctx.inputs[1].dtype != DType::kUnknown) {
    if (!ctx.inputs[1].value) return nullptr;
    axes = ctx.inputs[1].value->to_int_vector();
  } else {
    axes = ctx.node.attr_ints("axes", {});
  }
  if (axes.empty()) return nullptr;  // all axes or noop_with_empty_axes: leave to the reference
  const int rank = static_cast<int>(x.shape.size());
  std::vector<char> reduced(static_cast<size_t>(rank), 0);
  for (int64_t a : axes) {
    const int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank) return nullptr;
    reduced[static_cast<size_t>(n)] = 1;
  }
  // Reduced axes must be exactly a trailing block.
  int first = rank;
  while (first > 0 && reduced[static_cast<size_t>(first - 1)]) --first;
  for (int d = 0; d < first; ++d) {
    if (reduced[static_cast<size_t>(d)]) return nullptr;
  }
  int64_t rows = 1, cols = 1;
  for (int d = 0; d < rank; ++d) (d < first ? rows : cols) *= x.shape[static_cast<size_t>(d)];
  if (cols == 0 || shape_numel(ctx.outputs[0].shape) != rows) return nullptr;
  return std::make_unique<MeanRowsKernel>(rows, cols);
}

}  // namespace

void register_cpu_data_movement_kernels(CpuKernelRegistry& r) {
  r.add("Transpose", "", make_transpose);
  r.add("Slice", "", make_slice);
  r.add("ReduceMean", "", make_reduce_mean);
}

}  // namespace xnn
