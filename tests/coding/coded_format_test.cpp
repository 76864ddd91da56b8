// Codebook tensors in .xnn (engine/format, compress/encode/weight_encoder.h): an encoded model
// loads to the clustered values exactly, dense and sparse layouts, every coder; models without
// coding requests serialise as before; corrupt coded blobs are errors naming the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "compress/encode/weight_encoder.h"
#include "engine/core/error.h"
#include "engine/format/xnn_format.h"

namespace xnn::encode {
namespace {

// x[1, K] -> MatMul(W[K, N]) -> y; W random normal, `zero_share` of it exactly zero.
Model matmul_model(int64_t k, int64_t n, double zero_share, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> w(static_cast<size_t>(k * n));
  for (float& x : w) x = u(rng) < zero_share ? 0.0f : dist(rng);
  Model m;
  Graph& g = m.graph;
  Value x;
  x.name = "x";
  x.dtype = DType::kF32;
  x.has_shape = true;
  x.shape = {Dim::fixed(1), Dim::fixed(k)};
  const int xi = g.add_value(x);
  const int wi = g.add_constant("fc.weight", Tensor::from_vector(w, {k, n}));
  Value y;
  y.name = "y";
  y.dtype = DType::kF32;
  const int yi = g.add_value(y);
  Node mm;
  mm.op_type = "MatMul";
  mm.name = "fc";
  mm.inputs = {xi, wi};
  mm.outputs = {yi};
  g.nodes.push_back(mm);
  g.inputs = {xi};
  g.outputs = {yi};
  return m;
}

std::vector<float> floats(const Tensor& t) {
  const auto* p = static_cast<const float*>(t.raw());
  return std::vector<float>(p, p + t.numel());
}

const Value& weight(const Model& m) { return m.graph.value(m.graph.find_value("fc.weight")); }

TEST(CodedFormat, EncodedModelLoadsToTheClusteredValuesExactly) {
  for (coding::SymbolCoder coder : {coding::SymbolCoder::kRans, coding::SymbolCoder::kHuffman, coding::SymbolCoder::kFixed}) {
    for (double zeros : {0.0, 0.5, 0.92}) {
      SCOPED_TRACE(std::string(coding::symbol_coder_name(coder)) + " zeros " + std::to_string(zeros));
      Model m = matmul_model(64, 48, zeros, 3);
      const std::string dense = serialize_xnn(m);
      EncodeOptions o;
      o.bits = 4;
      o.coder = coder;
      const EncodeReport r = encode_weights(m, o);
      ASSERT_EQ(r.tensors.size(), 1u);
      const TensorEncodeReport& t = r.tensors[0];
      EXPECT_EQ(t.node, "fc");
      EXPECT_LE(t.codebook_size, 16);
      // Bit-packed indices gain from leaving out most zeros; no zeros, no sparse layout.
      if (coder == coding::SymbolCoder::kFixed && zeros > 0.8) {
        EXPECT_GT(t.gap_bits, 0);
      }
      if (zeros == 0.0) {
        EXPECT_EQ(t.gap_bits, 0);
      }
      ASSERT_TRUE(weight(m).coding.has_value());
      const std::string coded = serialize_xnn(m);
      EXPECT_LT(coded.size(), dense.size());
      const Model loaded = load_xnn_bytes(coded.data(), coded.size(), "coded.xnn");
      EXPECT_EQ(floats(*weight(loaded).data), floats(*weight(m).data));
      EXPECT_FALSE(weight(loaded).coding.has_value());  // loads as an ordinary dense model
      // The report's sizes are what the file stores.
      EXPECT_GE(coded.size(), t.bytes_after);
      EXPECT_GE(t.coder_bits, t.entropy_bits * 0.999);
    }
  }
}

TEST(CodedFormat, SparseLayoutKeepsZerosAndLongGaps) {
  // Long runs of zeros overflow every gap width: escapes must carry them.
  Model m = matmul_model(32, 64, 0.0, 5);
  auto* w = static_cast<float*>(weight(m).data->raw());
  const float kept[] = {0.5f, -0.25f, 1.0f, 2.0f};
  for (int64_t i = 0; i < 32 * 64; ++i) w[i] = 0.0f;
  for (int64_t i : {0, 700, 1400}) w[i] = kept[i / 700];
  w[32 * 64 - 1] = kept[3];
  const std::vector<float> pruned = floats(*weight(m).data);
  EncodeOptions o;
  o.bits = 3;
  o.min_elements = 16;
  const EncodeReport r = encode_weights(m, o);
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].nonzero, 4);
  EXPECT_EQ(r.tensors[0].codebook_size, 5);
  // Well-spread distinct values each get a centroid: clustering is exact.
  EXPECT_EQ(floats(*weight(m).data), pruned);
  for (int gap_bits : {1, 2, 5, 12}) {
    m.graph.value(m.graph.find_value("fc.weight")).coding->gap_bits = gap_bits;
    const std::string coded = serialize_xnn(m);
    EXPECT_EQ(floats(*weight(load_xnn_bytes(coded.data(), coded.size(), "sparse.xnn")).data), pruned) << gap_bits;
  }
}

TEST(CodedFormat, ModelsWithoutCodingAreUnchanged) {
  Model m = matmul_model(16, 16, 0.3, 7);
  const std::string before = serialize_xnn(m);
  const Model loaded = load_xnn_bytes(before.data(), before.size(), "dense.xnn");
  EXPECT_EQ(serialize_xnn(loaded), before);
  // Small weights are left dense by the encoder.
  EncodeOptions o;
  o.min_elements = 1000;
  EXPECT_TRUE(encode_weights(m, o).tensors.empty());
  EXPECT_EQ(serialize_xnn(m), before);
}

TEST(CodedFormat, WriterRefusesValuesOutsideTheCodebook) {
  Model m = matmul_model(16, 16, 0.0, 8);
  m.graph.value(m.graph.find_value("fc.weight")).coding = WeightCoding{{0.0f, 1.0f}, coding::SymbolCoder::kRans, 0};
  try {
    serialize_xnn(m);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fc.weight'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not in its codebook"), std::string::npos) << e.what();
  }
}

TEST(CodedFormat, EncoderOptionErrorsNameTheProblem) {
  Model m = matmul_model(32, 32, 0.0, 9);
  EncodeOptions o;
  o.bits_per_layer["nope"] = 4;
  try {
    encode_weights(m, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("fc (fc.weight)"), std::string::npos) << e.what();
  }
  o.bits_per_layer = {{"fc", 9}};
  EXPECT_THROW(encode_weights(m, o), Error);
  o.bits_per_layer = {{"fc", 2}};
  const EncodeReport r = encode_weights(m, o);
  EXPECT_EQ(r.tensors[0].bits, 2);
  EXPECT_LE(r.tensors[0].codebook_size, 4);
  // Without clustering, 1024 distinct values do not fit 8 bits.
  Model raw = matmul_model(32, 32, 0.0, 10);
  EncodeOptions no_cluster;
  no_cluster.cluster = false;
  no_cluster.bits = 8;
  EXPECT_THROW(encode_weights(raw, no_cluster), Error);
  // ... but an already clustered model codes without loss.
  EncodeOptions again = no_cluster;
  again.bits = 2;
  const std::vector<float> clustered = floats(*weight(m).data);
  encode_weights(m, again);
  EXPECT_EQ(floats(*weight(m).data), clustered);
}

TEST(CodedFormat, CorruptCodedBlobsAreErrorsNamingTheTensor) {
  Model m = matmul_model(64, 64, 0.9, 11);
  EncodeOptions o;
  o.bits = 5;
  encode_weights(m, o);
  const std::string good = serialize_xnn(m);
  // The coded blobs are the last bytes of the data section; mutate there.
  std::mt19937 rng(5);
  int named = 0, loaded = 0;
  const size_t tail = 1024;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bad = good;
    const size_t pos = bad.size() - 1 - rng() % std::min(tail, bad.size());
    bad[pos] = static_cast<char>(bad[pos] ^ static_cast<char>(1 + rng() % 255));
    try {
      load_xnn_bytes(bad.data(), bad.size(), "bad.xnn");
      ++loaded;  // a flip in padding or one that decodes to other valid symbols
    } catch (const Error& e) {
      if (std::string(e.what()).find("'fc.weight'") != std::string::npos) ++named;
    }
  }
  EXPECT_GT(named, 500);
}

}  // namespace
}  // namespace xnn::encode
