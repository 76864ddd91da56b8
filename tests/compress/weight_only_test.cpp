// Weight-only quantisation (compress/quantize/weight_only.h) and the ai.xnn ops it writes
// (RowQuantizedGather/Gemm for the row-wise scheme, CodebookGather/Gemm for the k-means codebook):
// the codes, the rewrite of Gather/Gemm/MatMul, outputs close to float with errors that shrink
// with the bit width, sizes, and the CPU kernels against the ops' definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "compress/quantize/weight_only.h"
#include "engine/core/half.h"
#include "engine/format/xnn_format.h"
#include "engine/kernels/codebook.h"
#include "engine/kernels/row_quantized.h"
#include "engine/runtime/session.h"
#include "test_graph.h"

namespace xnn::quantize {
namespace {

using test::GraphBuilder;
using test::random_tensor;

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::abs(double(a.data<float>()[i]) - b.data<float>()[i]));
  return m;
}

Tensor run_model(const Model& m, const std::map<std::string, Tensor>& inputs, bool cpu_kernels = true) {
  SessionOptions o;
  o.cpu_kernels = cpu_kernels;
  Session s(std::make_shared<const Model>(m), o);
  return s.run(inputs).at(0);
}

// x [batch, 64] -> Gemm(transB=1, 64->96, bias) -> Relu -> MatMul(96->40)
Model mlp() {
  GraphBuilder b;
  b.input("x", {64})
      .random_constant("w1", {96, 64}, 0.3f, 11)
      .random_constant("b1", {96}, 0.1f, 12)
      .random_constant("w2", {96, 40}, 0.2f, 13)
      .node("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}, {{"transB", int64_t{1}}})
      .node("Relu", "relu", {"h"}, {"r"})
      .node("MatMul", "fc2", {"r", "w2"}, {"y"})
      .output("y", {40});
  return b.model();
}

// ids [batch, 5] (int64) -> Gather(table 300 x 64) -> ReduceMean over the bag -> [batch, 64]
Model embedding_bag() {
  Model m;
  Graph& g = m.graph;
  Value ids;
  ids.name = "ids";
  ids.dtype = DType::kI64;
  ids.has_shape = true;
  ids.shape = {Dim::fixed(2), Dim::fixed(5)};
  g.inputs.push_back(g.add_value(ids));
  g.add_constant("table", random_tensor({300, 64}, -1.0f, 1.0f, 21));
  for (const char* name : {"rows", "bag"}) {
    Value v;
    v.name = name;
    v.dtype = DType::kF32;
    g.add_value(v);
  }
  Node gather;
  gather.op_type = "Gather";
  gather.name = "lookup";
  gather.inputs = {g.find_value("ids"), g.find_value("table")};
  std::swap(gather.inputs[0], gather.inputs[1]);
  gather.outputs = {g.find_value("rows")};
  g.nodes.push_back(gather);
  Node mean;
  mean.op_type = "ReduceMean";
  mean.name = "mean";
  mean.inputs = {g.find_value("rows")};
  mean.outputs = {g.find_value("bag")};
  mean.attrs["axes"] = Attribute(std::vector<int64_t>{1});
  mean.attrs["keepdims"] = Attribute(int64_t{0});
  g.nodes.push_back(mean);
  g.outputs = {g.find_value("bag")};
  g.validate("embedding bag");
  return m;
}

Tensor ids_tensor() {
  Tensor t(DType::kI64, {2, 5});
  const int64_t ids[] = {0, 7, 299, 150, -1, 3, 3, 42, 100, 250};
  for (int i = 0; i < 10; ++i) t.data<int64_t>()[i] = ids[i];
  return t;
}

TEST(RowQuantize, CodesReconstructWithinHalfAStepAndKeepTheRowExtremes) {
  const Tensor w = random_tensor({7, 33}, -2.0f, 3.0f, 1);
  for (int bits : {4, 8}) {
    for (bool f16 : {false, true}) {
      const RowQuantized q = quantize_rows(w.data<float>(), 7, 33, bits, f16);
      const int64_t row_bytes = kernels::row_quantized_bytes(33, bits);
      ASSERT_EQ(q.codes.size(), size_t(7 * row_bytes));
      std::vector<float> row(33);
      for (int r = 0; r < 7; ++r) {
        if (f16) {
          EXPECT_EQ(q.scale[r], float(Half(q.scale[r])));  // already float16 values
          EXPECT_EQ(q.offset[r], float(Half(q.offset[r])));
        }
        kernels::dequantize_row(q.codes.data() + r * row_bytes, bits, 33, q.scale[r], q.offset[r], row.data());
        for (int c = 0; c < 33; ++c) {
          // Half a step, plus float16 rounding of the offset (its ulp at |w| <= 3 is 2^-9).
          EXPECT_LE(std::abs(row[c] - w.data<float>()[r * 33 + c]), 0.5f * q.scale[r] + (f16 ? 0.004f : 1e-5f))
              << "bits " << bits << " row " << r << " col " << c;
        }
      }
    }
  }
}

TEST(RowQuantize, FourBitRowsPackTwoCodesPerByteLowNibbleFirst) {
  const float w[] = {0, 15, 1, 14, 2};  // one row: min 0, max 15 -> scale 1, codes = values
  const RowQuantized q = quantize_rows(w, 1, 5, 4, false);
  ASSERT_EQ(q.codes.size(), 3u);
  EXPECT_EQ(q.codes[0], 0xF0);
  EXPECT_EQ(q.codes[1], 0xE1);
  EXPECT_EQ(q.codes[2], 0x02);
  EXPECT_FLOAT_EQ(q.scale[0], 1.0f);
  EXPECT_FLOAT_EQ(q.offset[0], 0.0f);
}

TEST(RowQuantize, ConstantRowsAreExactAndBadBitsAreRefused) {
  const float w[] = {0.5f, 0.5f, 0.5f};
  const RowQuantized q = quantize_rows(w, 1, 3, 8, false);
  EXPECT_EQ(q.scale[0], 0.0f);
  EXPECT_EQ(q.offset[0], 0.5f);
  EXPECT_THROW(quantize_rows(w, 1, 3, 3, false), Error);
  Model m = mlp();
  WeightOnlyOptions o;
  o.bits = 2;
  EXPECT_THROW(quantize_weights_only(m, o), Error);
}

TEST(WeightOnly, RewritesGemmAndMatMulAndStaysCloseToFloat) {
  const Model float_model = mlp();
  const Tensor x = random_tensor({3, 64}, -1.0f, 1.0f, 5);
  const Tensor ref = run_model(float_model, {{"x", x}});
  double err[2];
  for (int i = 0; i < 2; ++i) {
    Model m = float_model;
    WeightOnlyOptions o;
    o.bits = i == 0 ? 8 : 4;
    const WeightOnlyReport r = quantize_weights_only(m, o);
    ASSERT_EQ(r.tensors.size(), 2u);
    EXPECT_EQ(r.tensors[0].op_type, "Gemm");
    EXPECT_EQ(r.tensors[1].op_type, "MatMul");
    EXPECT_EQ(r.tensors[0].rows, 96);
    EXPECT_EQ(r.tensors[1].rows, 40);  // MatMul weights are stored one row per output
    EXPECT_EQ(r.tensors[1].cols, 96);
    int rowq = 0;
    for (const Node& n : m.graph.nodes) rowq += n.op_type == "RowQuantizedGemm" && n.domain == "ai.xnn";
    EXPECT_EQ(rowq, 2);
    EXPECT_EQ(m.graph.find_value("w1"), -1) << "the float weight is dropped";
    // codes + float16 scale and offset per row
    const int64_t row_bytes = o.bits == 8 ? 64 : 32;
    EXPECT_EQ(r.tensors[0].bytes_after, 96 * row_bytes + 96 * 4);
    EXPECT_EQ(r.tensors[0].bytes_before, 96 * 64 * 4);
    EXPECT_GT(r.tensors[0].sqnr_db, o.bits == 8 ? 40.0 : 16.0);
    err[i] = max_abs_diff(run_model(m, {{"x", x}}), ref);
    // The reference kernels compute the same function as the CPU kernel.
    EXPECT_LT(max_abs_diff(run_model(m, {{"x", x}}, false), run_model(m, {{"x", x}})), 1e-4);
  }
  EXPECT_LT(err[0], 0.02);
  EXPECT_LT(err[0], err[1]);
  EXPECT_LT(err[1], 0.3);
}

TEST(WeightOnly, EmbeddingTableInt4IsOverSevenTimesSmallerAndLooksUpTheRightRows) {
  const Model float_model = embedding_bag();
  const Tensor ids = ids_tensor();
  const Tensor ref = run_model(float_model, {{"ids", ids}});
  Model m = float_model;
  WeightOnlyOptions o;
  o.bits = 4;
  const WeightOnlyReport r = quantize_weights_only(m, o);
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.tensors[0].op_type, "Gather");
  EXPECT_EQ(r.bytes_before, 300 * 64 * 4);
  EXPECT_EQ(r.bytes_after, 300 * (32 + 4));
  EXPECT_GE(double(r.bytes_before) / r.bytes_after, 7.0);
  const Tensor out = run_model(m, {{"ids", ids}});
  // Uniform [-1, 1] rows: a 4-bit step is ~2/15, so each element is within ~1/15 (+ float16).
  EXPECT_LT(max_abs_diff(out, ref), 0.07);
  EXPECT_GT(max_abs_diff(out, ref), 0.0);
}

TEST(WeightOnly, ExclusionsSmallTensorsAndLayerChoiceAreHonoured) {
  {
    Model m = mlp();
    WeightOnlyOptions o;
    o.exclude = {"fc1"};
    const WeightOnlyReport r = quantize_weights_only(m, o);
    ASSERT_EQ(r.tensors.size(), 1u);
    EXPECT_EQ(r.tensors[0].node, "fc2");
  }
  {
    Model m = mlp();
    WeightOnlyOptions o;
    o.min_elements = 96 * 64 + 1;
    EXPECT_TRUE(quantize_weights_only(m, o).tensors.empty());
  }
  {
    Model m = mlp();
    WeightOnlyOptions o;
    o.dense = false;
    EXPECT_TRUE(quantize_weights_only(m, o).tensors.empty());
  }
  {
    Model m = embedding_bag();
    WeightOnlyOptions o;
    o.embeddings = false;
    EXPECT_TRUE(quantize_weights_only(m, o).tensors.empty());
  }
}

TEST(WeightOnly, QuantisedModelRoundTripsThroughXnn) {
  Model m = embedding_bag();
  WeightOnlyOptions o;
  o.bits = 4;
  quantize_weights_only(m, o);
  const Model back = load_xnn_bytes(serialize_xnn(m).data(), serialize_xnn(m).size(), "memory");
  const Tensor ids = ids_tensor();
  EXPECT_EQ(max_abs_diff(run_model(back, {{"ids", ids}}), run_model(m, {{"ids", ids}})), 0.0);
}

TEST(RowQuantizedKernels, Avx2AndScalarMatchTheDefinitionForManyShapes) {
  for (int bits : {4, 8}) {
    for (int64_t k : {1, 7, 8, 9, 31, 64, 129}) {
      for (int64_t m : {1, 3, 4, 6}) {
        const int64_t n = 70;
        const Tensor w = random_tensor({n, k}, -1.0f, 1.0f, uint32_t(k * 10 + bits));
        const RowQuantized q = quantize_rows(w.data<float>(), n, k, bits, true);
        kernels::RowQuantizedWeights rw{q.codes.data(), bits, n, k, kernels::row_quantized_bytes(k, bits), q.scale.data(),
                                        q.offset.data()};
        const Tensor a = random_tensor({m, k}, -1.0f, 1.0f, uint32_t(m));
        const Tensor bias = random_tensor({n}, -1.0f, 1.0f, 3);
        Tensor ref(DType::kF32, {m, n}), fast(DType::kF32, {m, n});
        kernels::row_quantized_gemm_reference(a.data<float>(), m, rw, bias.data<float>(), ref.data<float>());
        for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2}) {
          if (isa == kernels::Isa::kAvx2 && !kernels::isa_supported(isa)) continue;
          kernels::f32_rowq_gemm(a.data<float>(), m, rw, bias.data<float>(), fast.data<float>(), nullptr, isa);
          EXPECT_LT(max_abs_diff(fast, ref), 1e-4 * double(k)) << "bits " << bits << " k " << k << " m " << m;
        }
      }
    }
  }
}

// ---- k-means codebook ------------------------------------------------------------------------

TEST(CodebookQuantize, PacksIndicesInTwoFourOrEightBitContainers) {
  EXPECT_EQ(kernels::codebook_container_bits(1), 2);
  EXPECT_EQ(kernels::codebook_container_bits(2), 2);
  EXPECT_EQ(kernels::codebook_container_bits(3), 4);
  EXPECT_EQ(kernels::codebook_container_bits(5), 8);
  EXPECT_EQ(kernels::codebook_row_bytes(9, 2), 3);
  EXPECT_EQ(kernels::codebook_row_bytes(9, 4), 5);
  EXPECT_EQ(kernels::codebook_row_bytes(9, 6), 9);
  // Four distinct values, 2 bits: the codes are the values' ranks, element 4j+u at bits 2u.
  const float w[] = {-1, 0.5f, 2, 3, 3, 2, 0.5f, -1, 2};
  const CodebookQuantized q = quantize_codebook(w, 1, 9, 2);
  ASSERT_EQ(q.centroids, (std::vector<float>{-1, 0.5f, 2, 3}));
  ASSERT_EQ(q.codes.size(), 3u);
  EXPECT_EQ(q.codes[0], 0b11100100);  // codes 0,1,2,3
  EXPECT_EQ(q.codes[1], 0b00011011);  // codes 3,2,1,0
  EXPECT_EQ(q.codes[2], 0b00000010);  // code 2
  for (int c = 0; c < 9; ++c) EXPECT_EQ(q.centroids[kernels::codebook_code(q.codes.data(), 2, c)], w[c]);
}

TEST(CodebookQuantize, ErrorShrinksWithBitsAndPrunedZerosStayExact) {
  Tensor w = random_tensor({40, 50}, -1.0f, 1.0f, 7);
  for (int64_t i = 0; i < w.numel(); i += 3) w.data<float>()[i] = 0.0f;  // a third pruned
  double last = 1e9;
  for (int bits : {1, 2, 3, 4, 6, 8}) {
    const CodebookQuantized q = quantize_codebook(w.data<float>(), 40, 50, bits);
    EXPECT_LE(q.centroids.size(), size_t{1} << bits);
    std::vector<float> row(50);
    double err2 = 0;
    const int64_t rb = kernels::codebook_row_bytes(50, bits);
    for (int r = 0; r < 40; ++r) {
      kernels::decode_codebook_row(q.codes.data() + r * rb, bits, 50, q.centroids.data(), row.data());
      for (int c = 0; c < 50; ++c) {
        const float v = w.data<float>()[r * 50 + c];
        if (v == 0.0f) {
          EXPECT_EQ(row[c], 0.0f) << "bits " << bits;  // the zero centroid keeps pruning exact
        }
        err2 += (v - row[c]) * (v - row[c]);
      }
    }
    EXPECT_LT(err2, last) << "bits " << bits;
    last = err2;
  }
  EXPECT_THROW(quantize_codebook(w.data<float>(), 40, 50, 9), Error);
}

TEST(WeightOnly, CodebookRewritesGemmAndMatMulAndStaysCloseToFloat) {
  const Model float_model = mlp();
  const Tensor x = random_tensor({3, 64}, -1.0f, 1.0f, 5);
  const Tensor ref = run_model(float_model, {{"x", x}});
  std::vector<double> err;
  for (int bits : {2, 4, 8}) {
    Model m = float_model;
    WeightOnlyOptions o;
    o.scheme = WeightOnlyScheme::kCodebook;
    o.bits = bits;
    const WeightOnlyReport r = quantize_weights_only(m, o);
    ASSERT_EQ(r.tensors.size(), 2u);
    EXPECT_EQ(r.scheme, WeightOnlyScheme::kCodebook);
    int cb = 0;
    for (const Node& n : m.graph.nodes) cb += n.op_type == "CodebookGemm" && n.domain == "ai.xnn";
    EXPECT_EQ(cb, 2);
    EXPECT_EQ(r.tensors[0].centroids, int64_t{1} << bits);
    EXPECT_EQ(r.tensors[0].bytes_after, 96 * kernels::codebook_row_bytes(64, bits) + r.tensors[0].centroids * 4);
    err.push_back(max_abs_diff(run_model(m, {{"x", x}}), ref));
    EXPECT_LT(max_abs_diff(run_model(m, {{"x", x}}, false), run_model(m, {{"x", x}})), 1e-4) << "bits " << bits;
    const Model back = load_xnn_bytes(serialize_xnn(m).data(), serialize_xnn(m).size(), "memory");
    EXPECT_EQ(max_abs_diff(run_model(back, {{"x", x}}), run_model(m, {{"x", x}})), 0.0);
  }
  EXPECT_LT(err[2], err[1]);
  EXPECT_LT(err[1], err[0]);
  EXPECT_LT(err[2], 0.02);  // as row-wise 8-bit
}

TEST(WeightOnly, CodebookEmbeddingLookupIsExactlyTheDecodedTable) {
  const Model float_model = embedding_bag();
  const Tensor ids = ids_tensor();
  Model m = float_model;
  WeightOnlyOptions o;
  o.scheme = WeightOnlyScheme::kCodebook;
  o.bits = 4;
  const WeightOnlyReport r = quantize_weights_only(m, o);
  ASSERT_EQ(r.tensors.size(), 1u);
  EXPECT_EQ(r.bytes_after, 300 * 32 + 16 * 4);
  EXPECT_GE(double(r.bytes_before) / r.bytes_after, 7.5);
  // Lookups are exact in both paths, so the CPU kernel and the reference agree bit for bit.
  EXPECT_EQ(max_abs_diff(run_model(m, {{"ids", ids}}, false), run_model(m, {{"ids", ids}})), 0.0);
  EXPECT_LT(max_abs_diff(run_model(m, {{"ids", ids}}), run_model(float_model, {{"ids", ids}})), 0.1);
}

TEST(CodebookKernels, Avx2AndScalarMatchTheDefinitionForEveryWidthAndTableSize) {
  for (int bits = 1; bits <= 8; ++bits) {
    for (int64_t k : {1, 7, 8, 15, 16, 17, 33, 100}) {
      for (int64_t m : {1, 2, 4, 5}) {
        const int64_t n = 67;
        const Tensor w = random_tensor({n, k}, -1.0f, 1.0f, uint32_t(k * 10 + bits));
        const CodebookQuantized q = quantize_codebook(w.data<float>(), n, k, bits);
        const kernels::CodebookWeights cw{q.codes.data(), bits, n, k, kernels::codebook_row_bytes(k, bits),
                                          q.centroids.data(), static_cast<int64_t>(q.centroids.size())};
        const Tensor a = random_tensor({m, k}, -1.0f, 1.0f, uint32_t(m));
        const Tensor bias = random_tensor({n}, -1.0f, 1.0f, 3);
        Tensor ref(DType::kF32, {m, n}), fast(DType::kF32, {m, n});
        kernels::codebook_gemm_reference(a.data<float>(), m, cw, bias.data<float>(), ref.data<float>());
        for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2}) {
          if (isa == kernels::Isa::kAvx2 && !kernels::isa_supported(isa)) continue;
          kernels::f32_codebook_gemm(a.data<float>(), m, cw, bias.data<float>(), fast.data<float>(), nullptr, isa);
          EXPECT_LT(max_abs_diff(fast, ref), 1e-5 * double(k + 1)) << "bits " << bits << " k " << k << " m " << m;
        }
        if (!kernels::isa_supported(kernels::Isa::kAvx2)) continue;
        std::vector<float> table(256, 0.0f), want(static_cast<size_t>(k)), got(static_cast<size_t>(k));
        std::copy(q.centroids.begin(), q.centroids.end(), table.begin());
        kernels::decode_codebook_row(q.codes.data(), bits, k, q.centroids.data(), want.data());
        kernels::decode_codebook_row__avx2(q.codes.data(), bits, k, table.data(), cw.num_centroids, got.data());
        EXPECT_EQ(got, want) << "bits " << bits << " k " << k;
      }
    }
  }
}

TEST(CodebookOps, BadTablesAndCodesAreNamedErrors) {
  // centroids longer than 2^bits, and a code past the centroids (reference path: codes are a
  // runtime input here, so the CPU kernel declines and the op's own check runs).
  Model m = mlp();
  WeightOnlyOptions o;
  o.scheme = WeightOnlyScheme::kCodebook;
  o.bits = 2;
  quantize_weights_only(m, o);
  Graph& g = m.graph;
  Node* fc = nullptr;
  for (Node& n : g.nodes) {
    if (n.name == "fc1") fc = &n;
  }
  ASSERT_NE(fc, nullptr);
  Tensor& centroids = *g.value(fc->inputs[2]).data;
  ASSERT_EQ(centroids.numel(), 4);
  {
    Model bad = m;
    Node& n = *std::find_if(bad.graph.nodes.begin(), bad.graph.nodes.end(), [](const Node& x) { return x.name == "fc1"; });
    bad.graph.value(n.inputs[2]).data = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {5});
    try {
      run_model(bad, {{"x", random_tensor({1, 64}, -1.0f, 1.0f, 1)}});
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("2-bit codes address 1 to 4"), std::string::npos) << e.what();
    }
  }
  {
    Model bad = m;
    Node& n = *std::find_if(bad.graph.nodes.begin(), bad.graph.nodes.end(), [](const Node& x) { return x.name == "fc1"; });
    bad.graph.value(n.inputs[2]).data = Tensor::from_vector<float>({1, 2, 3}, {3});  // code 3 now dangles
    try {
      run_model(bad, {{"x", random_tensor({1, 64}, -1.0f, 1.0f, 1)}});
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("is past the 3 centroids"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace xnn::quantize
