// An encode job (shared by `xnn-lab encode` and the `encode` experiment step): load a model,
// cluster and mark its large weights for coded storage (compress/encode/weight_encoder.h),
// save the .xnn, and measure what it costs to load: the same model saved dense and the encoded
// file are each loaded `load_repetitions` times, alternately, and the medians reported (the
// difference is the one-off decode at load).
#pragma once
#include <cstdint>
#include <string>

#include "compress/encode/weight_encoder.h"

namespace xnn::encode {

struct EncodeJob {
  std::string model_path;
  std::string output_path;
  EncodeOptions options;
  int load_repetitions = 5;  // 0: do not measure load time
};

struct EncodeJobResult {
  std::string output_path;
  EncodeReport report;
  uint64_t dense_file_bytes = 0;    // the input model saved as a plain .xnn
  uint64_t encoded_file_bytes = 0;  // the output file
  int load_repetitions = 0;
  double dense_load_ms = 0;         // median load_xnn time of the dense file
  double encoded_load_ms = 0;       // median load_xnn time of the encoded file
};

EncodeJobResult run_encode_job(const EncodeJob& job);
std::string to_json(const EncodeJobResult& r);
// Human-readable: a per-tensor table, totals and the load times.
std::string to_text(const EncodeJobResult& r);

}  // namespace xnn::encode
