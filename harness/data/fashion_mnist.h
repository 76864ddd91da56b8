// Datasets for accuracy evaluation: Fashion-MNIST read from its IDX files (gzip'ed as
// distributed, or plain), and turning a range of samples into a model input tensor.
//
// IDX format (big-endian): u32 magic (0x00000803 for u8 images [count,rows,cols],
// 0x00000801 for u8 labels [count]), one u32 per dimension, then the data.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace xnn::data {

struct Dataset {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> images;  // count * rows * cols, row-major, one byte per pixel
  std::vector<uint8_t> labels;  // count
  int num_classes = 10;
};

constexpr const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Reads a whole file; gzip'ed content (detected by its magic bytes) is decompressed. Errors
// name the file.
std::vector<uint8_t> read_maybe_gzip(const std::string& path);

// Parsed IDX content: the dims and the u8 data. `expected_magic` is 0x00000803 or 0x00000801.
struct IdxFile {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};
IdxFile read_idx(const std::string& path, uint32_t expected_magic);

// Loads a split ("train" or "test") from `dir` ({train,t10k}-{images-idx3,labels-idx1}-ubyte,
// each either as NAME.gz or plain NAME). `limit` > 0 keeps the first `limit` samples. Errors
// (missing file, bad magic, truncated data, counts that differ, labels >= 10) name the file.
Dataset load_fashion_mnist(const std::string& dir, const std::string& split, int64_t limit = 0);

// x = (pixel * scale - mean[c]) / std[c]; mean/std hold one value (or one per channel; the
// datasets here are grey, so only the first is used).
struct Preprocess {
  float scale = 1.0f / 255.0f;
  std::vector<float> mean{0.0f};
  std::vector<float> std{1.0f};
  std::string layout = "NCHW";  // or "NHWC"; used when the model input does not settle it
};

// Samples [begin, begin+count) as an f32 tensor shaped for a model whose input is
// `model_input_shape` (dims < 0 are symbolic / unknown; the batch dim is replaced by `count`):
//   rank 4: N x 1 x R x C (NCHW) or N x R x C x 1 (NHWC); which one follows from the known
//           dims where they decide it, else from p.layout;
//   rank 3: N x R x C;  rank 2: N x (R*C).
// Throws if the input shape cannot take an R x C grey image.
Tensor make_batch(const Dataset& ds, int64_t begin, int64_t count, const Preprocess& p,
                  const Shape& model_input_shape);

// Samples [begin, begin+count) as a dataset of their own (e.g. a search's weight and
// validation parts of the training split). Throws when the range is outside `ds`.
Dataset slice_dataset(const Dataset& ds, int64_t begin, int64_t count);

}  // namespace xnn::data
