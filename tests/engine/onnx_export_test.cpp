// ONNX export tests (engine/onnx/onnx_export.h): IR -> ONNX -> IR round trips that keep every
// value, node and attribute; conformance models (libonnx-testdata, skipped when absent) that
// give bit-identical outputs after export and re-import; our fused ops decomposed into standard
// ONNX ops with equal results; and errors that name what cannot be exported. Like
// onnx_import_test.cpp, this file may include onnx_pb.h to look inside the exported bytes.
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>

#include <unistd.h>

#include "engine/core/op_registry.h"
#include "engine/onnx/graph_mapping.h"
#include "engine/onnx/onnx_export.h"
#include "engine/onnx/onnx_import.h"
#include "engine/onnx/onnx_tensor.h"
#include "engine/passes/optimize.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

namespace fs = std::filesystem;

const fs::path kTestData = "/usr/share/libonnx-testdata/data";

// ---- helpers --------------------------------------------------------------------------------

OnnxImportOptions import_options(bool checker, bool fold) {
  OnnxImportOptions o;
  o.run_checker = checker;
  o.fold_constants = fold;
  return o;
}

Model reimport(const std::string& bytes, const OnnxImportOptions& options = {}) {
  return import_onnx_bytes(bytes.data(), bytes.size(), "exported.onnx", "", options);
}

onnx::ModelProto parse(const std::string& bytes) {
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromString(bytes));
  return proto;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

std::string value_name(const Graph& g, int i) { return i < 0 ? std::string() : g.value(i).name; }

std::vector<std::string> names(const Graph& g, const std::vector<int>& idx) {
  std::vector<std::string> out;
  for (int i : idx) out.push_back(value_name(g, i));
  return out;
}

void expect_same_graph(const Graph& a, const Graph& b, const std::string& where);

void expect_same_attribute(const Attribute& a, const Attribute& b, const std::string& where) {
  ASSERT_EQ(a.kind(), b.kind()) << where;
  switch (a.kind()) {
    case Attribute::Kind::kTensor:
      EXPECT_TRUE(same_bytes(*a.get_if<Tensor>(), *b.get_if<Tensor>())) << where;
      return;
    case Attribute::Kind::kGraph:
      expect_same_graph(**a.get_if<std::shared_ptr<Graph>>(), **b.get_if<std::shared_ptr<Graph>>(), where);
      return;
    case Attribute::Kind::kGraphs: {
      const auto& ga = *a.get_if<std::vector<std::shared_ptr<Graph>>>();
      const auto& gb = *b.get_if<std::vector<std::shared_ptr<Graph>>>();
      ASSERT_EQ(ga.size(), gb.size()) << where;
      for (size_t k = 0; k < ga.size(); ++k) expect_same_graph(*ga[k], *gb[k], where + "[" + std::to_string(k) + "]");
      return;
    }
    case Attribute::Kind::kInt: EXPECT_EQ(*a.get_if<int64_t>(), *b.get_if<int64_t>()) << where; return;
    case Attribute::Kind::kFloat: EXPECT_EQ(*a.get_if<float>(), *b.get_if<float>()) << where; return;
    case Attribute::Kind::kString: EXPECT_EQ(*a.get_if<std::string>(), *b.get_if<std::string>()) << where; return;
    case Attribute::Kind::kInts:
      EXPECT_EQ(*a.get_if<std::vector<int64_t>>(), *b.get_if<std::vector<int64_t>>()) << where;
      return;
    case Attribute::Kind::kFloats:
      EXPECT_EQ(*a.get_if<std::vector<float>>(), *b.get_if<std::vector<float>>()) << where;
      return;
    case Attribute::Kind::kStrings:
      EXPECT_EQ(*a.get_if<std::vector<std::string>>(), *b.get_if<std::vector<std::string>>()) << where;
      return;
  }
}

// The attribute opset 13 turned into an input, for ops whose attribute form the kernels keep.
std::string promoted_attribute(const Node& n) {
  if (n.op_type == "Squeeze" || n.op_type == "Unsqueeze" || n.op_type == "ReduceSum") return "axes";
  if (n.op_type == "Split") return "split";
  return {};
}

// Same interface, constants, node set (matched by name: the importer may reorder independent
// nodes), attributes, and dtype/shape of every value whose dtype `a` knows.
void expect_same_graph(const Graph& a, const Graph& b, const std::string& where) {
  EXPECT_EQ(names(a, a.inputs), names(b, b.inputs)) << where;
  EXPECT_EQ(names(a, a.outputs), names(b, b.outputs)) << where;
  for (const Value& va : a.values) {
    const int ib = b.find_value(va.name);
    if (ib < 0) {
      // Only values nothing refers to may disappear.
      bool used = std::find(a.outputs.begin(), a.outputs.end(), a.find_value(va.name)) != a.outputs.end();
      for (const Node& n : a.nodes) {
        for (int i : n.inputs) used = used || (i >= 0 && a.value(i).name == va.name);
        for (int o : n.outputs) used = used || (o >= 0 && a.value(o).name == va.name);
      }
      EXPECT_FALSE(used) << where << ": value '" << va.name << "' lost";
      continue;
    }
    const Value& vb = b.value(ib);
    EXPECT_EQ(va.outer_scope, vb.outer_scope) << where << ": value '" << va.name << "'";
    EXPECT_EQ(va.is_constant(), vb.is_constant()) << where << ": value '" << va.name << "'";
    if (va.is_constant() && vb.is_constant()) {
      EXPECT_TRUE(same_bytes(*va.data, *vb.data)) << where << ": constant '" << va.name << "'";
    }
    if (va.dtype != DType::kUnknown && !va.outer_scope) {
      EXPECT_EQ(va.dtype, vb.dtype) << where << ": value '" << va.name << "'";
      EXPECT_EQ(va.has_shape, vb.has_shape) << where << ": value '" << va.name << "'";
      if (va.has_shape) {
        EXPECT_EQ(dims_str(va.shape), dims_str(vb.shape)) << where << ": value '" << va.name << "'";
      }
    }
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size()) << where;
  std::map<std::string, const Node*> by_name;
  for (const Node& n : b.nodes) by_name[n.name] = &n;
  for (const Node& na : a.nodes) {
    ASSERT_TRUE(by_name.count(na.name)) << where << ": node '" << na.name << "' lost";
    const Node& nb = *by_name[na.name];
    const std::string at = where + ": " + na.describe();
    EXPECT_EQ(na.op_type, nb.op_type) << at;
    EXPECT_EQ(na.domain, nb.domain) << at;
    EXPECT_EQ(names(a, na.outputs), names(b, nb.outputs)) << at;
    std::vector<std::string> inputs_a = names(a, na.inputs), inputs_b = names(b, nb.inputs);
    std::map<std::string, Attribute> attrs_a = na.attrs;
    // Written in opset-13 form: the attribute is now a constant second input of the same values.
    const std::string promoted = promoted_attribute(na);
    if (!promoted.empty() && na.has_attr(promoted) && !nb.has_attr(promoted)) {
      ASSERT_EQ(inputs_b.size(), 2u) << at;
      const int c = nb.inputs[1];
      ASSERT_TRUE(b.value(c).is_constant()) << at;
      EXPECT_EQ(b.value(c).data->to_int_vector(), na.attr_ints(promoted)) << at;
      inputs_b.pop_back();
      attrs_a.erase(promoted);
    }
    EXPECT_EQ(inputs_a, inputs_b) << at;
    ASSERT_EQ(attrs_a.size(), nb.attrs.size()) << at;
    for (const auto& [key, attr] : attrs_a) {
      ASSERT_TRUE(nb.attrs.count(key)) << at << ": attribute '" << key << "' lost";
      expect_same_attribute(attr, nb.attrs.at(key), at + ": attribute '" + key + "'");
    }
  }
}

Value typed_value(const std::string& name, DType dtype, std::vector<Dim> shape) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.has_shape = true;
  v.shape = std::move(shape);
  return v;
}

// Dtype known, shape (not even the rank) not.
Value rankless_value(const std::string& name, DType dtype) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  return v;
}

Node make_node(const std::string& op, const std::string& name, std::vector<int> inputs, std::vector<int> outputs,
               std::map<std::string, Attribute> attrs = {}, const std::string& domain = "") {
  Node n;
  n.op_type = op;
  n.name = name;
  n.domain = domain;
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = std::move(attrs);
  return n;
}

Tensor random_tensor(std::mt19937& rng, Shape shape, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::kF32, std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

std::vector<Tensor> run_model(const Model& model, const std::map<std::string, Tensor>& inputs) {
  Session session(std::make_shared<Model>(model));
  return session.run(inputs);
}

void expect_near(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].dtype(), want[k].dtype()) << "output " << k;
    ASSERT_EQ(got[k].shape(), want[k].shape()) << "output " << k;
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      ASSERT_NEAR(got[k].scalar_as_double(i), want[k].scalar_as_double(i), tol) << "output " << k << " element " << i;
    }
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an Error";
  return {};
}

// ---- hand-built graphs ---------------------------------------------------------------------

// x[batch,2,4,4] -> Conv(W f32, B f32) -> LeakyRelu -> Resize(nearest) -> y[batch,3,?,8];
// plus one constant of every dtype, each passed through an Identity to its own output.
Model every_value_kind_model() {
  Model m;
  m.opset = 13;
  Graph& g = m.graph;
  g.name = "every_value_kind";
  const int x = g.add_value(typed_value("x", DType::kF32, {Dim::named("batch"), Dim::fixed(2), Dim::fixed(4), Dim::fixed(4)}));
  g.inputs.push_back(x);
  std::mt19937 rng(7);
  const int w = g.add_constant("conv.weight", random_tensor(rng, {3, 2, 3, 3}));
  const int b = g.add_constant("conv.bias", random_tensor(rng, {3}));
  const int c = g.add_value(typed_value("conv_out", DType::kF32, {Dim::named("batch"), Dim::fixed(3), Dim::fixed(4), Dim::fixed(4)}));
  g.nodes.push_back(make_node("Conv", "conv", {x, w, b}, {c},
                              {{"kernel_shape", std::vector<int64_t>{3, 3}},
                               {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                               {"strides", std::vector<int64_t>{1, 1}},
                               {"group", int64_t{1}},
                               {"auto_pad", "NOTSET"}}));
  const int r = g.add_value(rankless_value("leaky", DType::kF32));
  g.nodes.push_back(make_node("LeakyRelu", "leaky", {c}, {r}, {{"alpha", 0.125f}}));
  const int scales = g.add_constant("scales", Tensor::from_vector<float>({1, 1, 2, 2}, {4}));
  const int y = g.add_value(typed_value("y", DType::kF32, {Dim::named("batch"), Dim::fixed(3), Dim{}, Dim::fixed(8)}));
  // roi left out: an optional input written as "".
  g.nodes.push_back(make_node("Resize", "resize", {r, -1, scales}, {y},
                              {{"mode", "nearest"}, {"coordinate_transformation_mode", "asymmetric"},
                               {"nearest_mode", "floor"}}));
  g.outputs.push_back(y);

  Tensor f16(DType::kF16, {2});
  f16.data<Half>()[0].bits = 0x3c00;  // 1.0
  f16.data<Half>()[1].bits = 0xc000;  // -2.0
  const std::vector<std::pair<std::string, Tensor>> constants = {
      {"f32", Tensor::from_vector<float>({1.5f, -0.0f, 3.25f}, {3})},
      {"f16", f16},
      {"f64", Tensor::from_vector<double>({1e-300, -2.5}, {2})},
      {"i8", Tensor::from_vector<int8_t>({-128, 0, 127}, {3})},
      {"u8", Tensor::from_vector<uint8_t>({0, 200, 255}, {1, 3})},
      {"i32", Tensor::from_vector<int32_t>({-7, 1 << 30}, {2})},
      {"i64", Tensor::from_vector<int64_t>({int64_t{1} << 40, -1}, {2, 1})},
      {"bool", Tensor::from_vector<bool>({true, false, true}, {3})},
      {"scalar", Tensor::scalar<int64_t>(42)},
      {"empty", Tensor(DType::kF32, {0, 3})},
  };
  for (const auto& [name, t] : constants) {
    const int cv = g.add_constant("const_" + name, t);
    const Value& cval = g.value(cv);
    const int out = g.add_value(typed_value("out_" + name, cval.dtype, cval.shape));
    g.nodes.push_back(make_node("Identity", "identity_" + name, {cv}, {out}));
    g.outputs.push_back(out);
  }
  return m;
}

TEST(OnnxExport, HandBuiltGraphRoundTripsEveryValueKind) {
  const Model m = every_value_kind_model();
  const std::string bytes = export_onnx_bytes(m);

  const onnx::ModelProto proto = parse(bytes);
  EXPECT_EQ(proto.producer_name(), "xnn-lab");
  ASSERT_EQ(proto.opset_import_size(), 1);
  EXPECT_EQ(proto.opset_import(0).domain(), "");
  EXPECT_EQ(proto.opset_import(0).version(), 13);
  const onnx::GraphProto& g = proto.graph();
  EXPECT_EQ(g.name(), "every_value_kind");
  ASSERT_EQ(g.input_size(), 1);  // initialisers are not listed as inputs
  const auto& x_dims = g.input(0).type().tensor_type().shape().dim();
  ASSERT_EQ(x_dims.size(), 4);
  EXPECT_EQ(x_dims[0].dim_param(), "batch");
  EXPECT_EQ(x_dims[1].dim_value(), 2);
  const auto& y_dims = g.output(0).type().tensor_type().shape().dim();
  ASSERT_EQ(y_dims.size(), 4);
  EXPECT_FALSE(y_dims[2].has_dim_value());
  EXPECT_FALSE(y_dims[2].has_dim_param());
  for (const auto& t : g.initializer()) {
    EXPECT_TRUE(t.has_raw_data()) << t.name();
    EXPECT_EQ(t.float_data_size() + t.int32_data_size() + t.int64_data_size() + t.double_data_size(), 0) << t.name();
  }
  for (const auto& n : g.node()) {
    if (n.op_type() == "Resize") {
      ASSERT_EQ(n.input_size(), 3);
      EXPECT_EQ(n.input(1), "");
    }
  }

  // Structure: no folding on re-import, so every node and constant is still there.
  const Model back = reimport(bytes, import_options(/*checker=*/true, /*fold=*/false));
  EXPECT_EQ(back.opset, 13);
  expect_same_graph(m.graph, back.graph, "round trip");
  const Value& leaky = back.graph.value(back.graph.find_value("leaky"));
  EXPECT_EQ(leaky.dtype, DType::kF32);
  EXPECT_FALSE(leaky.has_shape);

  // Behaviour: the same outputs, bit for bit, for a batch the file did not fix.
  std::mt19937 rng(3);
  const std::map<std::string, Tensor> inputs{{"x", random_tensor(rng, {2, 2, 4, 4})}};
  const std::vector<Tensor> want = run_model(m, inputs);
  const std::vector<Tensor> got = run_model(reimport(bytes), inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(same_bytes(got[k], want[k])) << "output " << k;
  EXPECT_EQ(want[0].shape(), (Shape{2, 3, 8, 8}));
}

// A node carrying every attribute kind. No ONNX op takes all of them, so libonnx's checker
// stays off on both sides (as in onnx_import_test's MapsEveryAttributeKind); the subgraphs read
// an outer value by name and hold a constant of their own.
TEST(OnnxExport, EveryAttributeKindAndSubgraphsRoundTrip) {
  auto make_body = [](const std::string& name, float k) {
    auto body = std::make_shared<Graph>();
    body->name = name;
    Value outer;
    outer.name = "x";
    outer.outer_scope = true;
    const int x = body->add_value(outer);
    const int c = body->add_constant(name + "_k", Tensor::from_vector<float>({k, k}, {2}));
    const int y = body->add_value(typed_value(name + "_y", DType::kF32, {Dim::fixed(2)}));
    body->nodes.push_back(make_node("Add", name + "_add", {x, c}, {y}));
    body->outputs.push_back(y);
    return body;
  };
  Model m;
  m.graph.name = "attrs";
  Graph& g = m.graph;
  const int x = g.add_value(typed_value("x", DType::kF32, {Dim::fixed(2)}));
  g.inputs.push_back(x);
  const int y = g.add_value(typed_value("y", DType::kF32, {Dim::fixed(2)}));
  g.outputs.push_back(y);
  g.nodes.push_back(make_node(
      "Relu", "r", {x}, {y},
      {{"i", int64_t{-3}},
       {"f", 0.25f},
       {"s", "text"},
       {"is", std::vector<int64_t>{1, -2, int64_t{1} << 40}},
       {"fs", std::vector<float>{1.0f, -0.5f}},
       {"ss", std::vector<std::string>{"a", "", "c"}},
       {"t", Tensor::from_vector<int32_t>({4, 5, 6}, {3})},
       {"g", make_body("then_body", 1.0f)},
       {"gs", std::vector<std::shared_ptr<Graph>>{make_body("body0", 2.0f), make_body("body1", 3.0f)}}}));

  OnnxExportOptions no_checker;
  no_checker.run_checker = false;
  const std::string bytes = export_onnx_bytes(m, no_checker);
  const onnx::ModelProto proto = parse(bytes);
  const onnx::NodeProto& r = proto.graph().node(0);
  ASSERT_EQ(r.attribute_size(), 9);
  for (const auto& a : r.attribute()) {
    if (a.name() != "g") continue;
    EXPECT_EQ(a.type(), onnx::AttributeProto::GRAPH);
    // The outer value is referenced, never declared again in the subgraph.
    EXPECT_EQ(a.g().input_size(), 0);
    ASSERT_EQ(a.g().initializer_size(), 1);
    EXPECT_EQ(a.g().initializer(0).name(), "then_body_k");
    EXPECT_EQ(a.g().node(0).input(0), "x");
  }
  const Model back = reimport(bytes, import_options(/*checker=*/false, /*fold=*/false));
  expect_same_graph(m.graph, back.graph, "round trip");
}

// If with branches reading outer values: the checker (run on export) verifies the scoping.
TEST(OnnxExport, IfSubgraphsPassTheCheckerAndMapBack) {
  Model m;
  m.graph.name = "branchy";
  Graph& g = m.graph;
  const int cond = g.add_value(typed_value("cond", DType::kBool, {}));
  const int x = g.add_value(typed_value("x", DType::kF32, {Dim::named("n")}));
  g.add_constant("bias", Tensor::from_vector<float>({0.5f}, {1}));  // read by both branches
  const int y = g.add_value(typed_value("y", DType::kF32, {Dim::named("n")}));
  g.inputs = {cond, x};
  g.outputs = {y};
  auto branch = [&](const std::string& name, const char* op) {
    auto body = std::make_shared<Graph>();
    body->name = name;
    Value vx, vb;
    vx.name = "x";
    vx.outer_scope = true;
    vb.name = "bias";
    vb.outer_scope = true;
    const int bx = body->add_value(vx), bb = body->add_value(vb);
    const int out = body->add_value(typed_value(name + "_out", DType::kF32, {Dim::named("n")}));
    body->nodes.push_back(make_node(op, name + "_node", {bx, bb}, {out}));
    body->outputs.push_back(out);
    return body;
  };
  g.nodes.push_back(make_node("If", "choose", {cond}, {y},
                              {{"then_branch", branch("then", "Add")}, {"else_branch", branch("else", "Sub")}}));
  const std::string bytes = export_onnx_bytes(m);  // the checker runs here
  const onnx::ModelProto proto = parse(bytes);
  for (const auto& a : proto.graph().node(0).attribute()) {
    EXPECT_EQ(a.g().input_size(), 0) << a.name();
    EXPECT_EQ(a.g().initializer_size(), 0) << a.name();
  }
  // If has no kernel, so the importer would stop at "unsupported op"; the mapping alone shows
  // the structure survived.
  OnnxMappingContext ctx{"exported.onnx", "", {}};
  const Graph back = map_onnx_graph(proto.graph(), ctx, "exported.onnx");
  EXPECT_TRUE(ctx.unsupported.empty());
  expect_same_graph(m.graph, back, "round trip");
}

// ---- conformance models ----------------------------------------------------------------------

std::map<std::string, Tensor> conformance_inputs(const fs::path& dir, const Session& session) {
  std::map<std::string, Tensor> inputs;
  for (size_t i = 0; i < session.inputs().size(); ++i) {
    const fs::path file = dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(file)) break;
    inputs[session.inputs()[i].name] = load_onnx_tensor_file(file.string());
  }
  return inputs;
}

// Imports, runs, exports, re-imports and runs again: outputs must be identical bit for bit.
// Returns "" or what differed.
std::string round_trip_conformance(const fs::path& dir) {
  const Model original = import_onnx_file((dir / "model.onnx").string());
  Session first(std::make_shared<Model>(original));
  const std::map<std::string, Tensor> inputs = conformance_inputs(dir, first);
  const std::vector<Tensor> want = first.run(inputs);
  const std::string bytes = export_onnx_bytes(original);
  Session second(std::make_shared<Model>(reimport(bytes)));
  const std::vector<Tensor> got = second.run(inputs);
  if (got.size() != want.size()) return "output count changed";
  for (size_t k = 0; k < want.size(); ++k) {
    if (second.outputs()[k].name != first.outputs()[k].name) return "output " + std::to_string(k) + " renamed";
    if (!same_bytes(got[k], want[k])) return "output '" + first.outputs()[k].name + "' differs";
  }
  return {};
}

TEST(OnnxExport, ConformanceModelsGiveIdenticalOutputs) {
  if (!fs::exists(kTestData / "node/test_relu")) GTEST_SKIP() << "libonnx-testdata is not installed";
  // A spread of op families, dtypes (f16, u8, i8, i32, i64, bool), optional inputs and outputs,
  // and opsets older than 13 whose forms the exporter has to write in opset-13 form.
  const std::vector<std::string> cases = {
      "node/test_conv_with_strides_and_asymmetric_padding",
      "node/test_convtranspose_pads",
      "node/test_gemm_all_attributes",
      "node/test_batchnorm_epsilon",
      "node/test_maxpool_2d_pads",
      "node/test_averagepool_2d_ceil",
      "node/test_resize_upsample_scales_linear",
      "node/test_resize_downsample_sizes_nearest",
      "node/test_softmax_axis_0",
      "node/test_reshape_negative_extended_dims",
      "node/test_slice_neg_steps",
      "node/test_split_variable_parts_2d",
      "node/test_unsqueeze_two_axes",
      "node/test_squeeze_negative_axes",
      "node/test_reduce_sum_keepdims_random",
      "node/test_dropout_default_mask_ratio",
      "node/test_clip_default_inbounds",
      "node/test_cast_FLOAT_to_FLOAT16",
      "node/test_add_uint8",
      "node/test_and_bcast4v3d",
      "node/test_where_long_example",
      "node/test_gather_negative_indices",
      "node/test_constantofshape_int_zeros",
      "node/test_reflect_pad",
      "node/test_layer_normalization_4d_axis1",
      "node/test_upsample_nearest",
      "node/test_unsqueeze_axis_3",
      "node/test_dropout_default_old",
      "pytorch-converted/test_Embedding",
      "pytorch-converted/test_GLU",
      "pytorch-converted/test_AvgPool1d",
      "pytorch-operator/test_operator_flatten",
      "pytorch-operator/test_operator_reduced_sum",
  };
  int ran = 0;
  for (const std::string& c : cases) {
    const fs::path dir = kTestData / c;
    if (!fs::exists(dir / "model.onnx")) continue;
    SCOPED_TRACE(c);
    try {
      EXPECT_EQ(round_trip_conformance(dir), "");
      ++ran;
    } catch (const UnsupportedError&) {
      // An op this build does not run: nothing to compare.
    }
  }
  EXPECT_GE(ran, 20);
}

// Every model the engine passes (tests/conformance/must_pass.txt) survives the round trip.
TEST(OnnxExport, EveryPassingConformanceModelRoundTrips) {
  const fs::path list = fs::path(__FILE__).parent_path().parent_path() / "conformance/must_pass.txt";
  if (!fs::exists(kTestData) || !fs::exists(list)) GTEST_SKIP() << "libonnx-testdata or must_pass.txt missing";
  std::ifstream f(list);
  std::string line;
  int ran = 0;
  std::vector<std::string> failures;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    const fs::path dir = kTestData / line;
    if (!fs::exists(dir / "model.onnx")) continue;
    try {
      const std::string diff = round_trip_conformance(dir);
      if (!diff.empty()) failures.push_back(line + ": " + diff);
    } catch (const std::exception& e) {
      failures.push_back(line + ": " + e.what());
    }
    ++ran;
  }
  EXPECT_GT(ran, 500);
  std::string all;
  for (const std::string& s : failures) all += "\n  " + s;
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << ran << " models:" << all;
}

// If and Loop have no kernels, so these are compared as IR after mapping, not by running.
TEST(OnnxExport, ConformanceControlFlowModelsKeepTheirSubgraphs) {
  if (!fs::exists(kTestData / "node/test_if")) GTEST_SKIP() << "libonnx-testdata is not installed";
  int checked = 0;
  for (const char* c : {"node/test_if", "node/test_loop11", "node/test_range_float_type_positive_delta_expanded",
                        "node/test_range_int32_type_negative_delta_expanded"}) {
    const fs::path path = kTestData / c / "model.onnx";
    if (!fs::exists(path)) continue;
    SCOPED_TRACE(c);
    onnx::ModelProto source;
    {
      std::ifstream f(path, std::ios::binary);
      ASSERT_TRUE(source.ParseFromIstream(&f));
    }
    OnnxMappingContext ctx{path.string(), "", {}};
    Model m;
    m.graph = map_onnx_graph(source.graph(), ctx, path.string());
    m.graph.topological_sort();
    ASSERT_TRUE(ctx.unsupported.empty());
    for (const auto& imp : source.opset_import()) {
      if (imp.domain().empty()) m.opset = imp.version();
    }
    const std::string bytes = export_onnx_bytes(m);  // libonnx's checker accepts the subgraphs
    const onnx::ModelProto exported = parse(bytes);
    // The subgraphs declare what the source declared: no outer value turns into an input.
    // (Nodes are matched by their first output: Constant nodes became initialisers, so
    // positions differ.)
    int subgraphs = 0;
    for (const auto& node : exported.graph().node()) {
      for (const auto& a : node.attribute()) {
        if (!a.has_g()) continue;
        ++subgraphs;
        for (const auto& src_node : source.graph().node()) {
          if (src_node.output(0) != node.output(0)) continue;
          for (const auto& sa : src_node.attribute()) {
            if (sa.name() != a.name()) continue;
            EXPECT_EQ(a.g().input_size(), sa.g().input_size()) << a.name();
            EXPECT_EQ(a.g().output_size(), sa.g().output_size()) << a.name();
          }
        }
      }
    }
    EXPECT_GT(subgraphs, 0);
    OnnxMappingContext back_ctx{"exported.onnx", "", {}};
    const Graph back = map_onnx_graph(exported.graph(), back_ctx, "exported.onnx");
    expect_same_graph(m.graph, back, c);
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// ---- fused ops --------------------------------------------------------------------------------

struct FusedCase {
  const char* activation;
  std::vector<float> params;
  bool residual;
};

// A chain of FusedConvs, one per activation (some with the residual Z), then GAP -> Flatten ->
// two FusedGemms.
Model fused_model(int64_t opset) {
  Model m;
  m.opset = opset;
  m.graph.name = "fused";
  Graph& g = m.graph;
  std::mt19937 rng(11);
  int x = g.add_value(typed_value("x", DType::kF32, {Dim::named("batch"), Dim::fixed(4), Dim::fixed(5), Dim::fixed(5)}));
  g.inputs.push_back(x);
  const std::vector<FusedCase> cases = {
      {"Relu", {}, false},         {"Clip", {0.0f, 0.5f}, true}, {"LeakyRelu", {0.1f}, true},
      {"HardSwish", {}, false},    {"HardSigmoid", {0.3f, 0.4f}, true}, {"Sigmoid", {}, false},
      {"Silu", {}, true},          {"", {}, true},               {"Clip", {}, false},
  };
  int k = 0;
  for (const FusedCase& c : cases) {
    const std::string name = "conv" + std::to_string(k++);
    const int w = g.add_constant(name + ".weight", random_tensor(rng, {4, 4, 3, 3}, -0.3f, 0.3f));
    const int b = k % 2 ? g.add_constant(name + ".bias", random_tensor(rng, {4})) : -1;
    const int y = g.add_value(rankless_value(name + "_out", DType::kF32));
    std::vector<int> inputs{x, w, b};
    if (c.residual) inputs.push_back(x);
    std::map<std::string, Attribute> attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                           {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    if (*c.activation) attrs["activation"] = c.activation;
    if (!c.params.empty()) attrs["activation_params"] = c.params;
    g.nodes.push_back(make_node("FusedConv", name, inputs, {y}, attrs, "ai.xnn"));
    x = y;
  }
  const int pooled = g.add_value(rankless_value("pooled", DType::kF32));
  g.nodes.push_back(make_node("GlobalAveragePool", "gap", {x}, {pooled}));
  const int flat = g.add_value(rankless_value("flat", DType::kF32));
  g.nodes.push_back(make_node("Flatten", "flatten", {pooled}, {flat}));
  const int w1 = g.add_constant("fc1.weight", random_tensor(rng, {4, 6}));
  const int b1 = g.add_constant("fc1.bias", random_tensor(rng, {6}));
  const int h = g.add_value(rankless_value("hidden", DType::kF32));
  g.nodes.push_back(make_node("FusedGemm", "fc1", {flat, w1, b1}, {h}, {{"activation", "HardSwish"}}, "ai.xnn"));
  const int w2 = g.add_constant("fc2.weight", random_tensor(rng, {3, 6}));
  const int logits = g.add_value(typed_value("logits", DType::kF32, {Dim::named("batch"), Dim::fixed(3)}));
  g.nodes.push_back(make_node("FusedGemm", "fc2", {h, w2}, {logits},
                              {{"transB", int64_t{1}}, {"alpha", 0.5f}, {"activation", "LeakyRelu"},
                               {"activation_params", std::vector<float>{0.2f}}},
                              "ai.xnn"));
  g.value(x).has_shape = true;  // the main graph's outputs need a shape in ONNX
  g.value(x).shape = {Dim::named("batch"), Dim::fixed(4), Dim::fixed(5), Dim::fixed(5)};
  g.outputs = {logits, x};
  return m;
}

void expect_fused_round_trip(int64_t opset) {
  const Model m = fused_model(opset);
  std::mt19937 rng(5);
  const std::map<std::string, Tensor> inputs{{"x", random_tensor(rng, {2, 4, 5, 5}, -2.0f, 2.0f)}};
  const std::vector<Tensor> want = run_model(m, inputs);

  const std::string bytes = export_onnx_bytes(m);
  const onnx::ModelProto proto = parse(bytes);
  ASSERT_EQ(proto.opset_import_size(), 1);
  EXPECT_EQ(proto.opset_import(0).version(), opset);
  std::multiset<std::string> ops;
  std::set<std::string> outputs;
  for (const auto& n : proto.graph().node()) {
    EXPECT_EQ(n.domain(), "") << n.name();
    ops.insert(n.op_type());
    for (const auto& o : n.output()) EXPECT_TRUE(outputs.insert(o).second) << "'" << o << "' written twice";
  }
  EXPECT_EQ(ops.count("Conv"), 9u);
  EXPECT_EQ(ops.count("Gemm"), 2u);
  EXPECT_EQ(ops.count("Add"), 5u);  // one per residual
  EXPECT_EQ(ops.count("Relu"), 1u);
  EXPECT_EQ(ops.count("Clip"), 2u);
  EXPECT_EQ(ops.count("LeakyRelu"), 2u);
  EXPECT_EQ(ops.count("Sigmoid"), 2u);  // Sigmoid, and SiLU's gate
  // HardSwish: its own op from opset 14, x * HardSigmoid(x) before.
  EXPECT_EQ(ops.count("HardSwish"), opset >= 14 ? 2u : 0u);
  EXPECT_EQ(ops.count("HardSigmoid"), opset >= 14 ? 1u : 3u);
  EXPECT_EQ(ops.count("Mul"), opset >= 14 ? 1u : 3u);

  const Model back = reimport(bytes);
  for (const Node& n : back.graph.nodes) EXPECT_EQ(n.domain, "") << n.describe();
  EXPECT_EQ(back.graph.nodes.front().name, "conv0");  // the base op keeps the fused node's name
  expect_near(run_model(back, inputs), want, 1e-5);
}

TEST(OnnxExport, FusedOpsAreDecomposedOpset13) { expect_fused_round_trip(13); }

// A plain HardSwish node in a model that declares opset 13 (as our model builders do) is written
// in its opset-13 form, so the checker accepts the file and it computes the same.
TEST(OnnxExport, StandaloneHardSwishBeforeOpset14IsDecomposed) {
  Model m;
  m.opset = 13;
  m.graph.name = "hswish";
  Graph& g = m.graph;
  const int x = g.add_value(typed_value("x", DType::kF32, {Dim::fixed(2), Dim::fixed(7)}));
  g.inputs.push_back(x);
  const int y = g.add_value(typed_value("y", DType::kF32, {Dim::fixed(2), Dim::fixed(7)}));
  g.nodes.push_back(make_node("HardSwish", "hs", {x}, {y}));
  g.outputs = {y};
  std::mt19937 rng(3);
  const std::map<std::string, Tensor> inputs{{"x", random_tensor(rng, {2, 7}, -5.0f, 5.0f)}};
  const std::string bytes = export_onnx_bytes(m);  // runs the checker
  const onnx::ModelProto proto = parse(bytes);
  std::multiset<std::string> ops;
  for (const auto& n : proto.graph().node()) ops.insert(n.op_type());
  EXPECT_EQ(ops, (std::multiset<std::string>{"HardSigmoid", "Mul"}));
  expect_near(run_model(reimport(bytes), inputs), run_model(m, inputs), 1e-6);
}
TEST(OnnxExport, FusedOpsAreDecomposedOpset14) { expect_fused_round_trip(14); }

// The real path: a model imported, optimised (BatchNorm folded, residual adds and activations
// fused into FusedConv/FusedGemm), exported, and re-imported.
TEST(OnnxExport, OptimisedModelExportsAndMatches) {
  const fs::path path = fs::path(__FILE__).parent_path().parent_path().parent_path() / "configs/models/fmnist_cnn.onnx";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is missing";
  const Model original = import_onnx_file(path.string());
  Model optimised = original;
  optimize_graph(optimised.graph, 2);
  bool fused = false;
  for (const Node& n : optimised.graph.nodes) fused = fused || n.domain == "ai.xnn";
  ASSERT_TRUE(fused) << "the optimiser fused nothing; the test would not cover decomposition";
  std::mt19937 rng(9);
  const std::map<std::string, Tensor> inputs{{original.graph.value(original.graph.inputs[0]).name,
                                              random_tensor(rng, {3, 1, 28, 28}, 0.0f, 1.0f)}};
  const std::vector<Tensor> want = run_model(original, inputs);
  const Model back = reimport(export_onnx_bytes(optimised));
  expect_near(run_model(back, inputs), want, 1e-4);
}

// ---- opset upgrade ----------------------------------------------------------------------------

// An opset-11 Unsqueeze/Squeeze/Split keep `axes`/`split` as attributes in the IR; opset 13 only
// has the inputs.
TEST(OnnxExport, OldAttributeFormsBecomeInputs) {
  Model m;
  m.opset = 11;
  m.graph.name = "old_forms";
  Graph& g = m.graph;
  const int x = g.add_value(typed_value("x", DType::kF32, {Dim::fixed(4), Dim::fixed(6)}));
  g.inputs.push_back(x);
  const int u = g.add_value(rankless_value("u", DType::kF32));
  g.nodes.push_back(make_node("Unsqueeze", "unsq", {x}, {u}, {{"axes", std::vector<int64_t>{0, 3}}}));
  const int s = g.add_value(rankless_value("s", DType::kF32));
  g.nodes.push_back(make_node("Squeeze", "sq", {u}, {s}, {{"axes", std::vector<int64_t>{0}}}));
  const int a = g.add_value(typed_value("a", DType::kF32, {Dim::fixed(4), Dim::fixed(2), Dim::fixed(1)}));
  const int b = g.add_value(rankless_value("b", DType::kF32));
  g.nodes.push_back(make_node("Split", "split", {s}, {a, b}, {{"axis", int64_t{1}}, {"split", std::vector<int64_t>{2, 4}}}));
  const int r = g.add_value(typed_value("r", DType::kF32, {Dim::fixed(4), Dim::fixed(1)}));
  g.nodes.push_back(make_node("ReduceSum", "sum", {b}, {r}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}));
  g.outputs = {a, r};

  const std::string bytes = export_onnx_bytes(m);
  const onnx::ModelProto proto = parse(bytes);
  EXPECT_EQ(proto.opset_import(0).version(), 13);
  for (const auto& n : proto.graph().node()) {
    EXPECT_EQ(n.input_size(), 2) << n.name();
    for (const auto& attr : n.attribute()) EXPECT_TRUE(attr.name() != "axes" && attr.name() != "split") << n.name();
  }
  std::mt19937 rng(1);
  const std::map<std::string, Tensor> inputs{{"x", random_tensor(rng, {4, 6})}};
  const std::vector<Tensor> want = run_model(m, inputs);
  const std::vector<Tensor> got = run_model(reimport(bytes), inputs);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].shape(), (Shape{4, 2, 1}));  // [4,6] -> [1,4,6,1] -> [4,6,1] -> split
  EXPECT_EQ(got[1].shape(), (Shape{4, 1}));
  for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(same_bytes(got[k], want[k])) << "output " << k;
}

// ---- errors ---------------------------------------------------------------------------------

Model single_node_model(const std::string& op, const std::string& domain) {
  Model m;
  m.graph.name = "bad";
  Graph& g = m.graph;
  const int x = g.add_value(typed_value("x", DType::kF32, {Dim::fixed(2)}));
  const int y = g.add_value(typed_value("y", DType::kF32, {Dim::fixed(2)}));
  g.inputs = {x};
  g.outputs = {y};
  g.nodes.push_back(make_node(op, "frob", {x}, {y}, {}, domain));
  return m;
}

TEST(OnnxExport, UnknownDomainIsAnErrorNamingTheNode) {
  const std::string msg = error_of([] { export_onnx_bytes(single_node_model("Frobnicate", "com.example")); });
  EXPECT_NE(msg.find("node 'frob' (com.example.Frobnicate)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'bad'"), std::string::npos) << msg;
  const std::string fused = error_of([] { export_onnx_bytes(single_node_model("FusedPool", "ai.xnn")); });
  EXPECT_NE(fused.find("node 'frob' (ai.xnn.FusedPool)"), std::string::npos) << fused;
  EXPECT_NE(fused.find("FusedConv and FusedGemm"), std::string::npos) << fused;
}

TEST(OnnxExport, BadActivationNamesTheNode) {
  Model m = single_node_model("FusedGemm", "ai.xnn");
  m.graph.nodes[0].attrs["activation"] = "Gelu";
  const std::string msg = error_of([&] { export_onnx_bytes(m); });
  EXPECT_NE(msg.find("node 'frob'"), std::string::npos) << msg;
}

TEST(OnnxExport, CheckerRejectionIsAnErrorNamingTheModel) {
  const Model m = single_node_model("NoSuchOnnxOp", "");
  const std::string msg = error_of([&] { export_onnx_bytes(m); });
  EXPECT_NE(msg.find("ONNX export of model 'bad'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ONNX checker"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NoSuchOnnxOp"), std::string::npos) << msg;
  OnnxExportOptions no_checker;
  no_checker.run_checker = false;
  EXPECT_FALSE(export_onnx_bytes(m, no_checker).empty());
}

TEST(OnnxExport, UntypedMainGraphInputIsAnError) {
  Model m = single_node_model("Relu", "");
  m.graph.value(0).dtype = DType::kUnknown;
  const std::string msg = error_of([&] { export_onnx_bytes(m); });
  EXPECT_NE(msg.find("graph input 'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("element type"), std::string::npos) << msg;
}

TEST(OnnxExport, RanklessMainGraphOutputIsAnError) {
  Model m = single_node_model("Relu", "");
  m.graph.value(1).has_shape = false;
  m.graph.value(1).shape.clear();
  const std::string msg = error_of([&] { export_onnx_bytes(m); });
  EXPECT_NE(msg.find("graph output 'y' has no known rank"), std::string::npos) << msg;
}

TEST(OnnxExport, DuplicateValueNamesAreAnError) {
  Model m = single_node_model("Relu", "");
  m.graph.value(1).name = "x";
  const std::string msg = error_of([&] { export_onnx_bytes(m); });
  EXPECT_NE(msg.find("'x' is defined twice"), std::string::npos) << msg;
}

TEST(OnnxExport, FileWritesAndWriteErrorsNameThePath) {
  const fs::path dir = fs::temp_directory_path() / ("xnn_onnx_export_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const Model m = single_node_model("Relu", "");
  const std::string path = (dir / "relu.onnx").string();
  export_onnx_file(m, path);
  const Model back = import_onnx_file(path);
  EXPECT_EQ(back.graph.nodes.at(0).op_type, "Relu");
  const std::string bad = (dir / "no_such_folder" / "relu.onnx").string();
  const std::string msg = error_of([&] { export_onnx_file(m, bad); });
  EXPECT_NE(msg.find(bad), std::string::npos) << msg;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xnn
