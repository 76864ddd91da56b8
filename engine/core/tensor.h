// Tensor: dtype + shape over a shared, 64-byte aligned buffer. Views (reshape, slicing along
// the outermost axis) share the buffer without copying; a buffer may also wrap memory owned by
// someone else (an mmap'ed .xnn file), kept alive through `owner`.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/core/aligned_vector.h"
#include "engine/core/dtype.h"

namespace xnn {

using Shape = std::vector<int64_t>;

constexpr size_t kTensorAlignment = kCacheLineBytes;  // aligned_vector.h

int64_t shape_numel(const Shape& s);            // product of dims (1 for a scalar)
std::string shape_str(const Shape& s);          // "[1,3,224,224]"

class Buffer {
 public:
  // Zero-initialised, 64-byte aligned storage of `bytes` bytes.
  static std::shared_ptr<Buffer> allocate(size_t bytes);
  // The same without the zeroing, for storage the caller overwrites before reading it (a
  // training plan's activations and gradients, re-planned at every supernet path: zeroing them
  // cost a fifth of a step).
  static std::shared_ptr<Buffer> allocate_uninitialized(size_t bytes);
  // Wraps foreign memory; `owner` keeps it alive (e.g. an mmap of a model file).
  static std::shared_ptr<Buffer> wrap(void* data, size_t bytes, std::shared_ptr<void> owner);

  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  // Buffers allocated by this process so far (tests check a steady-state run allocates none).
  static int64_t allocation_count();
  bool owns_memory() const { return owner_ == nullptr; }

 private:
  Buffer(void* data, size_t size, std::shared_ptr<void> owner)
      : data_(data), size_(size), owner_(std::move(owner)) {}
  void* data_;
  size_t size_;
  std::shared_ptr<void> owner_;  // null: we allocated data_ and free it
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates zero-filled storage.
  Tensor(DType dtype, Shape shape);
  // Allocates storage with unspecified contents (Buffer::allocate_uninitialized).
  static Tensor uninitialized(DType dtype, Shape shape);
  // A view on existing storage (no copy). Checks that the view fits in the buffer.
  Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer, size_t byte_offset = 0);

  template <typename T>
  static Tensor from_vector(const std::vector<T>& v, Shape shape) {
    Tensor t(dtype_of<T>(), std::move(shape));
    XNN_CHECK(static_cast<size_t>(t.numel()) == v.size(), "Tensor::from_vector: size mismatch");
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
    } else if (!v.empty()) {
      std::memcpy(t.raw(), v.data(), v.size() * sizeof(T));
    }
    return t;
  }
  template <typename T>
  static Tensor scalar(T v) { return from_vector<T>({v}, {}); }

  bool defined() const { return buffer_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(static_cast<size_t>(i)); }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return static_cast<char*>(buffer_->data()) + offset_; }
  template <typename T>
  T* data() const {
    if (dtype_of<T>() != dtype_) throw Error("tensor of dtype " + std::string(dtype_name(dtype_)) +
                                             " accessed as " + std::string(dtype_name(dtype_of<T>())));
    return static_cast<T*>(raw());
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  size_t byte_offset() const { return offset_; }

  // Same data, new shape (same element count). No copy.
  Tensor reshaped(Shape shape) const;
  // Rows [begin, end) of the outermost axis. No copy.
  Tensor slice_outer(int64_t begin, int64_t end) const;
  // Deep copy into fresh aligned storage.
  Tensor clone() const;
  // Element i converted to double / int64 (any dtype); for small tensors (shapes, scalars).
  double scalar_as_double(int64_t i = 0) const;
  int64_t scalar_as_int(int64_t i = 0) const;
  // All elements as int64 (for shape-like tensors).
  std::vector<int64_t> to_int_vector() const;

 private:
  DType dtype_ = DType::kUnknown;
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
};

// Copies `src` into `dst`, converting the element type (ONNX Cast semantics for float->int:
// truncation toward zero; bool: x != 0).
void convert_tensor(const Tensor& src, Tensor& dst);

}  // namespace xnn
