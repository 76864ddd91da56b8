#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <random>

#include "engine/format/xnn_format.h"
#include "engine/format/xnn_generated.h"
#include "engine/format/xnn_layout.h"

namespace xnn {
namespace {

namespace fs = std::filesystem;
using xnn_file::align_up;

// ---- helpers -----------------------------------------------------------------------------

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("xnn_format_test_" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The message of the xnn::Error `fn` throws ("" and a test failure when it throws nothing).
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an xnn::Error";
  return "";
}

Model load_bytes(const std::string& bytes, const std::string& name = "mem.xnn") {
  return load_xnn_bytes(bytes.data(), bytes.size(), name);
}

Dim unknown_dim() { return Dim{}; }

Value runtime_value(const std::string& name, DType dtype, std::optional<std::vector<Dim>> shape = std::nullopt) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.has_shape = shape.has_value();
  if (shape) v.shape = *shape;
  return v;
}

Value outer_value(const std::string& name, DType dtype) {
  Value v = runtime_value(name, dtype);
  v.outer_scope = true;
  return v;
}

Node make_node(const std::string& op, const std::string& name, std::vector<int> inputs, std::vector<int> outputs) {
  Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

// A model touching every field the format carries: constants of every dtype (scalar and empty
// ones too), quantisation, symbolic and unknown dims, attributes of every kind, subgraphs two
// levels deep reading outer-scope values, optional inputs/outputs, metadata.
Model make_rich_model() {
  Model m;
  m.opset = 17;
  m.metadata.producer = "pytorch 1.13";
  m.metadata.source_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  m.metadata.options = {{"opt_level", "2"}, {"source", "resnet18.onnx"}};

  Graph& g = m.graph;
  g.name = "main";
  const int x = g.add_value(runtime_value("x", DType::kF32, std::vector<Dim>{Dim::named("batch"), Dim::fixed(3),
                                                                              unknown_dim(), Dim::fixed(8)}));
  const int cond = g.add_value(runtime_value("cond", DType::kBool, std::vector<Dim>{}));
  const int w = g.add_constant("w_f32", Tensor::from_vector<float>({1.5f, -2.0f, 0.0f, -0.0f, 1e-30f, 3.25f}, {2, 3}));
  g.value(w).trainable = true;
  g.add_constant("w_f16", Tensor::from_vector<Half>({Half(1.0f), Half(-0.5f), Half(65504.0f),
                                                     Half(std::numeric_limits<float>::infinity())}, {4}));
  g.add_constant("mask", Tensor::from_vector<bool>({true, false, true, true, false}, {5}));
  const int axis = g.add_constant("axis", Tensor::scalar<int64_t>(-7));
  g.add_constant("empty", Tensor(DType::kF32, {0, 3}));
  const int q = g.add_constant("q", Tensor::from_vector<int8_t>({-128, -1, 0, 127}, {4}));
  g.value(q).quant = QuantParams{{0.5f, 0.25f, 0.125f, 1.0f}, {0, 1, -1, 3}, 0};
  const int u8 = g.add_constant("u8", Tensor::from_vector<uint8_t>({0, 128, 255}, {3}));
  g.value(u8).quant = QuantParams{{0.02f}, {128}, -1};
  g.add_constant("i32", Tensor::from_vector<int32_t>({std::numeric_limits<int32_t>::min(), 42}, {2}));
  g.add_constant("f64", Tensor::from_vector<double>({3.141592653589793, -1e300}, {2}));
  const int y = g.add_value(runtime_value("y", DType::kF32));
  const int z = g.add_value(runtime_value("z", DType::kUnknown));
  const int y2 = g.add_value(runtime_value("y2", DType::kF32, std::vector<Dim>{Dim::named("batch"), Dim::named("n")}));
  g.inputs = {x, cond};
  g.outputs = {y, z, y2};

  // Subgraphs: "then" reads x from the enclosing graph; "else" nests another If.
  auto then_branch = std::make_shared<Graph>();
  then_branch->name = "then";
  {
    const int outer_x = then_branch->add_value(outer_value("x", DType::kF32));
    const int c = then_branch->add_constant("c", Tensor::from_vector<float>({2.0f}, {1}));
    const int t = then_branch->add_value(runtime_value("t", DType::kF32));
    Node mul = make_node("Mul", "mul", {outer_x, c}, {t});
    mul.attrs["scale_tensor"] = Tensor::from_vector<Half>({Half(0.25f), Half(-3.0f)}, {2});
    then_branch->nodes.push_back(mul);
    then_branch->outputs = {t};
  }
  auto leaf = std::make_shared<Graph>();
  leaf->name = "leaf";
  leaf->outputs = {leaf->add_constant("k", Tensor::from_vector<int32_t>({5, 6}, {2}))};
  auto else_branch = std::make_shared<Graph>();
  else_branch->name = "else";
  {
    const int outer_cond = else_branch->add_value(outer_value("cond", DType::kBool));
    else_branch->add_value(outer_value("w_f32", DType::kF32));
    const int r = else_branch->add_value(runtime_value("r", DType::kI32));
    Node inner = make_node("If", "inner_if", {outer_cond}, {r});
    inner.attrs["then_branch"] = leaf;
    inner.attrs["else_branch"] = leaf;  // shared pointers are written as two copies
    else_branch->nodes.push_back(inner);
    else_branch->outputs = {r};
  }
  auto branch_a = std::make_shared<Graph>();
  branch_a->name = "branch_a";
  branch_a->add_constant("a", Tensor::from_vector<uint8_t>({9}, {1}));
  auto branch_b = std::make_shared<Graph>();  // an empty graph

  Node add = make_node("Add", "add0", {x, w}, {y});
  add.attrs["count"] = int64_t{-5};
  add.attrs["alpha"] = -0.0f;
  add.attrs["mode"] = "nearest";
  add.attrs["pads"] = std::vector<int64_t>{0, 1, -1, std::numeric_limits<int64_t>::max()};
  add.attrs["scales"] = std::vector<float>{1.5f, std::numeric_limits<float>::quiet_NaN(), -0.0f};
  add.attrs["labels"] = std::vector<std::string>{"a", "", "\xc3\xbcn\xc3\xaf"};
  add.attrs["value"] = Tensor::from_vector<int64_t>({1, -2, 3}, {3});
  add.attrs["empty_value"] = Tensor(DType::kBool, {2, 0});
  add.attrs["branches"] = std::vector<std::shared_ptr<Graph>>{branch_a, branch_b};
  add.attrs["no_graphs"] = std::vector<std::shared_ptr<Graph>>{};
  g.nodes.push_back(add);

  Node clip = make_node("Clip", "clip", {y, -1, axis}, {y2, -1});
  clip.domain = "com.example";
  g.nodes.push_back(clip);

  Node if_node = make_node("If", "if0", {cond}, {z});
  if_node.attrs["then_branch"] = then_branch;
  if_node.attrs["else_branch"] = else_branch;
  g.nodes.push_back(if_node);
  g.validate("rich model");
  return m;
}

void expect_tensor_eq(const Tensor& a, const Tensor& b, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(a.defined());
  ASSERT_TRUE(b.defined());
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.nbytes(), b.nbytes());
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << "tensor bytes differ";
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

void expect_graph_eq(const Graph& a, const Graph& b, const std::string& where);

void expect_attr_eq(const Attribute& a, const Attribute& b, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(a.kind(), b.kind());
  switch (a.kind()) {
    case Attribute::Kind::kInt: EXPECT_EQ(*a.get_if<int64_t>(), *b.get_if<int64_t>()); break;
    case Attribute::Kind::kFloat: EXPECT_TRUE(same_bits(*a.get_if<float>(), *b.get_if<float>())); break;
    case Attribute::Kind::kString: EXPECT_EQ(*a.get_if<std::string>(), *b.get_if<std::string>()); break;
    case Attribute::Kind::kInts: EXPECT_EQ(*a.get_if<std::vector<int64_t>>(), *b.get_if<std::vector<int64_t>>()); break;
    case Attribute::Kind::kFloats: {
      const auto& fa = *a.get_if<std::vector<float>>();
      const auto& fb = *b.get_if<std::vector<float>>();
      ASSERT_EQ(fa.size(), fb.size());
      for (size_t i = 0; i < fa.size(); ++i) EXPECT_TRUE(same_bits(fa[i], fb[i])) << "element " << i;
      break;
    }
    case Attribute::Kind::kStrings:
      EXPECT_EQ(*a.get_if<std::vector<std::string>>(), *b.get_if<std::vector<std::string>>());
      break;
    case Attribute::Kind::kTensor: expect_tensor_eq(*a.get_if<Tensor>(), *b.get_if<Tensor>(), what); break;
    case Attribute::Kind::kGraph:
      expect_graph_eq(**a.get_if<std::shared_ptr<Graph>>(), **b.get_if<std::shared_ptr<Graph>>(), what);
      break;
    case Attribute::Kind::kGraphs: {
      const auto& ga = *a.get_if<std::vector<std::shared_ptr<Graph>>>();
      const auto& gb = *b.get_if<std::vector<std::shared_ptr<Graph>>>();
      ASSERT_EQ(ga.size(), gb.size());
      for (size_t i = 0; i < ga.size(); ++i) expect_graph_eq(*ga[i], *gb[i], what + "[" + std::to_string(i) + "]");
      break;
    }
  }
}

void expect_graph_eq(const Graph& a, const Graph& b, const std::string& where) {
  SCOPED_TRACE("graph " + where);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    const Value& va = a.values[i];
    const Value& vb = b.values[i];
    SCOPED_TRACE("value " + va.name);
    EXPECT_EQ(va.name, vb.name);
    EXPECT_EQ(va.dtype, vb.dtype);
    EXPECT_EQ(va.has_shape, vb.has_shape);
    EXPECT_EQ(va.shape, vb.shape);
    EXPECT_EQ(va.trainable, vb.trainable);
    EXPECT_EQ(va.outer_scope, vb.outer_scope);
    EXPECT_EQ(va.quant, vb.quant);
    ASSERT_EQ(va.data.has_value(), vb.data.has_value());
    if (va.data) expect_tensor_eq(*va.data, *vb.data, "data of " + va.name);
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node& na = a.nodes[i];
    const Node& nb = b.nodes[i];
    SCOPED_TRACE(na.describe());
    EXPECT_EQ(na.op_type, nb.op_type);
    EXPECT_EQ(na.name, nb.name);
    EXPECT_EQ(na.domain, nb.domain);
    EXPECT_EQ(na.inputs, nb.inputs);
    EXPECT_EQ(na.outputs, nb.outputs);
    ASSERT_EQ(na.attrs.size(), nb.attrs.size());
    for (const auto& [key, attr] : na.attrs) {
      ASSERT_TRUE(nb.has_attr(key)) << key;
      expect_attr_eq(attr, nb.attrs.at(key), "attribute " + key);
    }
  }
}

void expect_model_eq(const Model& a, const Model& b) {
  EXPECT_EQ(a.opset, b.opset);
  EXPECT_EQ(a.metadata.producer, b.metadata.producer);
  EXPECT_EQ(a.metadata.source_sha256, b.metadata.source_sha256);
  EXPECT_EQ(a.metadata.options, b.metadata.options);
  expect_graph_eq(a.graph, b.graph, "main");
}

// Every constant tensor of a graph, its subgraphs and tensor attributes.
void for_each_constant(const Graph& g, const std::function<void(const Tensor&)>& fn) {
  for (const Value& v : g.values) {
    if (v.data) fn(*v.data);
  }
  for (const Node& n : g.nodes) {
    for (const auto& [key, attr] : n.attrs) {
      if (const Tensor* t = attr.get_if<Tensor>()) fn(*t);
      if (const auto* sub = attr.get_if<std::shared_ptr<Graph>>()) for_each_constant(**sub, fn);
      if (const auto* subs = attr.get_if<std::vector<std::shared_ptr<Graph>>>()) {
        for (const auto& sub : *subs) for_each_constant(*sub, fn);
      }
    }
  }
}

// Reads every byte of every constant, so sanitizers see any view that escapes its storage.
uint64_t touch_constants(const Model& m) {
  uint64_t sum = 0;
  for_each_constant(m.graph, [&](const Tensor& t) {
    const auto* p = static_cast<const uint8_t*>(t.raw());
    for (size_t i = 0; i < t.nbytes(); ++i) sum += p[i];
  });
  return sum;
}

// ---- hand-made files, for what our writer refuses to produce -----------------------------

struct CraftSpec {
  fb::DType dtype = fb::DType::F32;
  std::vector<int64_t> dims = {2};
  fb::WeightEncoding encoding = fb::WeightEncoding::Dense;
  uint64_t blob_offset = 0;  // relative to the data section
  uint64_t blob_size = 8;
  int relu_input = 0;
  uint32_t model_format_version = kXnnFormatVersion;
  int nesting = 0;           // how many If bodies wrap the graph holding the constant
  std::string data_section = std::string(64, '\0');
};

// values: 0 "w" (the constant), 1 "y"; node "relu1": Relu(values[relu_input]) -> y.
flatbuffers::Offset<fb::Model> craft_model(flatbuffers::FlatBufferBuilder& fbb, const CraftSpec& spec,
                                           uint64_t data_offset) {
  auto blob = fb::CreateBlobRef(fbb, data_offset + spec.blob_offset, spec.blob_size);
  auto tensor = fb::CreateTensorRef(fbb, spec.dtype, fbb.CreateVector(spec.dims), spec.encoding, blob);
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      fb::CreateValue(fbb, fbb.CreateString("w"), spec.dtype, false, 0, 0, tensor),
      fb::CreateValue(fbb, fbb.CreateString("y"), fb::DType::F32)};
  std::vector<int> relu_inputs = {spec.relu_input};
  std::vector<int> relu_outputs = {1};
  std::vector<flatbuffers::Offset<fb::Node>> nodes = {fb::CreateNodeDirect(fbb, "Relu", "", "relu1", &relu_inputs,
                                                                           &relu_outputs)};
  std::vector<int> outputs = {1};
  auto graph = fb::CreateGraphDirect(fbb, "g0", &values, &nodes, nullptr, &outputs);
  for (int level = 1; level <= spec.nesting; ++level) {
    std::vector<flatbuffers::Offset<fb::Attr>> attrs = {
        fb::CreateAttr(fbb, fbb.CreateString("then_branch"), fb::AttrKind::Graph, 0, 0.0f, 0, 0, 0, 0, 0, graph)};
    std::vector<flatbuffers::Offset<fb::Node>> wrapper = {
        fb::CreateNodeDirect(fbb, "If", "", ("if" + std::to_string(level)).c_str(), nullptr, nullptr, &attrs)};
    graph = fb::CreateGraphDirect(fbb, ("g" + std::to_string(level)).c_str(), nullptr, &wrapper);
  }
  return fb::CreateModel(fbb, spec.model_format_version, 13, 0, 0, 0, graph);
}

std::string craft_file(const CraftSpec& spec) {
  uint64_t data_offset = xnn_file::kHeaderSize;
  for (int pass = 0; pass < 3; ++pass) {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.ForceDefaults(true);
    fbb.Finish(craft_model(fbb, spec, data_offset));
    const uint64_t fb_size = align_up(fbb.GetSize(), 8);
    const uint64_t needed = align_up(xnn_file::kHeaderSize + fb_size, 64);
    if (needed != data_offset) {
      data_offset = needed;
      continue;
    }
    xnn_file::Header h;
    h.flatbuffer_offset = xnn_file::kHeaderSize;
    h.flatbuffer_size = fb_size;
    h.data_offset = data_offset;
    h.data_size = spec.data_section.size();
    h.file_size = data_offset + h.data_size;
    std::string out = xnn_file::encode_header(h);
    out.append(reinterpret_cast<const char*>(fbb.GetBufferPointer()), fbb.GetSize());
    out.resize(data_offset, '\0');
    return out + spec.data_section;
  }
  ADD_FAILURE() << "crafted layout did not settle";
  return "";
}

// Rewrites the header of a serialized file.
std::string with_header(std::string file, const std::function<void(xnn_file::Header&)>& edit) {
  xnn_file::Header h = xnn_file::decode_header(reinterpret_cast<const uint8_t*>(file.data()), file.size(), "t");
  edit(h);
  return file.replace(0, xnn_file::kHeaderSize, xnn_file::encode_header(h));
}

// ---- round trip ----------------------------------------------------------------------------

TEST(XnnFormat, RoundTripsEveryFieldThroughAFile) {
  TempDir dir;
  const std::string path = dir.file("rich.xnn");
  const Model original = make_rich_model();
  XnnSaveOptions options;
  options.extra_options = {{"opt_level", "3"}, {"quantised", "no"}};
  save_xnn(original, path, options);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  const Model loaded = load_xnn(path);
  Model expected = original;
  expected.metadata.options["opt_level"] = "3";  // extra options override the model's own
  expected.metadata.options["quantised"] = "no";
  expect_model_eq(expected, loaded);

  // What save_xnn writes is serialize_xnn's output, and it is deterministic.
  const std::string bytes = serialize_xnn(original, options);
  EXPECT_EQ(bytes, read_bytes(path));
  EXPECT_EQ(bytes, serialize_xnn(original, options));
  EXPECT_TRUE(has_xnn_magic(bytes.data(), bytes.size()));
  expect_model_eq(expected, load_bytes(bytes));
}

TEST(XnnFormat, LoadedWeightsAreReadOnlyViewsIntoTheMapping) {
  TempDir dir;
  const std::string path = dir.file("views.xnn");
  save_xnn(make_rich_model(), path);
  Tensor kept;
  {
    const Model loaded = load_xnn(path);
    const Buffer* mapping = nullptr;
    int count = 0;
    for_each_constant(loaded.graph, [&](const Tensor& t) {
      ++count;
      EXPECT_FALSE(t.buffer()->owns_memory());
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kTensorAlignment, 0u);
      if (!mapping) mapping = t.buffer().get();
      EXPECT_EQ(t.buffer().get(), mapping) << "all constants view the one mapping";
    });
    EXPECT_EQ(count, 16);
    kept = *loaded.graph.value(loaded.graph.find_value("w_f32")).data;
  }
  // The tensor keeps the mapping alive after the model is gone.
  EXPECT_EQ(kept.data<float>()[5], 3.25f);

  // From memory, the tensors view one aligned copy instead.
  const std::string bytes = read_bytes(path);
  const Model copied = load_bytes(bytes);
  for_each_constant(copied.graph, [&](const Tensor& t) {
    EXPECT_TRUE(t.buffer()->owns_memory());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % kTensorAlignment, 0u);
    EXPECT_NE(t.raw(), nullptr);
  });
}

TEST(XnnFormat, GraphNestingIsLimitedTo32Levels) {
  auto nested = [](int depth) {
    Model m;
    auto inner = std::make_shared<Graph>();
    inner->add_constant("k", Tensor::scalar<float>(1.0f));
    for (int level = 0; level < depth; ++level) {
      auto outer = std::make_shared<Graph>();
      Node n = make_node("If", "if" + std::to_string(level), {}, {});
      n.attrs["then_branch"] = inner;
      outer->nodes.push_back(n);
      inner = outer;
    }
    m.graph = *inner;
    return m;
  };
  const Model deepest = nested(32);
  expect_model_eq(deepest, load_bytes(serialize_xnn(deepest)));
  EXPECT_NE(error_of([&] { serialize_xnn(nested(33)); }).find("graph nesting deeper than 32"), std::string::npos);

  CraftSpec spec;
  spec.nesting = 33;
  const std::string message = error_of([&] { load_bytes(craft_file(spec), "deep.xnn"); });
  EXPECT_EQ(message.rfind("deep.xnn: ", 0), 0u) << message;
  EXPECT_NE(message.find("graph nesting deeper than 32"), std::string::npos) << message;
  spec.nesting = 32;
  EXPECT_NO_THROW(load_bytes(craft_file(spec)));
}

TEST(XnnFormat, WriterRefusesModelsTheReaderWouldRefuse) {
  TempDir dir;
  const std::string path = dir.file("bad.xnn");
  Model m = make_rich_model();
  m.graph.nodes[0].inputs[0] = 57;
  EXPECT_NE(error_of([&] { save_xnn(m, path); }).find("input index 57 out of range"), std::string::npos);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  Model undefined;
  Value v = runtime_value("w", DType::kF32);
  v.data = Tensor();
  undefined.graph.add_value(v);
  EXPECT_NE(error_of([&] { serialize_xnn(undefined); }).find("value 'w': constant tensor has no data"),
            std::string::npos);

  EXPECT_NE(error_of([&] { save_xnn(make_rich_model(), dir.file("no/such/dir/m.xnn")); }).find("cannot create"),
            std::string::npos);
}

TEST(XnnFormat, SaveReplacesAnExistingFile) {
  TempDir dir;
  const std::string path = dir.file("m.xnn");
  write_bytes(path, "old contents");
  save_xnn(make_rich_model(), path);
  EXPECT_NO_THROW(load_xnn(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// ---- refusing bad files -----------------------------------------------------------------------

TEST(XnnFormat, RefusesANewerFormatVersion) {
  TempDir dir;
  const std::string path = dir.file("future.xnn");
  write_bytes(path, with_header(serialize_xnn(make_rich_model()), [](xnn_file::Header& h) { h.format_version = 2; }));
  EXPECT_EQ(error_of([&] { load_xnn(path); }),
            path + ": .xnn format version 2 is newer than this build supports (1); upgrade xnn-lab");

  CraftSpec spec;
  spec.model_format_version = 2;
  EXPECT_NE(error_of([&] { load_bytes(craft_file(spec)); }).find("says format version 2"), std::string::npos);
}

TEST(XnnFormat, RefusesMissingEmptyAndForeignFiles) {
  TempDir dir;
  const std::string missing = dir.file("missing.xnn");
  EXPECT_EQ(error_of([&] { load_xnn(missing); }).rfind(missing + ": cannot open", 0), 0u);
  EXPECT_EQ(error_of([&] { load_xnn(dir.file("")); }).find("cannot open"), dir.file("").size() + 2);

  const std::string empty = dir.file("empty.xnn");
  write_bytes(empty, "");
  EXPECT_EQ(error_of([&] { load_xnn(empty); }), empty + ": file is empty, not an .xnn model");
  EXPECT_EQ(error_of([&] { load_xnn_bytes(nullptr, 0, "e.xnn"); }), "e.xnn: file is empty, not an .xnn model");

  const std::string onnx = dir.file("model.onnx");
  write_bytes(onnx, "\x08\x07\x12\x07pytorch");
  EXPECT_NE(error_of([&] { load_xnn(onnx); }).find("not an .xnn model"), std::string::npos);
}

TEST(XnnFormat, RefusesEveryTruncation) {
  const std::string bytes = serialize_xnn(make_rich_model());
  for (size_t size = 0; size < bytes.size(); ++size) {
    EXPECT_THROW(load_xnn_bytes(bytes.data(), size, "cut.xnn"), Error) << "truncated to " << size;
  }
  TempDir dir;
  const std::string path = dir.file("cut.xnn");
  write_bytes(path, bytes.substr(0, bytes.size() - 1));
  EXPECT_NE(error_of([&] { load_xnn(path); }).find("truncated"), std::string::npos);
}

TEST(XnnFormat, RefusesEveryFlippedHeaderByte) {
  const std::string bytes = serialize_xnn(make_rich_model());
  for (size_t i = 0; i < xnn_file::kHeaderSize; ++i) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0xff);
    EXPECT_THROW(load_bytes(flipped), Error) << "header byte " << i;
  }
}

TEST(XnnFormat, RefusesRandomBytes) {
  std::mt19937 rng(7);
  const std::string valid = serialize_xnn(make_rich_model());
  const size_t fb_end = xnn_file::kHeaderSize +
                        xnn_file::decode_header(reinterpret_cast<const uint8_t*>(valid.data()), valid.size(), "v")
                            .flatbuffer_size;
  for (int round = 0; round < 50; ++round) {
    std::string noise(1 + rng() % 4096, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    EXPECT_THROW(load_bytes(noise), Error);
    // With the magic in front, and with a whole valid header in front of a random FlatBuffer.
    std::memcpy(noise.data(), "XNN\x01", std::min<size_t>(4, noise.size()));
    EXPECT_THROW(load_bytes(noise), Error);
    std::string random_description = valid;
    for (size_t i = xnn_file::kHeaderSize; i < fb_end; ++i) random_description[i] = static_cast<char>(rng());
    EXPECT_THROW(load_bytes(random_description), Error);
  }
}

TEST(XnnFormat, RefusesOutOfRangeValueIndex) {
  CraftSpec spec;
  spec.relu_input = 57;
  EXPECT_EQ(error_of([&] { load_bytes(craft_file(spec), "m.xnn"); }),
            "m.xnn: node 'relu1' (Relu): input index 57 out of range (2 values)");
  spec.relu_input = -2;
  EXPECT_NE(error_of([&] { load_bytes(craft_file(spec)); }).find("input index -2 out of range"), std::string::npos);
  spec.relu_input = 0;
  EXPECT_NO_THROW(load_bytes(craft_file(spec)));
}

TEST(XnnFormat, RefusesBlobsOutsideTheDataSection) {
  CraftSpec spec;
  spec.blob_offset = 64;  // data section is 64 bytes
  EXPECT_NE(error_of([&] { load_bytes(craft_file(spec), "m.xnn"); })
                .find("m.xnn: value 'w': blob [offset "),
            std::string::npos);
  spec.blob_offset = std::numeric_limits<uint64_t>::max() - 3;  // offset + size overflows
  EXPECT_NE(error_of([&] { load_bytes(craft_file(spec)); }).find("exceeds the data section"), std::string::npos);

  // A real file whose data section lost its last 64 bytes (header patched to match).
  Model m;
  m.graph.add_constant("big", Tensor(DType::kF32, {64}));
  std::string bytes = serialize_xnn(m);
  bytes = with_header(bytes, [](xnn_file::Header& h) {
    h.data_size -= 64;
    h.file_size -= 64;
  });
  bytes.resize(bytes.size() - 64);
  EXPECT_NE(error_of([&] { load_bytes(bytes, "short.xnn"); }).find("short.xnn: value 'big': blob [offset "),
            std::string::npos);
}

TEST(XnnFormat, RefusesInconsistentConstants) {
  auto message = [](const CraftSpec& spec) { return error_of([&] { load_bytes(craft_file(spec), "m.xnn"); }); };
  auto contains = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  CraftSpec spec;
  spec.encoding = fb::WeightEncoding::SparseCSR;
  EXPECT_EQ(message(spec), "m.xnn: value 'w': weight encoding SparseCSR is not supported by this build");
  spec.encoding = static_cast<fb::WeightEncoding>(77);
  EXPECT_TRUE(contains(message(spec), "weight encoding 77 is not supported by this build"));

  spec = CraftSpec();
  spec.dtype = static_cast<fb::DType>(200);
  EXPECT_TRUE(contains(message(spec), "value 'w': dtype 200 is not known to this build"));
  spec.dtype = fb::DType::Unknown;
  EXPECT_TRUE(contains(message(spec), "dtype 'unknown'"));

  spec = CraftSpec();
  spec.blob_size = 12;
  EXPECT_EQ(message(spec), "m.xnn: value 'w': blob is 12 bytes but f32 [2] needs 8");
  spec = CraftSpec();
  spec.blob_offset = 8;
  EXPECT_TRUE(contains(message(spec), "is not 64-byte aligned"));
  spec = CraftSpec();
  spec.dims = {-2, -4};
  EXPECT_TRUE(contains(message(spec), "constant dimension -2 is negative"));
  spec.dims = {int64_t{1} << 21, int64_t{1} << 21};
  EXPECT_TRUE(contains(message(spec), "has more than 2^40 elements"));
  spec.dims = {std::numeric_limits<int64_t>::max(), 0};
  EXPECT_TRUE(contains(message(spec), "has more than 2^40 elements"));

  spec = CraftSpec();
  spec.dtype = fb::DType::Bool;
  spec.blob_size = 2;
  spec.data_section[1] = 2;
  EXPECT_TRUE(contains(message(spec), "bool element 1 is 2 (expected 0 or 1)"));
  spec.data_section[1] = 1;
  EXPECT_NO_THROW(load_bytes(craft_file(spec)));
}

// ---- mutation fuzzing -------------------------------------------------------------------------

// Deterministic mutations of a valid file must each load or throw xnn::Error: never crash,
// hang or trip a sanitizer. Most target the header and FlatBuffer, where structure lives.
TEST(XnnFormat, SurvivesMutationFuzzing) {
  const std::string valid = serialize_xnn(make_rich_model());
  const size_t fb_end = xnn_file::kHeaderSize +
                        xnn_file::decode_header(reinterpret_cast<const uint8_t*>(valid.data()), valid.size(), "v")
                            .flatbuffer_size;
  std::mt19937 rng(20240611);
  auto position = [&](bool structural) { return rng() % (structural ? fb_end : valid.size()); };
  TempDir dir;
  const std::string path = dir.file("fuzz.xnn");
  int loaded = 0;
  int refused = 0;
  for (int round = 0; round < 300; ++round) {
    std::string bytes = valid;
    switch (round % 4) {
      case 0: {  // a few bit flips
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < flips; ++k) bytes[position(rng() % 4 != 0)] ^= static_cast<char>(1u << (rng() % 8));
        break;
      }
      case 1:  // truncation (sometimes with the header fixed up to match)
        bytes.resize(rng() % bytes.size());
        if (bytes.size() >= fb_end && rng() % 2) {
          const uint64_t cut = valid.size() - bytes.size();
          bytes = with_header(valid, [&](xnn_file::Header& h) {
            h.data_size = cut > h.data_size ? 0 : h.data_size - cut;
            h.file_size -= cut;
          }).substr(0, bytes.size());
        }
        break;
      case 2: {  // a run of random bytes
        const size_t at = position(true);
        const size_t length = std::min<size_t>(1 + rng() % 16, bytes.size() - at);
        for (size_t k = 0; k < length; ++k) bytes[at + k] = static_cast<char>(rng());
        break;
      }
      case 3: {  // a 32-bit word of the FlatBuffer replaced by a small or extreme number
        const size_t at = xnn_file::kHeaderSize + (rng() % ((fb_end - xnn_file::kHeaderSize) / 4)) * 4;
        const uint32_t choices[] = {0u, 1u, 2u, 57u, 0x7fffffffu, 0x80000000u, 0xffffffffu,
                                    static_cast<uint32_t>(rng())};
        const uint32_t word = choices[rng() % 8];
        std::memcpy(&bytes[at], &word, 4);
        break;
      }
    }
    try {
      Model m;
      if (round % 30 == 0) {  // now and then through a real file and its mapping
        write_bytes(path, bytes);
        m = load_xnn(path);
      } else {
        m = load_bytes(bytes, "fuzz.xnn");
      }
      m.graph.validate("fuzz");
      touch_constants(m);
      ++loaded;
    } catch (const Error& e) {
      ++refused;
      const std::string message = e.what();
      EXPECT_TRUE(message.rfind(path + ": ", 0) == 0 || message.rfind("fuzz.xnn: ", 0) == 0)
          << "errors name the file: " << message;
    }
  }
  EXPECT_EQ(loaded + refused, 300);
  EXPECT_GT(refused, 150);
  std::printf("mutations: %d loaded, %d refused\n", loaded, refused);
}

}  // namespace
}  // namespace xnn
