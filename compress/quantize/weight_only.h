// Weight-only quantisation: the weights of memory-bound layers — embedding tables (Gather on a
// constant 2-D float table, axis 0) and fully connected layers (Gemm / MatMul with a constant
// float weight) — become row-wise unsigned 4- or 8-bit codes with a float16 (or float32) scale and
// offset per row (min/max asymmetric: offset = row min, scale = (max - min) / (2^bits - 1)), in
// the ai.xnn RowQuantizedGather / RowQuantizedGemm ops (engine/ops/row_quantized.cpp), which
// dequantise on the fly. Activations stay float; no calibration data is needed.
//
// The codebook scheme instead clusters each tensor's values with 1-D k-means into 2^bits shared
// float centroids (Deep Compression, linear initialisation; exact zeros keep a centroid of
// their own when the tensor is pruned) and stores `bits`-bit indices (1..8) in the ai.xnn
// CodebookGather / CodebookGemm ops (engine/ops/codebook.cpp), looked up on the fly.
//
// A Gemm qualifies with transA = 0, alpha = beta = 1 and C absent or a constant [N] bias; a
// MatMul with a constant 2-D B [K, N] (stored transposed, one row per output). Each quantised
// tensor is reported with its size and reconstruction error.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace xnn::quantize {

enum class WeightOnlyScheme { kRowWise, kCodebook };

struct WeightOnlyOptions {
  WeightOnlyScheme scheme = WeightOnlyScheme::kRowWise;
  int bits = 8;                      // row-wise: 4 or 8; codebook: 1..8
  bool embeddings = true;            // Gather tables
  bool dense = true;                 // Gemm / MatMul weights
  int64_t min_elements = 1024;       // smaller tensors stay float (their row parameters would not pay)
  bool float16_params = true;        // scale/offset as float16 (FBGEMM's row-wise int4 layout) or float32
  std::set<std::string> exclude;     // node names left in float
};

struct WeightOnlyTensorReport {
  std::string node, op_type, tensor;  // op_type: the original op
  int64_t rows = 0, cols = 0;
  int64_t bytes_before = 0, bytes_after = 0;  // codes + row parameters (row-wise) or centroids (codebook)
  int64_t centroids = 0;    // codebook: centroids kept (<= 2^bits; empty clusters are dropped)
  double rmse = 0;          // root mean square reconstruction error
  double max_abs_error = 0;
  double sqnr_db = 0;       // 10 log10(Σw² / Σ(w - ŵ)²); +inf when exact
};

struct WeightOnlyReport {
  WeightOnlyScheme scheme = WeightOnlyScheme::kRowWise;
  int bits = 8;
  std::vector<WeightOnlyTensorReport> tensors;
  int64_t bytes_before = 0, bytes_after = 0;  // of the quantised tensors only
};

// Rewrites `model` in place and reports what changed. Throws Error for bits the scheme lacks.
WeightOnlyReport quantize_weights_only(Model& model, const WeightOnlyOptions& options);

// Row-wise quantisation of one [rows, cols] float matrix (exposed for tests and benchmarks):
// codes as RowQuantizedGather/Gemm store them, and the per-row scale and offset (already rounded
// to float16 when `float16_params`).
struct RowQuantized {
  std::vector<uint8_t> codes;  // rows x row_bytes
  std::vector<float> scale, offset;
};
RowQuantized quantize_rows(const float* w, int64_t rows, int64_t cols, int bits, bool float16_params);

// Codebook quantisation of one [rows, cols] float matrix: packed indices as CodebookGather/Gemm
// store them and the centroids (at most 2^bits).
struct CodebookQuantized {
  std::vector<uint8_t> codes;  // rows x codebook_row_bytes(cols, bits)
  std::vector<float> centroids;
};
CodebookQuantized quantize_codebook(const float* w, int64_t rows, int64_t cols, int bits);

}  // namespace xnn::quantize
