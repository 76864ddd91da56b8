#include "harness/encode/encode_job.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "engine/core/error.h"
#include "engine/format/xnn_format.h"
#include "engine/runtime/model_io.h"
#include "harness/util/json.h"

namespace xnn::encode {
namespace {

namespace fs = std::filesystem;

double load_ms(const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  const Model m = load_xnn(path);
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(end - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double per_weight(double bits, int64_t numel) { return numel > 0 ? bits / static_cast<double>(numel) : 0.0; }

void tensor_json(json::Writer& w, const TensorEncodeReport& t) {
  const double n = static_cast<double>(std::max<int64_t>(t.numel, 1));
  w.begin_object()
      .field("value", t.value)
      .field("node", t.node)
      .field("op_type", t.op_type)
      .field("shape", t.shape)
      .field("numel", t.numel)
      .field("nonzero", t.nonzero)
      .field("bits", t.bits)
      .field("codebook_size", t.codebook_size)
      .field("layout", std::string(t.gap_bits > 0 ? "sparse" : "dense"))
      .field("gap_bits", t.gap_bits)
      .field("bytes_before", static_cast<int64_t>(t.bytes_before))
      .field("bytes_after", static_cast<int64_t>(t.bytes_after))
      .field("table_bytes", static_cast<int64_t>(t.table_bytes))
      .field("bits_per_weight", static_cast<double>(t.bytes_after) * 8 / n)
      .field("payload_bits_per_weight", t.coder_bits / n)
      .field("table_bits_per_weight", static_cast<double>(t.table_bytes) * 8 / n)
      .field("entropy_bits_per_weight", t.entropy_bits / n)
      .field("huffman_bits_per_weight", t.huffman_bits / n)
      .field("rans_bits_per_weight", t.rans_bits / n)
      .field("fixed_bits_per_weight", t.fixed_bits / n)
      .field("zstd19_bits_per_weight", t.zstd_bits / n)
      .field("xz9_bits_per_weight", t.xz_bits / n)
      .field("huffman_table_bytes", static_cast<int64_t>(t.huffman_table_bytes))
      .field("rans_table_bytes", static_cast<int64_t>(t.rans_table_bytes))
      .field("coder_over_entropy", t.entropy_bits > 0 ? t.coder_bits / t.entropy_bits : 1.0)
      .field("rmse", t.rmse)
      .field("max_abs_error", t.max_abs_error)
      .end_object();
}

}  // namespace

EncodeJobResult run_encode_job(const EncodeJob& job) {
  if (job.output_path.empty()) throw Error("encode: no output path (-o OUT.xnn)");
  if (job.load_repetitions < 0) throw Error("encode: load repetitions must be >= 0");
  const std::shared_ptr<Model> model = load_model(job.model_path);
  EncodeJobResult r;
  r.output_path = job.output_path;
  const std::string dense_path = job.output_path + ".dense.tmp";
  save_xnn(*model, dense_path);
  r.dense_file_bytes = fs::file_size(dense_path);
  try {
    r.report = encode_weights(*model, job.options);
    save_xnn(*model, job.output_path, {{{"encode", r.report.coder}}});
    r.encoded_file_bytes = fs::file_size(job.output_path);
    // Alternating, so drifting machine load affects both alike.
    std::vector<double> dense, encoded;
    for (int i = 0; i < job.load_repetitions; ++i) {
      dense.push_back(load_ms(dense_path));
      encoded.push_back(load_ms(job.output_path));
    }
    r.load_repetitions = job.load_repetitions;
    r.dense_load_ms = median(dense);
    r.encoded_load_ms = median(encoded);
  } catch (...) {
    fs::remove(dense_path);
    throw;
  }
  fs::remove(dense_path);
  return r;
}

std::string to_json(const EncodeJobResult& r) {
  json::Writer w;
  w.begin_object()
      .field("output", r.output_path)
      .field("coder", r.report.coder)
      .field("dense_file_bytes", static_cast<int64_t>(r.dense_file_bytes))
      .field("encoded_file_bytes", static_cast<int64_t>(r.encoded_file_bytes))
      .field("size_ratio", r.encoded_file_bytes > 0 ? static_cast<double>(r.dense_file_bytes) / r.encoded_file_bytes : 0.0)
      .field("load_repetitions", r.load_repetitions)
      .field("dense_load_ms", r.dense_load_ms)
      .field("encoded_load_ms", r.encoded_load_ms);
  w.key("total");
  tensor_json(w, r.report.total);
  w.key("tensors").begin_array();
  for (const TensorEncodeReport& t : r.report.tensors) tensor_json(w, t);
  w.end_array().end_object();
  return w.str();
}

std::string to_text(const EncodeJobResult& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "encoded -> %s (coder %s)\n", r.output_path.c_str(), r.report.coder.c_str());
  out += line;
  std::snprintf(line, sizeof(line), "%-24s %-14s %4s %8s %10s %10s %7s | %7s %7s %7s %7s %7s %7s %7s\n", "weight",
                "shape", "K", "layout", "bytes", "coded", "b/w", "payload", "table", "entropy", "huffman", "rans",
                "zstd19", "xz9");
  out += "bits per weight:\n";
  out += line;
  auto row = [&](const TensorEncodeReport& t) {
    const int64_t n = std::max<int64_t>(t.numel, 1);
    const std::string layout = t.gap_bits > 0 ? "sparse" + std::to_string(t.gap_bits) : "dense";
    std::snprintf(line, sizeof(line), "%-24s %-14s %4d %8s %10llu %10llu %7.3f | %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f\n",
                  t.value.substr(0, 24).c_str(), t.value == "total" ? "" : shape_str(t.shape).c_str(), t.codebook_size,
                  t.value == "total" ? "" : layout.c_str(), static_cast<unsigned long long>(t.bytes_before),
                  static_cast<unsigned long long>(t.bytes_after), static_cast<double>(t.bytes_after) * 8 / n,
                  per_weight(t.coder_bits, n), static_cast<double>(t.table_bytes) * 8 / n, per_weight(t.entropy_bits, n),
                  per_weight(t.huffman_bits, n), per_weight(t.rans_bits, n), per_weight(t.zstd_bits, n),
                  per_weight(t.xz_bits, n));
    out += line;
  };
  for (const TensorEncodeReport& t : r.report.tensors) row(t);
  row(r.report.total);
  const TensorEncodeReport& t = r.report.total;
  std::snprintf(line, sizeof(line),
                "payload / entropy bound: %s %.4f, huffman %.4f, rans %.4f (tables %llu bytes incl. codebooks)\n",
                r.report.coder.c_str(), t.entropy_bits > 0 ? t.coder_bits / t.entropy_bits : 1.0,
                t.entropy_bits > 0 ? t.huffman_bits / t.entropy_bits : 1.0,
                t.entropy_bits > 0 ? t.rans_bits / t.entropy_bits : 1.0, static_cast<unsigned long long>(t.table_bytes));
  out += line;
  std::snprintf(line, sizeof(line), "file: %llu -> %llu bytes (%.2fx smaller); weights rmse %.3g, max |error| %.3g\n",
                static_cast<unsigned long long>(r.dense_file_bytes), static_cast<unsigned long long>(r.encoded_file_bytes),
                r.encoded_file_bytes > 0 ? static_cast<double>(r.dense_file_bytes) / r.encoded_file_bytes : 0.0, t.rmse,
                t.max_abs_error);
  out += line;
  if (r.load_repetitions > 0) {
    std::snprintf(line, sizeof(line), "load (median of %d, alternating): dense %.3f ms, encoded %.3f ms (decode +%.3f ms)\n",
                  r.load_repetitions, r.dense_load_ms, r.encoded_load_ms, r.encoded_load_ms - r.dense_load_ms);
    out += line;
  }
  return out;
}

}  // namespace xnn::encode
