// ONNX importer tests: conformance models from Debian's libonnx-testdata (skipped when absent)
// and ModelProtos built here with the protobuf API (this file, like engine/onnx/*.cpp, may
// include onnx_pb.h). Also covers SHA-256, TensorProto conversion, legacy rewrites and
// constant folding.
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

#include <unistd.h>

#include "engine/core/op_registry.h"
#include "engine/core/sha256.h"
#include "engine/onnx/legacy_rewrites.h"
#include "engine/onnx/onnx_import.h"
#include "engine/onnx/onnx_tensor.h"
#include "engine/runtime/fold_constants.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

namespace fs = std::filesystem;

const fs::path kTestData = "/usr/share/libonnx-testdata/data";

// ---- ModelProto building ---------------------------------------------------------------

onnx::ModelProto make_model(int64_t opset) {
  onnx::ModelProto m;
  m.set_ir_version(opset >= 13 ? 7 : 6);
  m.set_producer_name("xnn-test");
  m.set_producer_version("1.0");
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  m.mutable_graph()->set_name("test_graph");
  return m;
}

// dims: >= 0 fixed, -1 symbolic ("N")
void set_type(onnx::ValueInfoProto* v, const std::string& name, int elem_type, const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    if (d >= 0) shape->add_dim()->set_dim_value(d);
    else shape->add_dim()->set_dim_param("N");
  }
}

void add_input(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
               int elem_type = onnx::TensorProto::FLOAT) {
  set_type(g->add_input(), name, elem_type, dims);
}

void add_output(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                int elem_type = onnx::TensorProto::FLOAT) {
  set_type(g->add_output(), name, elem_type, dims);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

void set_int(onnx::NodeProto* n, const std::string& k, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_ints(onnx::NodeProto* n, const std::string& k, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void set_float(onnx::NodeProto* n, const std::string& k, float v) {
  auto* a = n->add_attribute();
  a->set_name(k);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

onnx::TensorProto float_tensor(const std::string& name, const std::vector<float>& v, const std::vector<int64_t>& dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  return t;
}

onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& v, const std::vector<int64_t>& dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t x : v) t.add_int64_data(x);
  return t;
}

std::string serialize(const onnx::ModelProto& m) {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return bytes;
}

OnnxImportOptions options(bool checker, bool fold = true, bool shape_inference = false) {
  OnnxImportOptions o;
  o.run_checker = checker;
  o.fold_constants = fold;
  o.run_shape_inference = shape_inference;
  return o;
}

Model import_proto(const onnx::ModelProto& m, const OnnxImportOptions& options = {}) {
  const std::string bytes = serialize(m);
  return import_onnx_bytes(bytes.data(), bytes.size(), "test.onnx", "", options);
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A fresh temporary folder, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("xnn_onnx_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

std::vector<std::string> missing_ops(const std::vector<const char*>& ops) {
  std::vector<std::string> missing;
  for (const char* op : ops) {
    if (!OpRegistry::builtin().find(op)) missing.push_back(op);
  }
  return missing;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

#define SKIP_UNLESS_REGISTERED(...)                                                             \
  do {                                                                                          \
    const auto missing = missing_ops({__VA_ARGS__});                                            \
    if (!missing.empty()) GTEST_SKIP() << "ops not registered yet: " << join(missing);          \
  } while (0)

void expect_close(const Tensor& got, const Tensor& want, double atol = 1e-5, double rtol = 1e-4) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.scalar_as_double(i), w = want.scalar_as_double(i);
    ASSERT_NEAR(g, w, atol + rtol * std::fabs(w)) << "element " << i;
  }
}

// Runs a conformance test folder (model.onnx + test_data_set_0) through a Session.
void run_conformance(const fs::path& dir) {
  const Model model = import_onnx_file((dir / "model.onnx").string());
  Session session(std::make_shared<Model>(model));
  std::map<std::string, Tensor> inputs;
  const fs::path data = dir / "test_data_set_0";
  for (size_t i = 0; i < session.inputs().size(); ++i) {
    std::string name;
    Tensor t = load_onnx_tensor_file((data / ("input_" + std::to_string(i) + ".pb")).string(), &name);
    inputs[name.empty() ? session.inputs()[i].name : name] = t;
  }
  const std::vector<Tensor> outputs = session.run(inputs);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor want = load_onnx_tensor_file((data / ("output_" + std::to_string(i) + ".pb")).string());
    expect_close(outputs[i], want);
  }
}

// ---- SHA-256 -------------------------------------------------------------------------------

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the padding boundary (55/56/64 bytes) against a one-shot hash.
  for (size_t len : {55u, 56u, 63u, 64u, 65u, 119u, 120u}) {
    const std::string s(len, 'x');
    Sha256 h;
    for (char c : s) h.update(&c, 1);
    EXPECT_EQ(h.hex_digest(), sha256_hex(s)) << len;
  }
}

// ---- TensorProto -> Tensor ---------------------------------------------------------------

Tensor parse(const onnx::TensorProto& t) {
  std::string bytes;
  t.SerializeToString(&bytes);
  return parse_onnx_tensor(bytes.data(), bytes.size(), "tensor.pb");
}

TEST(OnnxTensor, RawAndTypedFields) {
  Tensor f = parse(float_tensor("f", {1.5f, -2.0f}, {2}));
  EXPECT_EQ(f.dtype(), DType::kF32);
  EXPECT_EQ(f.data<float>()[1], -2.0f);

  Tensor i = parse(int64_tensor("i", {7, -9, 11}, {3}));
  EXPECT_EQ(i.to_int_vector(), (std::vector<int64_t>{7, -9, 11}));

  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT8);
  t.add_dims(2);
  t.add_int32_data(-128);
  t.add_int32_data(127);
  Tensor i8 = parse(t);
  EXPECT_EQ(i8.data<int8_t>()[0], -128);
  EXPECT_EQ(i8.data<int8_t>()[1], 127);

  t.set_data_type(onnx::TensorProto::BOOL);
  t.clear_int32_data();
  t.add_int32_data(0);
  t.add_int32_data(5);
  Tensor b = parse(t);
  EXPECT_FALSE(b.data<bool>()[0]);
  EXPECT_TRUE(b.data<bool>()[1]);

  t.set_data_type(onnx::TensorProto::FLOAT16);
  t.clear_int32_data();
  t.add_int32_data(0x3c00);  // 1.0
  t.add_int32_data(0xc000);  // -2.0
  Tensor h = parse(t);
  EXPECT_EQ(static_cast<float>(h.data<Half>()[0]), 1.0f);
  EXPECT_EQ(static_cast<float>(h.data<Half>()[1]), -2.0f);

  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_double_data(0.25);
  Tensor dd = parse(d);
  EXPECT_EQ(dd.rank(), 0);
  EXPECT_EQ(dd.data<double>()[0], 0.25);

  onnx::TensorProto u8;
  u8.set_data_type(onnx::TensorProto::UINT8);
  u8.add_dims(3);
  u8.set_raw_data(std::string("\x01\xff\x80", 3));
  EXPECT_EQ(parse(u8).data<uint8_t>()[1], 255);
}

TEST(OnnxTensor, MalformedSizesAreErrors) {
  onnx::TensorProto t = float_tensor("w", {1, 2, 3}, {2, 2});  // 3 values for 4 elements
  try {
    parse(t);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("raw_data has 12 bytes, expected 16"), std::string::npos) << e.what();
  }
  t = float_tensor("w", {1}, {-1});
  EXPECT_THROW(parse(t), Error);
  // A shape of 2^62 elements and no data must not allocate anything.
  onnx::TensorProto huge;
  huge.set_data_type(onnx::TensorProto::FLOAT);
  huge.add_dims(int64_t{1} << 31);
  huge.add_dims(int64_t{1} << 31);
  EXPECT_THROW(parse(huge), Error);
  huge.add_dims(int64_t{1} << 31);
  EXPECT_THROW(parse(huge), Error);
  onnx::TensorProto typed = int64_tensor("i", {1, 2}, {3});
  EXPECT_THROW(parse(typed), Error);
  EXPECT_THROW(parse_onnx_tensor("\xff\xff\xff", 3, "garbage.pb"), Error);
  EXPECT_THROW(parse_onnx_tensor("", 0, "empty.pb"), Error);  // no data_type
}

TEST(OnnxTensor, UnsupportedDtypesAreReportedAsUnsupported) {
  for (int type : {onnx::TensorProto::STRING, onnx::TensorProto::INT16, onnx::TensorProto::UINT16,
                   onnx::TensorProto::UINT32, onnx::TensorProto::UINT64, onnx::TensorProto::BFLOAT16,
                   onnx::TensorProto::COMPLEX64}) {
    onnx::TensorProto t;
    t.set_name("odd");
    t.set_data_type(type);
    t.add_dims(1);
    try {
      parse(t);
      FAIL() << "expected UnsupportedError for type " << type;
    } catch (const UnsupportedError& e) {
      EXPECT_NE(std::string(e.what()).find("odd"), std::string::npos) << e.what();
    }
  }
}

TEST(OnnxTensor, LoadsFileAndReportsName) {
  TempDir dir;
  onnx::TensorProto t = float_tensor("my_input", {1, 2, 3, 4}, {2, 2});
  std::string bytes;
  t.SerializeToString(&bytes);
  write_bytes(dir.path() / "input_0.pb", bytes);
  std::string name;
  Tensor loaded = load_onnx_tensor_file((dir.path() / "input_0.pb").string(), &name);
  EXPECT_EQ(name, "my_input");
  EXPECT_EQ(loaded.shape(), (Shape{2, 2}));
  EXPECT_EQ(loaded.data<float>()[3], 4.0f);
  EXPECT_THROW(load_onnx_tensor_file((dir.path() / "missing.pb").string()), Error);
  EXPECT_THROW(load_onnx_tensor_file(dir.path().string()), Error);  // a folder
}

// ---- conformance models -----------------------------------------------------------------

TEST(OnnxImport, ConformanceReluAndAdd) {
  if (!fs::exists(kTestData / "node/test_relu")) GTEST_SKIP() << "libonnx-testdata is not installed";
  run_conformance(kTestData / "node/test_relu");
  run_conformance(kTestData / "node/test_add");
}

TEST(OnnxImport, RecordsMetadataOpsetAndHash) {
  if (!fs::exists(kTestData / "node/test_relu")) GTEST_SKIP() << "libonnx-testdata is not installed";
  const fs::path path = kTestData / "node/test_relu/model.onnx";
  const Model m = import_onnx_file(path.string());
  const std::string bytes = read_bytes(path);
  EXPECT_EQ(m.metadata.source_sha256, sha256_hex(bytes));
  EXPECT_GE(m.opset, 13);
  EXPECT_FALSE(m.metadata.producer.empty());
  ASSERT_EQ(m.graph.inputs.size(), 1u);
  const Value& x = m.graph.value(m.graph.inputs[0]);
  EXPECT_EQ(x.dtype, DType::kF32);
  EXPECT_EQ(x.shape, (std::vector<Dim>{Dim::fixed(3), Dim::fixed(4), Dim::fixed(5)}));
}

// ---- mapping --------------------------------------------------------------------------

TEST(OnnxImport, MapsInitializersInputsShapesAndNames) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {-1, 3});
  add_input(g, "w", {3});  // also an initialiser (old exporters list them as inputs): a constant
  *g->add_initializer() = float_tensor("w", {1, 2, 3}, {3});
  add_node(g, "Add", {"x", "w"}, {"s"});  // unnamed -> generated name
  add_node(g, "Relu", {"s"}, {"y"}, "relu");
  add_output(g, "y", {-1, 3});
  const Model model = import_proto(m);
  const Graph& ir = model.graph;
  ASSERT_EQ(ir.inputs.size(), 1u);
  const Value& x = ir.value(ir.inputs[0]);
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.shape, (std::vector<Dim>{Dim::named("N"), Dim::fixed(3)}));
  const int w = ir.find_value("w");
  ASSERT_GE(w, 0);
  EXPECT_TRUE(ir.value(w).is_constant());
  EXPECT_TRUE(ir.value(w).trainable);
  ASSERT_EQ(ir.nodes.size(), 2u);
  EXPECT_EQ(ir.nodes[0].name, "Add_0");
  EXPECT_EQ(ir.nodes[1].name, "relu");
  EXPECT_EQ(model.metadata.producer, "xnn-test 1.0");
  EXPECT_EQ(model.opset, 13);
  EXPECT_EQ(model.metadata.source_sha256, sha256_hex(serialize(m)));

  Session session(std::make_shared<Model>(model));
  const auto out = session.run({{"x", Tensor::from_vector<float>({-5, 0, 1, 1, 1, 1}, {2, 3})}});
  EXPECT_EQ(out[0].data<float>()[0], 0.0f);  // relu(-5 + 1)
  EXPECT_EQ(out[0].data<float>()[5], 4.0f);
}

TEST(OnnxImport, MapsEveryAttributeKind) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  auto* n = add_node(g, "Relu", {"x"}, {"y"}, "r");
  set_int(n, "i", 3);
  set_float(n, "f", 0.5f);
  set_ints(n, "is", {1, -2});
  auto* a = n->add_attribute();
  a->set_name("s");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("hello");
  a = n->add_attribute();
  a->set_name("fs");
  a->set_type(onnx::AttributeProto::FLOATS);
  a->add_floats(1.0f);
  a = n->add_attribute();
  a->set_name("ss");
  a->set_type(onnx::AttributeProto::STRINGS);
  a->add_strings("a");
  a->add_strings("b");
  a = n->add_attribute();
  a->set_name("t");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = int64_tensor("", {4, 5}, {2});
  a = n->add_attribute();  // no type: older files; inferred from the field set
  a->set_name("legacy");
  a->set_i(9);
  add_output(g, "y", {2});
  const Model model = import_proto(m, options(/*checker=*/false));
  const Node& r = model.graph.nodes.at(0);
  EXPECT_EQ(r.attr_int("i"), 3);
  EXPECT_EQ(r.attr_float("f", 0), 0.5f);
  EXPECT_EQ(r.attr_ints("is"), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(r.attr_string("s", ""), "hello");
  EXPECT_EQ(r.attr_floats("fs"), (std::vector<float>{1.0f}));
  EXPECT_EQ(*r.attrs.at("ss").get_if<std::vector<std::string>>(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.attr_tensor("t")->to_int_vector(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(r.attr_int("legacy"), 9);
}

TEST(OnnxImport, ConstantNodesBecomeConstants) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {3});
  auto* c = add_node(g, "Constant", {}, {"k"}, "k_const");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = float_tensor("", {10, 20, 30}, {3});
  add_node(g, "Add", {"x", "k"}, {"y"}, "add");
  add_output(g, "y", {3});
  const Model model = import_proto(m);
  ASSERT_EQ(model.graph.nodes.size(), 1u);
  EXPECT_EQ(model.graph.nodes[0].op_type, "Add");
  const Value& k = model.graph.value(model.graph.nodes[0].inputs[1]);
  ASSERT_TRUE(k.is_constant());
  EXPECT_FALSE(k.trainable);
  EXPECT_EQ(k.data->data<float>()[2], 30.0f);
}

TEST(OnnxImport, LibOnnxShapeInferenceIsOptIn) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {-1, 3});
  add_node(g, "Relu", {"x"}, {"r"}, "relu1");
  add_node(g, "Relu", {"r"}, {"y"}, "relu2");
  add_output(g, "y", {-1, 3});
  const Model plain = import_proto(m);
  EXPECT_FALSE(plain.graph.value(plain.graph.find_value("r")).has_shape);
  const Model inferred = import_proto(m, options(/*checker=*/true, /*fold=*/true, /*shape_inference=*/true));
  const Value& r = inferred.graph.value(inferred.graph.find_value("r"));
  EXPECT_EQ(r.dtype, DType::kF32);
  EXPECT_EQ(r.shape, (std::vector<Dim>{Dim::named("N"), Dim::fixed(3)}));
}

// If is not registered yet, so this maps without the checker-and-registry pipeline: the
// import fails on the unsupported op, but the error proves the nested graph was walked.
TEST(OnnxImport, NestedGraphsAreMappedAndCheckedForUnsupportedOps) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "cond", {}, onnx::TensorProto::BOOL);
  add_input(g, "x", {2});
  auto* iff = add_node(g, "If", {"cond"}, {"y"}, "branch");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = iff->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    auto* body = a->mutable_g();
    body->set_name(branch);
    // Reads the outer-scope value 'x'.
    add_node(body, std::string(branch) == "then_branch" ? "Relu" : "NonMaxSuppression", {"x", "x"},
             {std::string(branch) + "_out"}, std::string(branch) + "_node");
    add_output(body, std::string(branch) + "_out", {2});
  }
  add_output(g, "y", {2});
  try {
    import_proto(m, options(/*checker=*/false));
    if (OpRegistry::builtin().find("NonMaxSuppression")) GTEST_SKIP() << "NonMaxSuppression is registered now";
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("NonMaxSuppression: node 'else_branch_node'"), std::string::npos) << e.what();
  }
}

// ---- unsupported ops ---------------------------------------------------------------------

TEST(OnnxImport, ListsEveryUnsupportedOpWithNodeNames) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "boxes", {1, 4, 4});
  add_input(g, "scores", {1, 1, 4});
  add_input(g, "rois", {2, 4});
  add_input(g, "idx", {2}, onnx::TensorProto::INT64);
  add_node(g, "NonMaxSuppression", {"boxes", "scores"}, {"sel1"}, "nms_1");
  add_node(g, "NonMaxSuppression", {"boxes", "scores"}, {"sel2"}, "nms_2");
  add_node(g, "RoiAlign", {"scores", "rois", "idx"}, {"pooled"}, "roi");
  add_node(g, "RoiAlign", {"scores", "rois", "idx"}, {"pooled2"});  // unnamed
  add_output(g, "sel1", {-1, 3}, onnx::TensorProto::INT64);
  add_output(g, "sel2", {-1, 3}, onnx::TensorProto::INT64);
  add_output(g, "pooled", {2, 1, 1, 1});
  add_output(g, "pooled2", {2, 1, 1, 1});
  if (OpRegistry::builtin().find("NonMaxSuppression") || OpRegistry::builtin().find("RoiAlign")) {
    GTEST_SKIP() << "NonMaxSuppression/RoiAlign are registered now; pick other ops";
  }
  try {
    import_proto(m);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("test.onnx: 4 unsupported ops (opset 13):"), std::string::npos) << msg;
    EXPECT_NE(msg.find("NonMaxSuppression: nodes 'nms_1', 'nms_2'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("RoiAlign: nodes 'roi', 'RoiAlign_3'"), std::string::npos) << msg;
  }
}

TEST(OnnxImport, ListsCustomDomainOps) {
  onnx::ModelProto m = make_model(13);
  auto* imp = m.add_opset_import();
  imp->set_domain("com.example");
  imp->set_version(1);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "Frobnicate", {"x"}, {"y"}, "frob")->set_domain("com.example");
  add_output(g, "y", {2});
  try {
    import_proto(m);
    FAIL() << "expected UnsupportedError";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("com.example.Frobnicate: node 'frob'"), std::string::npos) << e.what();
  }
}

// ---- corrupt input ------------------------------------------------------------------------

TEST(OnnxImport, GarbageAndTruncatedBytesAreErrors) {
  EXPECT_THROW(import_onnx_bytes("", 0, "empty.onnx", ""), Error);
  const std::string text = "this is not a model, just some text\n";
  try {
    import_onnx_bytes(text.data(), text.size(), "text.onnx", "");
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("text.onnx: not a valid ONNX model"), std::string::npos) << e.what();
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 50; ++i) {
    std::string bytes(static_cast<size_t>(rng() % 512), '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    EXPECT_THROW(import_onnx_bytes(bytes.data(), bytes.size(), "random.onnx", ""), Error);
  }
  onnx::ModelProto m = make_model(13);
  add_input(m.mutable_graph(), "x", {2});
  *m.mutable_graph()->add_initializer() = float_tensor("w", std::vector<float>(64, 1.0f), {64});
  add_node(m.mutable_graph(), "Relu", {"x"}, {"y"}, "r");
  add_output(m.mutable_graph(), "y", {2});
  const std::string good = serialize(m);
  for (size_t len = 0; len < good.size(); len += 7) {
    try {
      import_onnx_bytes(good.data(), len, "truncated.onnx", "");
    } catch (const Error&) {
      // expected for most prefixes; a prefix may also happen to be a smaller valid model
    }
  }
  EXPECT_THROW(import_onnx_file("/nonexistent/model.onnx"), Error);
}

// A light version of the fuzz test: mutated conformance models load or fail with an Error.
TEST(OnnxImport, MutatedModelsNeverCrash) {
  std::vector<std::string> seeds;
  for (const char* t : {"node/test_relu", "node/test_add", "node/test_softmax_axis_1", "node/test_reshape_reordered_all_dims"}) {
    if (fs::exists(kTestData / t / "model.onnx")) seeds.push_back(read_bytes(kTestData / t / "model.onnx"));
  }
  if (seeds.empty()) GTEST_SKIP() << "libonnx-testdata is not installed";
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string bytes = seeds[static_cast<size_t>(i) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t at = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<char>(rng()); break;
        case 1: bytes.erase(at, 1 + rng() % 8); break;
        default: bytes.insert(at, 1, static_cast<char>(rng())); break;
      }
    }
    for (bool checker : {true, false}) {
      try {
        import_onnx_bytes(bytes.data(), bytes.size(), "mutated.onnx", "", options(checker));
      } catch (const Error&) {
      }
    }
  }
}

// ---- external data ------------------------------------------------------------------------

onnx::ModelProto external_data_model(const std::string& location, const std::string& offset, const std::string& length) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {4});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_entry = [&](const char* k, const std::string& v) {
    if (v.empty()) return;
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add_entry("location", location);
  add_entry("offset", offset);
  add_entry("length", length);
  add_node(g, "Add", {"x", "w"}, {"y"}, "add");
  add_output(g, "y", {4});
  return m;
}

TEST(OnnxImport, ExternalDataIsReadRelativeToTheModel) {
  TempDir dir;
  const std::vector<float> prefix = {99, 99};
  const std::vector<float> weights = {1, 2, 3, 4};
  std::string blob(reinterpret_cast<const char*>(prefix.data()), 8);
  blob += std::string(reinterpret_cast<const char*>(weights.data()), 16);
  fs::create_directories(dir.path() / "data");
  write_bytes(dir.path() / "data/weights.bin", blob);
  write_bytes(dir.path() / "model.onnx", serialize(external_data_model("data/weights.bin", "8", "16")));

  const Model model = import_onnx_file((dir.path() / "model.onnx").string());
  const int w = model.graph.find_value("w");
  ASSERT_GE(w, 0);
  ASSERT_TRUE(model.graph.value(w).is_constant());
  EXPECT_EQ(model.graph.value(w).data->data<float>()[3], 4.0f);
  Session session(std::make_shared<Model>(model));
  const auto out = session.run({{"x", Tensor::from_vector<float>({10, 10, 10, 10}, {4})}});
  EXPECT_EQ(out[0].data<float>()[0], 11.0f);
  EXPECT_EQ(out[0].data<float>()[3], 14.0f);

  // Without offset/length: the whole file, which must then match the size exactly.
  write_bytes(dir.path() / "exact.bin", std::string(reinterpret_cast<const char*>(weights.data()), 16));
  write_bytes(dir.path() / "m2.onnx", serialize(external_data_model("exact.bin", "", "")));
  EXPECT_NO_THROW(import_onnx_file((dir.path() / "m2.onnx").string()));
}

TEST(OnnxImport, ExternalDataOutsideTheModelFolderOrFileIsRejected) {
  TempDir dir;
  write_bytes(dir.path() / "w.bin", std::string(16, '\0'));
  struct Case {
    std::string location, offset, length, expect;
  };
  const std::vector<Case> cases = {
      {"../w.bin", "", "", "leaves the model's folder"},
      {"sub/../../w.bin", "", "", "leaves the model's folder"},
      {(dir.path() / "w.bin").string(), "", "", "absolute path"},
      {"w.bin", "8", "16", "exceeds"},
      {"w.bin", "17", "", "past the end"},
      {"w.bin", "0", "12", "expected 16"},
      {"w.bin", "-1", "", "not a valid size"},
      {"w.bin", "99999999999999999999", "", "not a valid size"},
      {"missing.bin", "", "", "does not exist"},
      {"", "", "", "no 'location'"},
  };
  for (const Case& c : cases) {
    write_bytes(dir.path() / "model.onnx", serialize(external_data_model(c.location, c.offset, c.length)));
    try {
      import_onnx_file((dir.path() / "model.onnx").string(), options(/*checker=*/false));
      ADD_FAILURE() << "expected an Error for location '" << c.location << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << c.location << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("initializer 'w'"), std::string::npos) << e.what();
    }
  }
  // From bytes there is no folder to resolve locations in.
  const std::string bytes = serialize(external_data_model("w.bin", "", ""));
  EXPECT_THROW(import_onnx_bytes(bytes.data(), bytes.size(), "mem.onnx", "", options(/*checker=*/false)),
               Error);
}

// ---- legacy rewrites ------------------------------------------------------------------------

// A graph "y = op(x)" with x of the given static shape, for rewrite_legacy_ops.
Graph single_node_graph(const std::string& op, const Shape& x_shape, std::map<std::string, Attribute> attrs = {}) {
  Graph g;
  Value x;
  x.name = "x";
  x.dtype = DType::kF32;
  x.has_shape = true;
  for (int64_t d : x_shape) x.shape.push_back(Dim::fixed(d));
  g.inputs.push_back(g.add_value(x));
  Value y;
  y.name = "y";
  y.dtype = DType::kF32;
  const int yi = g.add_value(y);
  g.outputs.push_back(yi);
  Node n;
  n.op_type = op;
  n.name = "n";
  n.inputs = {0};
  n.outputs = {yi};
  n.attrs = std::move(attrs);
  g.nodes.push_back(n);
  return g;
}

TEST(LegacyRewrites, SoftmaxOnLastAxisOnlyChangesTheAxis) {
  Graph g = single_node_graph("Softmax", {2, 5}, {{"axis", int64_t{1}}});
  std::vector<std::string> unsupported;
  rewrite_legacy_ops(g, 11, "m", unsupported);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].attr_int("axis"), -1);
}

TEST(LegacyRewrites, SoftmaxBefore13CoercesTo2D) {
  Graph g = single_node_graph("LogSoftmax", {2, 3, 4}, {{"axis", int64_t{1}}});
  std::vector<std::string> unsupported;
  rewrite_legacy_ops(g, 11, "m", unsupported);
  g.topological_sort();
  g.validate("m");
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"Shape", "Flatten", "LogSoftmax", "Reshape"}));
  const Node& flatten = g.nodes[1];
  EXPECT_EQ(flatten.attr_int("axis"), 1);
  EXPECT_EQ(g.nodes[2].attr_int("axis"), -1);
  const Node& reshape = g.nodes[3];
  EXPECT_EQ(reshape.inputs[1], g.nodes[0].outputs[0]);  // Reshape back to Shape(x)
  EXPECT_EQ(g.value(reshape.outputs[0]).name, "y");

  // Folding turns Shape(x) of the graph input into a constant.
  fold_constants(g);
  ASSERT_EQ(g.nodes.size(), 3u);
  const Value& shape = g.value(g.nodes[2].inputs[1]);
  ASSERT_TRUE(shape.is_constant());
  EXPECT_EQ(shape.data->to_int_vector(), (std::vector<int64_t>{2, 3, 4}));

  // Opset 13 keeps the node as it is.
  Graph g13 = single_node_graph("Softmax", {2, 3, 4}, {{"axis", int64_t{1}}});
  rewrite_legacy_ops(g13, 13, "m", unsupported);
  EXPECT_EQ(g13.nodes.size(), 1u);
  EXPECT_EQ(g13.nodes[0].attr_int("axis"), 1);
}

TEST(LegacyRewrites, SoftmaxWithDynamicShapeUsesShapeOp) {
  Graph g = single_node_graph("Softmax", {2, 3, 4});  // default axis 1
  g.value(0).shape[0] = Dim::named("N");
  std::vector<std::string> unsupported;
  rewrite_legacy_ops(g, 9, "m", unsupported);
  g.topological_sort();
  g.validate("m");
  ASSERT_EQ(g.nodes.size(), 4u);
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  EXPECT_NE(std::find(ops.begin(), ops.end(), "Shape"), ops.end());
  EXPECT_EQ(ops.back(), "Reshape");
}

// The end-to-end version: an opset-11 Softmax over axis 1 of [2,3,4] normalises 12 values per row.
TEST(LegacyRewrites, Softmax11RunsWithCoercedSemantics) {
  SKIP_UNLESS_REGISTERED("Softmax", "Flatten", "Reshape");
  onnx::ModelProto m = make_model(11);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3, 4});
  set_int(add_node(g, "Softmax", {"x"}, {"y"}, "sm"), "axis", 1);
  add_output(g, "y", {2, 3, 4});
  const Model model = import_proto(m);
  Session session(std::make_shared<Model>(model));
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i);
  const Tensor y = session.run({{"x", Tensor::from_vector<float>(x, {2, 3, 4})}})[0];
  for (int row = 0; row < 2; ++row) {
    double denom = 0;
    for (int j = 0; j < 12; ++j) denom += std::exp(static_cast<double>(x[static_cast<size_t>(row * 12 + j)]));
    for (int j = 0; j < 12; ++j) {
      const size_t i = static_cast<size_t>(row * 12 + j);
      EXPECT_NEAR(y.data<float>()[i], std::exp(static_cast<double>(x[i])) / denom, 1e-6);
    }
  }
}

TEST(LegacyRewrites, ConformanceSoftmaxOpset6) {
  SKIP_UNLESS_REGISTERED("Softmax", "LogSoftmax", "Flatten", "Reshape");
  for (const char* t : {"pytorch-converted/test_Softmax", "pytorch-converted/test_LogSoftmax",
                        "pytorch-converted/test_softmax_functional_dim3", "pytorch-converted/test_log_softmax_dim3"}) {
    if (!fs::exists(kTestData / t)) GTEST_SKIP() << "libonnx-testdata is not installed";
    SCOPED_TRACE(t);
    run_conformance(kTestData / t);
  }
}

TEST(LegacyRewrites, AttributesBecomeInputs) {
  std::vector<std::string> unsupported;
  Graph clip = single_node_graph("Clip", {4}, {{"max", 6.0f}});
  rewrite_legacy_ops(clip, 6, "m", unsupported);
  ASSERT_EQ(clip.nodes[0].inputs.size(), 3u);
  EXPECT_EQ(clip.nodes[0].inputs[1], -1);  // no min
  EXPECT_EQ(clip.value(clip.nodes[0].inputs[2]).data->data<float>()[0], 6.0f);
  EXPECT_FALSE(clip.nodes[0].has_attr("max"));

  Graph pad = single_node_graph("Pad", {2, 2}, {{"pads", std::vector<int64_t>{0, 1, 0, 1}}, {"value", 1.5f}});
  rewrite_legacy_ops(pad, 2, "m", unsupported);
  ASSERT_EQ(pad.nodes[0].inputs.size(), 3u);
  EXPECT_EQ(pad.value(pad.nodes[0].inputs[1]).data->to_int_vector(), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(pad.value(pad.nodes[0].inputs[2]).data->data<float>()[0], 1.5f);

  Graph slice = single_node_graph("Slice", {4, 4},
                                  {{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{3}},
                                   {"axes", std::vector<int64_t>{1}}});
  rewrite_legacy_ops(slice, 9, "m", unsupported);
  ASSERT_EQ(slice.nodes[0].inputs.size(), 4u);
  EXPECT_EQ(slice.value(slice.nodes[0].inputs[3]).data->to_int_vector(), (std::vector<int64_t>{1}));
  EXPECT_TRUE(slice.nodes[0].attrs.empty());

  Graph up = single_node_graph("Upsample", {1, 1, 2, 2}, {{"scales", std::vector<float>{1, 1, 2, 2}}});
  rewrite_legacy_ops(up, 8, "m", unsupported);
  const Node& resize = up.nodes[0];
  EXPECT_EQ(resize.op_type, "Resize");
  ASSERT_EQ(resize.inputs.size(), 3u);
  EXPECT_EQ(resize.inputs[1], -1);
  EXPECT_EQ(up.value(resize.inputs[2]).data->data<float>()[3], 2.0f);
  EXPECT_EQ(resize.attr_string("coordinate_transformation_mode", ""), "asymmetric");
  EXPECT_EQ(resize.attr_string("nearest_mode", ""), "floor");

  Graph reshape = single_node_graph("Reshape", {2, 3}, {{"shape", std::vector<int64_t>{3, 2}}});
  rewrite_legacy_ops(reshape, 4, "m", unsupported);
  ASSERT_EQ(reshape.nodes[0].inputs.size(), 2u);
  EXPECT_EQ(reshape.value(reshape.nodes[0].inputs[1]).data->to_int_vector(), (std::vector<int64_t>{3, 2}));

  Graph cast = single_node_graph("Cast", {2}, {{"to", "INT64"}});
  rewrite_legacy_ops(cast, 5, "m", unsupported);
  EXPECT_EQ(cast.nodes[0].attr_int("to"), 7);

  Graph bn = single_node_graph("BatchNormalization", {1, 2, 2, 2}, {{"spatial", int64_t{0}}});
  rewrite_legacy_ops(bn, 7, "m", unsupported);
  ASSERT_EQ(unsupported.size(), 1u);
  EXPECT_NE(unsupported[0].find("spatial=0"), std::string::npos);
}

// Opset < 7 broadcasting with `axis` needs the rank of A, here an intermediate whose shape is
// only known by propagating static shapes during the rewrite walk.
TEST(LegacyRewrites, LegacyBroadcastAlignsBOnAnIntermediate) {
  Graph g = single_node_graph("Relu", {1, 3, 4, 4});
  const int r = g.nodes[0].outputs[0];
  g.value(r).dtype = DType::kUnknown;  // nothing declared about the Relu's output
  const int bias = g.add_constant("bias", Tensor::from_vector<float>({1, 2, 3}, {3}));
  Value sum;
  sum.name = "sum";
  const int sum_index = g.add_value(sum);
  Node add;
  add.op_type = "Add";
  add.name = "add";
  add.inputs = {r, bias};
  add.outputs = {sum_index};
  add.attrs = {{"broadcast", int64_t{1}}, {"axis", int64_t{1}}};
  g.nodes.push_back(add);
  g.outputs = {sum_index};
  std::vector<std::string> unsupported;
  rewrite_legacy_ops(g, 6, "m", unsupported);
  EXPECT_TRUE(unsupported.empty()) << unsupported.front();
  const Node& rewritten = g.nodes.back();
  EXPECT_TRUE(rewritten.attrs.empty());
  const Value& aligned = g.value(rewritten.inputs[1]);
  ASSERT_TRUE(aligned.is_constant());
  EXPECT_EQ(aligned.data->shape(), (Shape{3, 1, 1}));
}

TEST(LegacyRewrites, ConformanceLegacyForms) {
  if (!fs::exists(kTestData / "pytorch-converted")) GTEST_SKIP() << "libonnx-testdata is not installed";
  struct Case {
    const char* dir;
    std::vector<const char*> ops;
  };
  const std::vector<Case> cases = {
      {"pytorch-operator/test_operator_clip", {"Clip"}},
      {"pytorch-converted/test_ConstantPad2d", {"Pad"}},
      {"pytorch-converted/test_ReflectionPad2d", {"Pad"}},
      {"pytorch-operator/test_operator_index", {"Slice", "Squeeze"}},
      {"pytorch-operator/test_operator_add_broadcast", {"Add"}},
      {"pytorch-operator/test_operator_add_size1_right_broadcast", {"Add"}},
      {"pytorch-converted/test_BatchNorm2d_eval", {"BatchNormalization"}},
      {"node/test_upsample_nearest", {"Resize"}},
      {"pytorch-converted/test_PReLU_2d_multiparam", {"PRelu"}},
  };
  int ran = 0;
  for (const Case& c : cases) {
    if (!fs::exists(kTestData / c.dir) || !missing_ops(c.ops).empty()) continue;
    SCOPED_TRACE(c.dir);
    run_conformance(kTestData / c.dir);
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "none of the ops these legacy models need is registered yet";
}

// ---- constant folding --------------------------------------------------------------------

// IR building for the folding tests. `shape` empty with has_shape false: unknown.
int ir_value(Graph& g, const std::string& name, DType dtype = DType::kUnknown, std::optional<Shape> shape = {}) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  if (shape) {
    v.has_shape = true;
    for (int64_t d : *shape) v.shape.push_back(Dim::fixed(d));
  }
  return g.add_value(std::move(v));
}

void ir_node(Graph& g, const std::string& op, const std::string& name, std::vector<int> inputs,
             std::vector<int> outputs, std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = std::move(attrs);
  g.nodes.push_back(std::move(n));
}

TEST(FoldConstants, FoldsConstantSubgraphsAndRemovesDeadCode) {
  Graph g;
  const int x = ir_value(g, "x", DType::kF32, Shape{2});
  g.inputs.push_back(x);
  const int a = g.add_constant("a", Tensor::from_vector<float>({1, -2}, {2}));
  const int b = g.add_constant("b", Tensor::from_vector<float>({3, 4}, {2}));
  const int unused = g.add_constant("unused", Tensor::from_vector<float>({0}, {1}));
  (void)unused;
  const int ab = ir_value(g, "ab");
  const int relu_ab = ir_value(g, "relu_ab");
  const int y = ir_value(g, "y");
  const int dead = ir_value(g, "dead");
  ir_node(g, "Add", "add_ab", {a, b}, {ab});
  ir_node(g, "Relu", "relu", {ab}, {relu_ab});
  ir_node(g, "Add", "add_x", {x, relu_ab}, {y});
  ir_node(g, "Relu", "dead_relu", {x}, {dead});
  g.outputs = {y, ab};  // ab: an output that becomes a constant stays an output
  const FoldStats stats = fold_constants(g);
  g.validate("folded");
  EXPECT_EQ(stats.folded_nodes, 2);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].name, "add_x");
  const Value& folded = g.value(g.nodes[0].inputs[1]);
  ASSERT_TRUE(folded.is_constant());
  EXPECT_EQ(folded.data->data<float>()[0], 4.0f);
  EXPECT_EQ(folded.data->data<float>()[1], 2.0f);
  ASSERT_EQ(g.outputs.size(), 2u);
  EXPECT_EQ(g.value(g.outputs[1]).name, "ab");
  EXPECT_TRUE(g.value(g.outputs[1]).is_constant());
  EXPECT_EQ(g.find_value("unused"), -1);
  EXPECT_EQ(g.find_value("dead"), -1);
  EXPECT_EQ(g.find_value("a"), -1);
  // y's static shape was propagated by inference.
  EXPECT_TRUE(g.value(g.outputs[0]).shape_fully_known());
}

TEST(FoldConstants, SkipsHugeOutputsAndUnknownOps) {
  Graph g;
  const int a = g.add_constant("a", Tensor(DType::kF32, {4096, 1}));
  const int b = g.add_constant("b", Tensor(DType::kF32, {1, 4097}));  // sum: just over 64 MiB
  const int big = ir_value(g, "big");
  const int c = ir_value(g, "c");
  ir_node(g, "Add", "huge", {a, b}, {big});
  ir_node(g, "NoSuchOp", "mystery", {a}, {c});
  g.outputs = {big, c};
  fold_constants(g);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_FALSE(g.value(g.outputs[0]).is_constant());
  EXPECT_EQ(g.value(g.outputs[0]).static_shape(), (Shape{4096, 4097}));  // shape still learnt
  EXPECT_FALSE(g.value(g.outputs[1]).is_constant());
}

TEST(FoldConstants, ShapeOfStaticShapeBecomesConstant) {
  Graph g;
  const int x = ir_value(g, "x", DType::kF32, Shape{2, 3, 5});
  g.inputs.push_back(x);
  const int r = ir_value(g, "r");
  const int s = ir_value(g, "s");
  const int tail = ir_value(g, "tail");
  ir_node(g, "Relu", "relu", {x}, {r});
  ir_node(g, "Shape", "shape", {r}, {s});
  ir_node(g, "Shape", "shape_tail", {x}, {tail}, {{"start", int64_t{-2}}});
  g.outputs = {s, tail, r};
  fold_constants(g);
  ASSERT_EQ(g.nodes.size(), 1u);  // only the Relu remains
  EXPECT_EQ(g.value(g.outputs[0]).data->to_int_vector(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(g.value(g.outputs[1]).data->to_int_vector(), (std::vector<int64_t>{3, 5}));
}

// value_info may be stale or wrong, and nothing checks it at run time: a Shape of a value whose
// static shape is only declared stays a run-time computation.
TEST(FoldConstants, DeclaredIntermediateShapesAreNotTrusted) {
  Graph g;
  const int x = ir_value(g, "x", DType::kF32);  // graph input without a declared shape
  g.inputs.push_back(x);
  const int r = ir_value(g, "r", DType::kF32, Shape{7, 7});  // declared by value_info only
  const int s = ir_value(g, "s");
  ir_node(g, "Relu", "relu", {x}, {r});
  ir_node(g, "Shape", "shape", {r}, {s});
  g.outputs = {s};
  fold_constants(g);
  EXPECT_EQ(g.nodes.size(), 2u);
  EXPECT_FALSE(g.value(g.outputs[0]).is_constant());
}

// PyTorch's x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
TEST(FoldConstants, PyTorchReshapeChainFoldsToOneReshape) {
  SKIP_UNLESS_REGISTERED("Shape", "Gather", "Unsqueeze", "Concat", "Reshape");
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3, 4});
  *g->add_initializer() = int64_tensor("zero", {0}, {});
  *g->add_initializer() = int64_tensor("axes0", {0}, {1});
  *g->add_initializer() = int64_tensor("minus_one", {-1}, {1});
  add_node(g, "Shape", {"x"}, {"shape"}, "shape");
  add_node(g, "Gather", {"shape", "zero"}, {"batch"}, "gather");
  add_node(g, "Unsqueeze", {"batch", "axes0"}, {"batch_1d"}, "unsqueeze");
  set_int(add_node(g, "Concat", {"batch_1d", "minus_one"}, {"target"}, "concat"), "axis", 0);
  add_node(g, "Reshape", {"x", "target"}, {"y"}, "reshape");
  add_output(g, "y", {2, 12});
  const Model model = import_proto(m);
  ASSERT_EQ(model.graph.nodes.size(), 1u);
  const Node& reshape = model.graph.nodes[0];
  EXPECT_EQ(reshape.op_type, "Reshape");
  const Value& target = model.graph.value(reshape.inputs[1]);
  ASSERT_TRUE(target.is_constant());
  EXPECT_EQ(target.data->to_int_vector(), (std::vector<int64_t>{2, -1}));
  EXPECT_EQ(model.graph.values.size(), 3u);  // x, the folded target, y

  Session session(std::make_shared<Model>(model));
  const Tensor y = session.run({{"x", Tensor(DType::kF32, {2, 3, 4})}})[0];
  EXPECT_EQ(y.shape(), (Shape{2, 12}));

  // Without folding the chain stays and computes the same.
  const Model unfolded = import_proto(m, options(/*checker=*/true, /*fold=*/false));
  EXPECT_EQ(unfolded.graph.nodes.size(), 5u);
}

// ---- timing -------------------------------------------------------------------------------

// Reports import time for the biggest model available (set XNN_IMPORT_TIMING_MODEL to time a
// specific file, e.g. a torchvision export).
TEST(OnnxImport, ImportTimeOfLargestAvailableModel) {
  fs::path largest;
  if (const char* env = std::getenv("XNN_IMPORT_TIMING_MODEL")) {
    largest = env;
  } else if (fs::exists(kTestData)) {
    uintmax_t best = 0;
    for (const char* suite : {"real", "pytorch-converted", "simple"}) {
      if (!fs::exists(kTestData / suite)) continue;
      for (const auto& entry : fs::recursive_directory_iterator(kTestData / suite)) {
        if (entry.path().filename() == "model.onnx" && entry.file_size() > best) {
          best = entry.file_size();
          largest = entry.path();
        }
      }
    }
  }
  if (largest.empty()) GTEST_SKIP() << "no model to time";
  const auto start = std::chrono::steady_clock::now();
  try {
    const Model m = import_onnx_file(largest.string());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ timing ] imported %s (%ju bytes, %zu nodes) in %.1f ms\n", largest.c_str(),
                static_cast<uintmax_t>(fs::file_size(largest)), m.graph.nodes.size(), ms);
  } catch (const UnsupportedError& e) {
    GTEST_SKIP() << largest << " uses unsupported ops: " << e.what();
  }
}

}  // namespace
}  // namespace xnn
