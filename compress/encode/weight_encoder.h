// The encode step of weight compression (Deep Compression's last two stages): cluster each
// large weight tensor to a k-entry codebook (kmeans.h) and mark it for coded storage
// (Value::coding, engine/core/graph.h), choosing per tensor the layout — dense indices, or
// sparse with relative indices when zeros (pruning) make that smaller — and report how close
// the coder gets to the empirical entropy, against Huffman, fixed-width, zstd -19 and xz -9 on
// the same symbol streams. save_xnn then writes the Codebook tensors.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/coding/symbol_stream.h"
#include "engine/core/graph.h"

namespace xnn::encode {

struct EncodeOptions {
  int bits = 5;                                // codebook of 2^bits centroids (1..8)
  std::map<std::string, int> bits_per_layer;   // by weight value name or node name
  coding::SymbolCoder coder = coding::SymbolCoder::kRans;
  bool cluster = true;     // false: the tensor's distinct values are the codebook (<= 2^bits of them)
  bool keep_zero = true;   // pruned (exactly 0) weights keep an exact 0 centroid
  int64_t min_elements = 256;  // smaller weights stay dense
};

// Sizes are bytes; *_bits are payload bits of the tensor's symbol streams (codebook indices,
// plus gap symbols in the sparse layout) without tables, so they compare with entropy_bits.
struct TensorEncodeReport {
  std::string value;        // weight value name
  std::string node;         // the Conv / Gemm / MatMul using it
  std::string op_type;
  Shape shape;
  int64_t numel = 0;
  int64_t nonzero = 0;      // after clustering
  int bits = 0;             // requested codebook width
  int codebook_size = 0;    // centroids used (<= 2^bits)
  int gap_bits = 0;         // 0: dense layout; else sparse with this gap width
  uint64_t bytes_before = 0;    // numel * 4
  uint64_t bytes_after = 0;     // coded streams + codebook (what the file stores)
  uint64_t table_bytes = 0;     // of bytes_after: codebook + stream headers and coder tables
  double entropy_bits = 0;      // order-0 Shannon bound of the streams
  double coder_bits = 0;        // the chosen coder's payload
  double huffman_bits = 0;
  double rans_bits = 0;
  double fixed_bits = 0;        // bit-packed indices (and gaps)
  double zstd_bits = 0;         // zstd -19 of the streams, one byte per symbol (frame included)
  double xz_bits = 0;           // xz -9 likewise
  uint64_t huffman_table_bytes = 0;
  uint64_t rans_table_bytes = 0;
  double rmse = 0;              // clustering error against the original weights
  double max_abs_error = 0;
};

struct EncodeReport {
  std::string coder;        // chosen coder name
  std::vector<TensorEncodeReport> tensors;
  TensorEncodeReport total; // sums over tensors (value "total"; ratios recomputed)
};

// Clusters the selected weights of `model` in place (their data become codebook values) and
// sets their Value::coding. Unknown names in bits_per_layer, bits outside 1..8, or a tensor
// with too many distinct values under cluster = false are xnn::Errors naming them.
EncodeReport encode_weights(Model& model, const EncodeOptions& options);

}  // namespace xnn::encode
