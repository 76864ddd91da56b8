#include "engine/core/tensor.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>

namespace xnn {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

namespace {
std::atomic<int64_t> g_buffer_allocations{0};
}  // namespace

int64_t Buffer::allocation_count() { return g_buffer_allocations.load(std::memory_order_relaxed); }

std::shared_ptr<Buffer> Buffer::allocate_uninitialized(size_t bytes) {
  g_buffer_allocations.fetch_add(1, std::memory_order_relaxed);
  // Round up so aligned_alloc's size requirement holds and SIMD tails may over-read safely.
  const size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  void* p = std::aligned_alloc(kTensorAlignment, rounded == 0 ? kTensorAlignment : rounded);
  if (!p) throw Error("out of memory allocating a tensor of " + std::to_string(bytes) + " bytes");
  return std::shared_ptr<Buffer>(new Buffer(p, bytes, nullptr));
}

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  std::shared_ptr<Buffer> b = allocate_uninitialized(bytes);
  const size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  std::memset(b->data(), 0, rounded == 0 ? kTensorAlignment : rounded);
  return b;
}

std::shared_ptr<Buffer> Buffer::wrap(void* data, size_t bytes, std::shared_ptr<void> owner) {
  XNN_CHECK(owner != nullptr, "Buffer::wrap needs an owner that keeps the memory alive");
  return std::shared_ptr<Buffer>(new Buffer(data, bytes, std::move(owner)));
}

Buffer::~Buffer() {
  if (!owner_) std::free(data_);
}

namespace {

// Rejects unknown dtypes, negative dims and sizes whose byte count overflows (before multiplying
// it out).
void check_allocatable(DType dtype, const Shape& shape) {
  XNN_CHECK(dtype_size(dtype) > 0, "tensor with unknown dtype");
  constexpr int64_t kMaxBytes = int64_t{1} << 40;
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("tensor shape " + shape_str(shape) + " has a negative dimension");
    if (d != 0 && elements > kMaxBytes / d) throw Error("tensor shape " + shape_str(shape) + " is too large");
    elements *= d;
  }
  if (elements > kMaxBytes / static_cast<int64_t>(dtype_size(dtype))) {
    throw Error("tensor shape " + shape_str(shape) + " is too large");
  }
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  check_allocatable(dtype_, shape_);
  buffer_ = Buffer::allocate(nbytes());
}

Tensor Tensor::uninitialized(DType dtype, Shape shape) {
  check_allocatable(dtype, shape);
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  return Tensor(dtype, std::move(shape), Buffer::allocate_uninitialized(bytes));
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer, size_t byte_offset)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)), offset_(byte_offset) {
  XNN_CHECK(buffer_ != nullptr, "tensor view on a null buffer");
  for (int64_t d : shape_) {
    if (d < 0) throw Error("tensor shape " + shape_str(shape_) + " has a negative dimension");
  }
  if (offset_ + nbytes() > buffer_->size()) {
    throw Error("tensor view " + shape_str(shape_) + " of " + std::string(dtype_name(dtype_)) +
                " at offset " + std::to_string(offset_) + " exceeds its buffer of " +
                std::to_string(buffer_->size()) + " bytes");
  }
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel()) {
    throw Error("cannot view tensor " + shape_str(shape_) + " as " + shape_str(shape));
  }
  return Tensor(dtype_, std::move(shape), buffer_, offset_);
}

Tensor Tensor::slice_outer(int64_t begin, int64_t end) const {
  XNN_CHECK(rank() > 0 && begin >= 0 && begin <= end && end <= shape_[0],
            "slice_outer out of range for " + shape_str(shape_));
  Shape s = shape_;
  const int64_t row = shape_numel(Shape(shape_.begin() + 1, shape_.end()));
  s[0] = end - begin;
  return Tensor(dtype_, std::move(s), buffer_,
                offset_ + static_cast<size_t>(begin * row) * dtype_size(dtype_));
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

double Tensor::scalar_as_double(int64_t i) const {
  XNN_CHECK(i >= 0 && i < numel(), "scalar_as_double: index out of range");
  return dispatch_dtype(dtype_, [&]<typename T>() -> double {
    if constexpr (std::is_same_v<T, Half>) {
      return static_cast<double>(static_cast<float>(static_cast<const T*>(raw())[i]));
    } else {
      return static_cast<double>(static_cast<const T*>(raw())[i]);
    }
  });
}

int64_t Tensor::scalar_as_int(int64_t i) const {
  XNN_CHECK(i >= 0 && i < numel(), "scalar_as_int: index out of range");
  return dispatch_dtype(dtype_, [&]<typename T>() -> int64_t {
    if constexpr (std::is_same_v<T, Half>) {
      return static_cast<int64_t>(static_cast<float>(static_cast<const T*>(raw())[i]));
    } else {
      return static_cast<int64_t>(static_cast<const T*>(raw())[i]);
    }
  });
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[static_cast<size_t>(i)] = scalar_as_int(i);
  return v;
}

namespace {
template <typename S, typename D>
D convert_one(S s) {
  if constexpr (std::is_same_v<D, bool>) {
    if constexpr (std::is_same_v<S, Half>) return static_cast<float>(s) != 0.0f;
    else return s != S(0);
  } else if constexpr (std::is_same_v<D, Half>) {
    return Half(static_cast<float>(s));
  } else if constexpr (std::is_same_v<S, Half>) {
    return convert_one<float, D>(static_cast<float>(s));
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    // Saturate out-of-range and NaN values instead of invoking UB.
    if (std::isnan(s)) return D(0);
    const double v = std::trunc(static_cast<double>(s));
    if (v <= static_cast<double>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(v);
  } else {
    return static_cast<D>(s);
  }
}
}  // namespace

void convert_tensor(const Tensor& src, Tensor& dst) {
  XNN_CHECK(src.numel() == dst.numel(), "convert_tensor: element counts differ");
  const int64_t n = src.numel();
  dispatch_dtype(src.dtype(), [&]<typename S>() {
    dispatch_dtype(dst.dtype(), [&]<typename D>() {
      const S* s = static_cast<const S*>(src.raw());
      D* d = static_cast<D*>(dst.raw());
      for (int64_t i = 0; i < n; ++i) d[i] = convert_one<S, D>(s[i]);
    });
  });
}

}  // namespace xnn
