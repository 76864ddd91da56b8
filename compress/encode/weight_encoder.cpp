#include "compress/encode/weight_encoder.h"

#include <cmath>
#include <cstring>
#include <set>

#include "compress/encode/general_compressors.h"
#include "compress/encode/kmeans.h"
#include "engine/coding/entropy.h"

namespace xnn::encode {
namespace {

using coding::SymbolCoder;

// The symbol streams of one tensor in one layout (what save_xnn will code).
struct Streams {
  std::vector<uint16_t> symbols;  // codebook indices
  std::vector<uint16_t> gaps;     // sparse layout only
  uint32_t symbol_alphabet = 0;
  uint32_t gap_alphabet = 0;
};

// Mirrors the writer's layout (engine/format/xnn_writer.cpp, xnn.fbs): zeros are +0.0 bits.
Streams make_streams(const std::vector<uint16_t>& assignment, const std::vector<float>& codebook, int gap_bits) {
  Streams s;
  s.symbol_alphabet = static_cast<uint32_t>(codebook.size());
  if (gap_bits == 0) {
    s.symbols = assignment;
    return s;
  }
  const uint32_t escape = (1u << gap_bits) - 1;
  s.gap_alphabet = escape + 1;
  uint32_t run = 0;
  for (uint16_t a : assignment) {
    uint32_t bits = 0;
    std::memcpy(&bits, &codebook[a], 4);
    if (bits == 0) {
      if (++run == escape) {
        s.gaps.push_back(static_cast<uint16_t>(escape));
        run = 0;
      }
      continue;
    }
    s.symbols.push_back(a);
    s.gaps.push_back(static_cast<uint16_t>(run));
    run = 0;
  }
  return s;
}

struct StreamCost {
  uint64_t bytes = 0;        // whole coded streams
  uint64_t table_bytes = 0;  // their headers and tables
};

StreamCost coded_cost(const Streams& s, SymbolCoder coder) {
  StreamCost c;
  const coding::CodedStream a = coding::encode_symbols(s.symbols, s.symbol_alphabet, coder);
  c.bytes += a.bytes.size();
  c.table_bytes += a.table_bytes;
  if (s.gap_alphabet > 0) {
    const coding::CodedStream b = coding::encode_symbols(s.gaps, s.gap_alphabet, coder);
    c.bytes += b.bytes.size();
    c.table_bytes += b.table_bytes;
  }
  return c;
}

std::string as_bytes(const std::vector<uint16_t>& symbols) {
  std::string out(symbols.size(), '\0');
  for (size_t i = 0; i < symbols.size(); ++i) out[i] = static_cast<char>(symbols[i]);
  return out;
}

struct Target {
  int value = -1;
  std::string node;
  std::string op_type;
};

// Weights (input 1) of Conv / Gemm / MatMul that are float32 constants of >= min_elements.
std::vector<Target> find_targets(const Graph& g, int64_t min_elements) {
  std::vector<Target> out;
  std::set<int> seen;
  for (const Node& n : g.nodes) {
    if (n.domain != "" || (n.op_type != "Conv" && n.op_type != "Gemm" && n.op_type != "MatMul")) continue;
    if (n.inputs.size() < 2 || n.inputs[1] < 0) continue;
    const Value& v = g.value(n.inputs[1]);
    if (!v.data || v.data->dtype() != DType::kF32 || v.data->numel() < min_elements) continue;
    if (!seen.insert(n.inputs[1]).second) continue;
    out.push_back({n.inputs[1], n.name, n.op_type});
  }
  return out;
}

// The codebook without clustering: the tensor's distinct values, if there are few enough.
Clustering distinct_values(const float* data, int64_t numel, int bits, const std::string& name) {
  Clustering c;
  std::map<uint32_t, uint16_t> slot;
  c.assignment.resize(static_cast<size_t>(numel));
  for (int64_t i = 0; i < numel; ++i) {
    uint32_t b = 0;
    std::memcpy(&b, &data[i], 4);
    auto [it, fresh] = slot.emplace(b, static_cast<uint16_t>(c.centroids.size()));
    if (fresh) {
      if (c.centroids.size() >= (size_t{1} << bits)) {
        throw Error("weight '" + name + "' has more than " + std::to_string(1 << bits) +
                    " distinct values; cluster it (leave out --no-cluster) or allow more bits");
      }
      c.centroids.push_back(data[i]);
    }
    c.assignment[static_cast<size_t>(i)] = it->second;
  }
  return c;
}

void add_into(TensorEncodeReport& total, const TensorEncodeReport& t) {
  total.numel += t.numel;
  total.nonzero += t.nonzero;
  total.bytes_before += t.bytes_before;
  total.bytes_after += t.bytes_after;
  total.table_bytes += t.table_bytes;
  total.entropy_bits += t.entropy_bits;
  total.coder_bits += t.coder_bits;
  total.huffman_bits += t.huffman_bits;
  total.rans_bits += t.rans_bits;
  total.fixed_bits += t.fixed_bits;
  total.zstd_bits += t.zstd_bits;
  total.xz_bits += t.xz_bits;
  total.huffman_table_bytes += t.huffman_table_bytes;
  total.rans_table_bytes += t.rans_table_bytes;
  total.codebook_size += t.codebook_size;
  // rmse combines as a root of the element-weighted mean square.
  total.rmse += t.rmse * t.rmse * static_cast<double>(t.numel);
  total.max_abs_error = std::max(total.max_abs_error, t.max_abs_error);
}

}  // namespace

EncodeReport encode_weights(Model& model, const EncodeOptions& options) {
  auto check_bits = [](int bits, const std::string& what) {
    if (bits < 1 || bits > 8) throw Error(what + ": " + std::to_string(bits) + " bits (expected 1..8)");
  };
  check_bits(options.bits, "--bits");
  Graph& g = model.graph;
  const std::vector<Target> targets = find_targets(g, options.min_elements);
  std::set<std::string> known;
  for (const Target& t : targets) {
    known.insert(g.value(t.value).name);
    known.insert(t.node);
  }
  for (const auto& [name, bits] : options.bits_per_layer) {
    check_bits(bits, "bits for '" + name + "'");
    if (!known.count(name)) {
      std::string list;
      for (const Target& t : targets) list += (list.empty() ? "" : ", ") + t.node + " (" + g.value(t.value).name + ")";
      throw Error("no encodable weight or node named '" + name + "'; candidates: " + (list.empty() ? "(none)" : list));
    }
  }

  EncodeReport report;
  report.coder = coding::symbol_coder_name(options.coder);
  report.total.value = "total";
  for (const Target& target : targets) {
    Value& v = g.value(target.value);
    int bits = options.bits;
    if (auto it = options.bits_per_layer.find(v.name); it != options.bits_per_layer.end()) bits = it->second;
    if (auto it = options.bits_per_layer.find(target.node); it != options.bits_per_layer.end()) bits = it->second;
    const Tensor& original = *v.data;
    const auto* w = static_cast<const float*>(original.raw());
    const int64_t numel = original.numel();
    const Clustering c = options.cluster
                             ? kmeans_1d(std::span<const float>(w, static_cast<size_t>(numel)), 1 << bits, options.keep_zero)
                             : distinct_values(w, numel, bits, v.name);

    TensorEncodeReport r;
    r.value = v.name;
    r.node = target.node;
    r.op_type = target.op_type;
    r.shape = original.shape();
    r.numel = numel;
    r.bits = bits;
    r.codebook_size = static_cast<int>(c.centroids.size());
    r.bytes_before = original.nbytes();
    Tensor clustered(DType::kF32, original.shape());
    float* out = clustered.data<float>();
    double square = 0;
    for (int64_t i = 0; i < numel; ++i) {
      out[i] = c.centroids[c.assignment[static_cast<size_t>(i)]];
      const double e = static_cast<double>(out[i]) - w[i];
      square += e * e;
      r.max_abs_error = std::max(r.max_abs_error, std::abs(e));
      uint32_t b = 0;
      std::memcpy(&b, &out[i], 4);
      r.nonzero += b != 0 ? 1 : 0;
    }
    r.rmse = numel > 0 ? std::sqrt(square / static_cast<double>(numel)) : 0.0;

    // Layout: dense indices, or sparse with the gap width that codes smallest.
    Streams best = make_streams(c.assignment, c.centroids, 0);
    StreamCost best_cost = coded_cost(best, options.coder);
    if (r.nonzero < numel) {
      for (int gap_bits = 1; gap_bits <= 8; ++gap_bits) {
        Streams s = make_streams(c.assignment, c.centroids, gap_bits);
        const StreamCost cost = coded_cost(s, options.coder);
        if (cost.bytes < best_cost.bytes) {
          best = std::move(s);
          best_cost = cost;
          r.gap_bits = gap_bits;
        }
      }
    }
    r.bytes_after = best_cost.bytes + c.centroids.size() * 4;
    r.table_bytes = best_cost.table_bytes + c.centroids.size() * 4;
    r.coder_bits = static_cast<double>(best_cost.bytes - best_cost.table_bytes) * 8;
    const StreamCost huffman = coded_cost(best, SymbolCoder::kHuffman);
    const StreamCost rans = coded_cost(best, SymbolCoder::kRans);
    const StreamCost fixed = coded_cost(best, SymbolCoder::kFixed);
    r.huffman_bits = static_cast<double>(huffman.bytes - huffman.table_bytes) * 8;
    r.rans_bits = static_cast<double>(rans.bytes - rans.table_bytes) * 8;
    r.fixed_bits = static_cast<double>(fixed.bytes - fixed.table_bytes) * 8;
    r.huffman_table_bytes = huffman.table_bytes;
    r.rans_table_bytes = rans.table_bytes;
    r.entropy_bits = coding::shannon_entropy_bits(best.symbols, best.symbol_alphabet);
    r.zstd_bits = static_cast<double>(zstd_compressed_size(as_bytes(best.symbols))) * 8;
    r.xz_bits = static_cast<double>(xz_compressed_size(as_bytes(best.symbols))) * 8;
    if (best.gap_alphabet > 0) {
      r.entropy_bits += coding::shannon_entropy_bits(best.gaps, best.gap_alphabet);
      r.zstd_bits += static_cast<double>(zstd_compressed_size(as_bytes(best.gaps))) * 8;
      r.xz_bits += static_cast<double>(xz_compressed_size(as_bytes(best.gaps))) * 8;
    }

    v.data = clustered;
    v.coding = WeightCoding{c.centroids, options.coder, r.gap_bits};
    add_into(report.total, r);
    report.tensors.push_back(std::move(r));
  }
  if (report.total.numel > 0) report.total.rmse = std::sqrt(report.total.rmse / static_cast<double>(report.total.numel));
  return report;
}

}  // namespace xnn::encode
