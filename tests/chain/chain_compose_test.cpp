// harness/chain: pipeline parsing (strict, FILE:LINE errors), graph splicing (renaming reaches
// nested subgraphs), and composition of small .xnn models built here, checked against running
// the models one by one. The PyTorch-exported end to end test is tests/cli/chain_test.sh.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "engine/format/xnn_format.h"
#include "engine/runtime/session.h"
#include "harness/chain/compose.h"
#include "harness/chain/graph_splice.h"
#include "harness/chain/pipeline_spec.h"

namespace xnn::chain {
namespace {
namespace fs = std::filesystem;

Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, std::move(s)); }
std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

Value typed(const std::string& name, DType dtype, Shape shape) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.has_shape = true;
  for (int64_t d : shape) v.shape.push_back(Dim::fixed(d));
  return v;
}

Node node(const std::string& op, const std::string& name, std::vector<int> ins, std::vector<int> outs) {
  Node n;
  n.op_type = op;
  n.name = name;
  n.inputs = std::move(ins);
  n.outputs = std::move(outs);
  return n;
}

// y = x * scale + shift, x: f32 [1, n].
Model affine_model(int64_t n, float scale, float shift, const std::string& out = "y") {
  Model m;
  Graph& g = m.graph;
  g.inputs.push_back(g.add_value(typed("x", DType::kF32, {1, n})));
  const int s = g.add_constant("scale", f32({scale}, {1}));
  const int b = g.add_constant("shift", f32({shift}, {1}));
  const int t = g.add_value(typed("t", DType::kF32, {1, n}));
  const int y = g.add_value(typed(out, DType::kF32, {1, n}));
  g.nodes.push_back(node("Mul", "mul", {g.inputs[0], s}, {t}));
  g.nodes.push_back(node("Add", "add", {t, b}, {y}));
  g.outputs.push_back(y);
  return m;
}

// score = mean(x), x: f32 [1, n] -> [1, 1].
Model mean_model(int64_t n) {
  Model m;
  Graph& g = m.graph;
  g.inputs.push_back(g.add_value(typed("x", DType::kF32, {1, n})));
  const int axes = g.add_constant("axes", Tensor::from_vector<int64_t>({1}, {1}));
  const int y = g.add_value(typed("score", DType::kF32, {1, 1}));
  g.nodes.push_back(node("ReduceMean", "mean", {g.inputs[0], axes}, {y}));
  g.outputs.push_back(y);
  return m;
}

// A model with control flow inside: y = (sum(x) > 0) ? x + w : x - w, branches reading x and w
// by name. Splicing must rename those reads along with the values.
Model branchy_model(int64_t n) {
  Model m;
  Graph& g = m.graph;
  const int x = g.add_value(typed("x", DType::kF32, {1, n}));
  g.inputs.push_back(x);
  g.add_constant("w", f32(std::vector<float>(static_cast<size_t>(n), 1.5f), {1, n}));
  const int zero = g.add_constant("zero", f32({0}, {1}));
  const int sum = g.add_value(typed("sum", DType::kF32, {1, 1}));
  const int axes = g.add_constant("axes", Tensor::from_vector<int64_t>({1}, {1}));
  g.nodes.push_back(node("ReduceSum", "sum", {x, axes}, {sum}));
  const int pos = g.add_value(typed("pos", DType::kBool, {1, 1}));
  g.nodes.push_back(node("Greater", "gt", {sum, zero}, {pos}));
  auto branch = [&](const char* op, const char* name) {
    auto b = std::make_shared<Graph>();
    b->name = name;
    Value vx;
    vx.name = "x";
    vx.outer_scope = true;
    Value vw;
    vw.name = "w";
    vw.outer_scope = true;
    const int bx = b->add_value(vx), bw = b->add_value(vw);
    const int r = b->add_value(typed(std::string(name) + "_out", DType::kF32, {1, n}));
    b->nodes.push_back(node(op, std::string(name) + "_op", {bx, bw}, {r}));
    b->outputs.push_back(r);
    return b;
  };
  const int y = g.add_value(typed("y", DType::kF32, {1, n}));
  Node iff = node("If", "choose", {pos}, {y});
  iff.attrs["then_branch"] = branch("Add", "then");
  iff.attrs["else_branch"] = branch("Sub", "else");
  g.nodes.push_back(iff);
  g.outputs.push_back(y);
  return m;
}

class ChainCompose : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xnn_chain_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    save_xnn(mean_model(4), (dir_ / "gate.xnn").string());
    save_xnn(affine_model(4, 2.0f, 1.0f), (dir_ / "big.xnn").string());
    save_xnn(affine_model(4, -1.0f, 0.0f, "y"), (dir_ / "other.xnn").string());
    save_xnn(branchy_model(4), (dir_ / "branchy.xnn").string());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  // Runs `model` (a file in dir_) on {x: input}.
  std::vector<float> run_alone(const std::string& model, const Tensor& input) {
    Session s(std::make_shared<Model>(load_xnn((dir_ / model).string())));
    return values(s.run({{"x", input}})[0]);
  }

  fs::path dir_;
};

TEST_F(ChainCompose, GateIfAndLoopGiveWhatTheModelsGiveOneByOne) {
  const std::string path = write("p.yaml", R"(
models: {gate: gate.xnn, big: big.xnn}
inputs:
  - {name: x, from: gate.x}
  - {name: rows, dtype: f32, shape: [3, 4]}
steps:
  - run: gate
  - if: gate.score >= 0.25
    then: big
    as: maybe
  - loop: big
    over: rows
    axis: 0
    as: each
outputs: [gate.score, maybe.y, {name: per_row, from: each.y}]
)");
  auto bundle = std::make_shared<Model>(compose_pipeline(load_pipeline(path)));
  Session s(bundle);
  const Tensor rows = f32({1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4}, {3, 4});
  for (const Tensor& x : {f32({1, 0, 0, 0}, {1, 4}), f32({0.5f, 0.5f, 0.5f, 0.5f}, {1, 4})}) {
    const std::vector<Tensor> out = s.run({{"x", x}, {"rows", rows}});
    const float score = run_alone("gate.xnn", x)[0];
    EXPECT_EQ(values(out[0]), std::vector<float>{score});
    if (score >= 0.25f) EXPECT_EQ(values(out[1]), run_alone("big.xnn", x));
    else EXPECT_EQ(values(out[1]), std::vector<float>(4, 0.0f));
    ASSERT_EQ(out[2].shape(), (Shape{3, 4}));
    for (int64_t r = 0; r < 3; ++r) {
      const std::vector<float> row = run_alone("big.xnn", rows.slice_outer(r, r + 1).reshaped({1, 4}).clone());
      EXPECT_EQ(std::vector<float>(out[2].data<float>() + r * 4, out[2].data<float>() + r * 4 + 4), row) << r;
    }
  }
  EXPECT_TRUE(s.memory_stats().planned);
}

TEST_F(ChainCompose, ElseRunsAnotherModelOrGivesValues) {
  const std::string path = write("p.yaml", R"(
models: {gate: gate.xnn, big: big.xnn, other: other.xnn}
inputs: [{name: x, from: gate.x}]
steps:
  - run: gate
  - if: gate.score != 0
    then: {run: big, inputs: {x: x}}
    else: {run: other, inputs: {x: x}}
    as: a
  - if: gate.score < 0
    then: big
    else: [x]
    as: b
outputs: [a.y, b.y]
)");
  Session s(std::make_shared<Model>(compose_pipeline(load_pipeline(path))));
  const Tensor nonzero = f32({1, 2, 3, 4}, {1, 4});
  std::vector<Tensor> out = s.run({{"x", nonzero}});
  EXPECT_EQ(values(out[0]), run_alone("big.xnn", nonzero));
  EXPECT_EQ(values(out[1]), values(nonzero));  // mean > 0: the else-branch passes x through
  const Tensor zero_mean = f32({1, -1, 2, -2}, {1, 4});
  out = s.run({{"x", zero_mean}});
  EXPECT_EQ(values(out[0]), run_alone("other.xnn", zero_mean));
}

// A model with its own If: the spliced copy's branches read the renamed values.
TEST_F(ChainCompose, ModelsWithControlFlowInsideAreSplicedWithTheirSubgraphs) {
  const std::string path = write("p.yaml", R"(
models: {branchy: branchy.xnn}
inputs: [{name: v, from: branchy.x}, {name: rows, dtype: f32, shape: [2, 4]}]
steps:
  - run: branchy
    inputs: {x: v}
  - loop: branchy
    over: rows
    as: each
outputs: [branchy.y, each.y]
)");
  const Model bundle = compose_pipeline(load_pipeline(path));
  Session s(std::make_shared<Model>(bundle));
  for (const Tensor& v : {f32({1, 2, 3, 4}, {1, 4}), f32({-1, -2, -3, -4}, {1, 4})}) {
    const Tensor rows = f32({1, 1, 1, 1, -5, 0, 0, 0}, {2, 4});
    const std::vector<Tensor> out = s.run({{"v", v}, {"rows", rows}});
    EXPECT_EQ(values(out[0]), run_alone("branchy.xnn", v));
    EXPECT_EQ(std::vector<float>(out[1].data<float>(), out[1].data<float>() + 4),
              run_alone("branchy.xnn", f32({1, 1, 1, 1}, {1, 4})));
    EXPECT_EQ(std::vector<float>(out[1].data<float>() + 4, out[1].data<float>() + 8),
              run_alone("branchy.xnn", f32({-5, 0, 0, 0}, {1, 4})));
  }
}

TEST(GraphSplice, RenamesValuesNodesAndOuterScopeReads) {
  const Model m = branchy_model(2);
  Graph target;
  target.inputs.push_back(target.add_value(typed("input", DType::kF32, {1, 2})));
  const std::vector<int> outs = splice_graph(target, m.graph, target.inputs, "p/");
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(target.value(outs[0]).name, "p/y");
  EXPECT_GE(target.find_value("p/w"), 0);
  EXPECT_LT(target.find_value("x"), 0);  // the input became the bound value
  const Node& iff = target.nodes.back();
  EXPECT_EQ(iff.name, "p/choose");
  const Graph& then_g = *iff.attr_graph("then_branch");
  EXPECT_GE(then_g.find_value("input"), 0);  // was x: follows the binding
  EXPECT_GE(then_g.find_value("p/w"), 0);
  EXPECT_GE(then_g.find_value("p/then_out"), 0);
  // The original model is untouched.
  EXPECT_GE(m.graph.nodes.back().attr_graph("then_branch")->find_value("x"), 0);
  // Splicing twice with the same prefix clashes, naming the value.
  try {
    splice_graph(target, m.graph, target.inputs, "p/");
    FAIL() << "expected a clash";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'p/"), std::string::npos) << e.what();
  }
}

TEST(PipelineSpec, ParsesStepsConditionsAndDefaults) {
  const PipelineSpec spec = parse_pipeline(R"(
models: {gate: g.onnx, big: /abs/b.xnn}
inputs:
  - {name: image, from: gate.input, shape: [2, 3]}
  - {name: other, dtype: i64, shape: [4]}
steps:
  - run: gate
    inputs: {input: image}
  - if: gate.score>=-1.5e-1
    then: big
  - loop: big
    over: image
    axis: -1
    into: input
    as: each
outputs: [big.logits, {name: l, from: each.logits}]
)", "/cfg/p.yaml");
  ASSERT_EQ(spec.models.size(), 2u);
  EXPECT_EQ(spec.models[0].path, "/cfg/g.onnx");
  EXPECT_EQ(spec.models[1].path, "/abs/b.xnn");
  EXPECT_EQ(spec.inputs[0].from_model, "gate");
  EXPECT_EQ(spec.inputs[0].from_input, "input");
  EXPECT_EQ(*spec.inputs[0].shape, (Shape{2, 3}));
  EXPECT_EQ(spec.inputs[1].dtype, DType::kI64);
  ASSERT_EQ(spec.steps.size(), 3u);
  EXPECT_EQ(spec.steps[0].as, "gate");
  EXPECT_EQ(spec.steps[0].call.inputs[0].model_input, "input");
  EXPECT_EQ(spec.steps[1].cond.value, "gate.score");
  EXPECT_EQ(spec.steps[1].cond.op, ">=");
  EXPECT_DOUBLE_EQ(spec.steps[1].cond.threshold, -0.15);
  EXPECT_EQ(spec.steps[1].else_kind, Step::Else::kZeros);
  EXPECT_EQ(spec.steps[1].as, "big");
  EXPECT_EQ(spec.steps[2].axis, -1);
  EXPECT_EQ(spec.steps[2].into, "input");
  EXPECT_EQ(spec.outputs[0].name, "big.logits");
  EXPECT_EQ(spec.outputs[1].from, "each.logits");
  EXPECT_EQ(spec.steps[1].describe(), "step 2 (if)");
}

void expect_error(const std::string& yaml, const std::string& expected) {
  try {
    parse_pipeline(yaml, "p.yaml");
    FAIL() << "expected an error containing: " << expected;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(PipelineSpec, ErrorsNameTheLine) {
  const std::string head = "models: {m: m.onnx}\ninputs: [{name: a, dtype: f32, shape: [1]}]\n";
  expect_error(head + "steps:\n  - run: m\n    as: x.y\noutputs: [m.y]\n", "p.yaml:5:9: step 1: as: 'x.y' must not contain '.'");
  expect_error(head + "steps:\n  - run: m\n    loop: m\noutputs: [m.y]\n", "p.yaml:4:5: step 1: needs exactly one of");
  expect_error(head + "steps:\n  - if: m.y > x\n    then: m\noutputs: [m.y]\n", "p.yaml:4:9: step 1: if: the threshold 'x' is not a number");
  expect_error(head + "steps:\n  - if: m.y = 1\n    then: m\noutputs: [m.y]\n", "p.yaml:4:9: step 1: if: expected 'VALUE OP NUMBER'");
  expect_error(head + "steps:\n  - if: m.y > 1\noutputs: [m.y]\n", "p.yaml:4:5: step 1 (if): missing required key 'then'");
  expect_error(head + "steps:\n  - loop: m\n    over: a\n    axis: one\noutputs: [m.y]\n", "p.yaml:6:11: step 1: axis: expected an integer");
  expect_error("models: {m: m.onnx}\ninputs: [{name: a, dtype: f33, shape: [1]}]\nsteps: [{run: m}]\noutputs: [m.y]\n",
               "p.yaml:2:27: inputs: dtype: expected f32");
  expect_error("models: {m: m.onnx}\ninputs: [{name: a, dtype: f32}]\nsteps: [{run: m}]\noutputs: [m.y]\n",
               "p.yaml:2:10: inputs: 'a' needs either from: MODEL.INPUT or both dtype and shape");
  expect_error("models: {m: m.onnx}\ninputs: []\nstep: []\n", "p.yaml:3:1: pipeline: unknown key 'step' (did you mean 'steps'?)");
  expect_error("models: [\n", "p.yaml:");
}

TEST_F(ChainCompose, CompositionErrorsNameTheLineTheStepAndTheTypes) {
  auto expect_compose_error = [&](const std::string& yaml, const std::string& expected) {
    const std::string path = write("bad.yaml", yaml);
    try {
      compose_pipeline(load_pipeline(path));
      FAIL() << "expected an error containing: " << expected;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  const std::string models = "models: {gate: gate.xnn, big: big.xnn}\n";
  expect_compose_error(models + "inputs: [{name: x, dtype: f32, shape: [1, 5]}]\nsteps:\n  - run: big\noutputs: [big.y]\n",
                       "bad.yaml:4:10: step 1 (run): model 'big' input 'x' expects f32 [1,4], but 'x' is f32 [1,5]");
  expect_compose_error(models + "inputs: [{name: x, dtype: i64, shape: [1, 4]}]\nsteps:\n  - run: big\noutputs: [big.y]\n",
                       "expects f32 [1,4], but 'x' is i64 [1,4]");
  expect_compose_error(models + "inputs: [{name: v, from: big.x}]\nsteps:\n  - run: big\noutputs: [big.y]\n",
                       "bad.yaml:4:10: step 1 (run): model 'big' input 'x' is not bound; add inputs: {x: VALUE}");
  expect_compose_error(models + "inputs: [{name: x, from: big.x}]\nsteps:\n  - if: x > 0\n    then: big\noutputs: [big.y]\n",
                       "bad.yaml:4:9: step 1 (if): the condition needs a one-element value, but 'x' is f32 [1,4]");
  expect_compose_error(models + "inputs: [{name: x, from: big.x}]\nsteps:\n  - run: big\n  - run: big\noutputs: [big.y]\n",
                       "bad.yaml:5:5: step 2 (run): an earlier step already names its outputs 'big.*'; give this one another 'as:'");
  expect_compose_error(models + "inputs: [{name: x, from: big.q}]\nsteps:\n  - run: big\noutputs: [big.y]\n",
                       "bad.yaml:2:10: input 'x': model 'big' has no input 'q'");
  expect_compose_error(models + "inputs: [{name: r, dtype: f32, shape: [3, 4]}]\nsteps:\n  - loop: big\n    over: r\n    axis: 2\noutputs: [big.y]\n",
                       "step 1 (loop): axis 2 is out of range for 'r' (f32 [3,4])");
  expect_compose_error(models + "inputs: [{name: r, dtype: f32, shape: [3, 5]}]\nsteps:\n  - loop: big\n    over: r\noutputs: [big.y]\n",
                       "model 'big' input 'x' expects f32 [1,4], but 'r (one slice along axis 0)' is f32 [1,5]");
  expect_compose_error("models: {gate: missing.xnn}\ninputs: []\nsteps: [{run: gate}]\noutputs: [gate.score]\n",
                       "bad.yaml:1:16: model 'gate':");
}

}  // namespace
}  // namespace xnn::chain
