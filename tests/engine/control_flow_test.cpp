// Control flow (If, Loop, Scan): semantics against hand-computed results, outer-scope reads
// through nested subgraphs, what the session plans around them, and errors naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "engine/format/xnn_format.h"
#include "engine/runtime/graph_cost.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

// Builds graphs by value name: a name used for the first time becomes a value.
struct Builder {
  std::shared_ptr<Graph> g = std::make_shared<Graph>();

  explicit Builder(std::string name = "") { g->name = std::move(name); }
  int v(const std::string& name) {
    const int i = g->find_value(name);
    if (i >= 0) return i;
    Value val;
    val.name = name;
    return g->add_value(val);
  }
  Builder& input(const std::string& name, DType dtype, Shape shape) {
    Value val;
    val.name = name;
    val.dtype = dtype;
    val.has_shape = true;
    for (int64_t d : shape) val.shape.push_back(Dim::fixed(d));
    g->inputs.push_back(g->add_value(val));
    return *this;
  }
  // A subgraph input whose type is left to the node that runs it (as ONNX allows).
  Builder& untyped_input(const std::string& name) {
    g->inputs.push_back(v(name));
    return *this;
  }
  Builder& outer(const std::string& name) {
    g->value(v(name)).outer_scope = true;
    return *this;
  }
  Builder& constant(const std::string& name, Tensor t) {
    g->add_constant(name, std::move(t));
    return *this;
  }
  Builder& node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs,
                std::map<std::string, Attribute> attrs = {}, const std::string& name = "") {
    Node n;
    n.op_type = op;
    n.name = name.empty() ? op + "_" + std::to_string(g->nodes.size()) : name;
    for (const std::string& s : ins) n.inputs.push_back(s.empty() ? -1 : v(s));
    for (const std::string& s : outs) n.outputs.push_back(v(s));
    n.attrs = std::move(attrs);
    g->nodes.push_back(std::move(n));
    return *this;
  }
  Builder& output(const std::string& name, DType dtype = DType::kUnknown) {
    const int i = v(name);
    if (dtype != DType::kUnknown && !g->value(i).is_constant()) g->value(i).dtype = dtype;
    g->outputs.push_back(i);
    return *this;
  }
  std::shared_ptr<Model> model() const {
    auto m = std::make_shared<Model>();
    m->graph = *g;
    return m;
  }
};

Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, std::move(s)); }
std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data<float>(), t.data<float>() + t.numel()); }

// ---- If ------------------------------------------------------------------------------------

// y = cond ? x + w : x * w, both branches reading x (a graph input) and w (a constant) by name.
std::shared_ptr<Model> if_model() {
  Builder then_b("then");
  then_b.outer("x").outer("w").node("Add", {"x", "w"}, {"t"}).output("t", DType::kF32);
  Builder else_b("else");
  else_b.outer("x").outer("w").node("Mul", {"x", "w"}, {"e"}).output("e", DType::kF32);
  Builder main;
  main.input("cond", DType::kBool, {}).input("x", DType::kF32, {3}).constant("w", f32({2, 3, 4}, {3}));
  main.node("If", {"cond"}, {"y"}, {{"then_branch", then_b.g}, {"else_branch", else_b.g}}, "choose").output("y");
  return main.model();
}

TEST(ControlFlow, IfRunsTheChosenBranchWithOuterScopeReads) {
  Session s(if_model());
  const Tensor x = f32({1, 2, 3}, {3});
  EXPECT_EQ(values(s.run({{"cond", Tensor::scalar<bool>(true)}, {"x", x}})[0]), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(values(s.run({{"cond", Tensor::scalar<bool>(false)}, {"x", x}})[0]), (std::vector<float>{2, 6, 12}));
  // Both branches give [3]: the If is one step of the static plan.
  EXPECT_TRUE(s.memory_stats().planned);
  const std::vector<std::string> kernels = s.kernel_names();
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "subgraphs"), kernels.end());
}

TEST(ControlFlow, IfWithBranchesOfDifferentShapesRunsUnplanned) {
  Builder then_b("then");
  then_b.outer("x").node("Identity", {"x"}, {"t"}).output("t");
  Builder else_b("else");
  else_b.outer("x").constant("axes", Tensor::from_vector<int64_t>({0}, {1}));
  else_b.node("ReduceSum", {"x", "axes"}, {"e"}, {{"keepdims", int64_t{1}}}).output("e");
  Builder main;
  main.input("cond", DType::kBool, {}).input("x", DType::kF32, {3});
  main.node("If", {"cond"}, {"y"}, {{"then_branch", then_b.g}, {"else_branch", else_b.g}}).output("y");
  Session s(main.model());
  const Tensor x = f32({1, 2, 3}, {3});
  EXPECT_EQ(values(s.run({{"cond", Tensor::scalar<bool>(true)}, {"x", x}})[0]), (std::vector<float>{1, 2, 3}));
  EXPECT_FALSE(s.memory_stats().planned);
  const Tensor y = s.run({{"cond", Tensor::scalar<bool>(false)}, {"x", x}})[0];
  EXPECT_EQ(y.shape(), (Shape{1}));
  EXPECT_EQ(values(y), (std::vector<float>{6}));
}

TEST(ControlFlow, IfBranchesWithDifferentDtypesAreAnErrorNamingTheNode) {
  Builder then_b("then");
  then_b.outer("x").node("Identity", {"x"}, {"t"}).output("t", DType::kF32);
  Builder else_b("else");
  else_b.outer("x").node("Cast", {"x"}, {"e"}, {{"to", int64_t{7}}}).output("e", DType::kI64);
  Builder main;
  main.input("cond", DType::kBool, {}).input("x", DType::kF32, {2});
  main.node("If", {"cond"}, {"y"}, {{"then_branch", then_b.g}, {"else_branch", else_b.g}}, "pick").output("y");
  Session s(main.model());
  try {
    s.run({{"cond", Tensor::scalar<bool>(true)}, {"x", f32({1, 2}, {2})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("node 'pick' (If)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("f32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("i64"), std::string::npos) << msg;
  }
}

TEST(ControlFlow, IfWithAConstantConditionInfersOnlyTheTakenBranch) {
  Builder then_b("then");
  then_b.outer("x").node("Neg", {"x"}, {"t"}).output("t");
  Builder else_b("else");  // a different shape: would make the output unknown if it counted
  else_b.constant("e", f32({0}, {1})).output("e");
  Builder main;
  main.input("x", DType::kF32, {2}).constant("c", Tensor::scalar<bool>(true));
  main.node("If", {"c"}, {"y"}, {{"then_branch", then_b.g}, {"else_branch", else_b.g}}).output("y");
  SessionOptions opts;
  opts.opt_level = 0;  // keep the If (folding leaves control flow alone anyway)
  Session s(main.model(), opts);
  EXPECT_EQ(values(s.run({{"x", f32({1, -2}, {2})}})[0]), (std::vector<float>{-1, 2}));
  EXPECT_TRUE(s.memory_stats().planned);
}

// ---- Loop ----------------------------------------------------------------------------------

// Loop(M, cond, s0): s += x[i] (x read from the main graph), scan output s * 10 each iteration.
std::shared_ptr<Model> loop_model(bool with_cond, bool m_constant, int64_t m_value = 0) {
  Builder body("body");
  body.input("i", DType::kI64, {}).input("c_in", DType::kBool, {}).input("s_in", DType::kF32, {1});
  body.outer("x").outer("limit").outer("ten");
  body.constant("zero_axis", Tensor::from_vector<int64_t>({0}, {1})).constant("one", Tensor::from_vector<int64_t>({1}, {1}));
  body.node("Unsqueeze", {"i", "zero_axis"}, {"i1"});
  body.node("Add", {"i1", "one"}, {"i2"});
  body.node("Slice", {"x", "i1", "i2"}, {"xi"});
  body.node("Add", {"s_in", "xi"}, {"s_out"});
  body.node("Less", {"s_out", "limit"}, {"c_vec"});
  body.node("Squeeze", {"c_vec"}, {"c_out"});
  body.node("Mul", {"s_out", "ten"}, {"scan"});
  body.output("c_out").output("s_out").output("scan");
  // Declared as ONNX files declare subgraph outputs: what a zero-trip loop's scan output holds.
  Value& scan = body.g->value(body.v("scan"));
  scan.dtype = DType::kF32;
  scan.has_shape = true;
  scan.shape = {Dim::fixed(1)};
  Builder main;
  if (m_constant) main.constant("M", Tensor::scalar<int64_t>(m_value));
  else main.input("M", DType::kI64, {});
  main.input("x", DType::kF32, {6}).input("s0", DType::kF32, {1});
  main.constant("limit", f32({8}, {1})).constant("ten", f32({10}, {1}));
  if (with_cond) main.constant("go", Tensor::scalar<bool>(true));
  main.node("Loop", {"M", with_cond ? "go" : "", "s0"}, {"s_final", "scans"}, {{"body", body.g}}, "accumulate");
  main.output("s_final").output("scans");
  return main.model();
}

const Tensor kLoopX = f32({1, 2, 3, 4, 5, 6}, {6});

TEST(ControlFlow, LoopCarriesValuesAndStacksScanOutputs) {
  Session s(loop_model(/*with_cond=*/false, /*m_constant=*/false));
  const std::vector<Tensor> out = s.run({{"M", Tensor::scalar<int64_t>(4)}, {"x", kLoopX}, {"s0", f32({0.5f}, {1})}});
  EXPECT_EQ(values(out[0]), (std::vector<float>{10.5f}));  // 0.5 + 1 + 2 + 3 + 4
  EXPECT_EQ(out[1].shape(), (Shape{4, 1}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{15, 35, 65, 105}));
}

TEST(ControlFlow, LoopStopsWhenTheBodySaysSo) {
  // while s < 8: s = 0 + 1 + 2 + 3 = 6 < 8, + 4 = 10 stops after the 4th iteration.
  Session s(loop_model(/*with_cond=*/true, /*m_constant=*/false));
  const std::vector<Tensor> out = s.run({{"M", Tensor::scalar<int64_t>(100)}, {"x", kLoopX}, {"s0", f32({0}, {1})}});
  EXPECT_EQ(values(out[0]), (std::vector<float>{10}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{10, 30, 60, 100}));
}

TEST(ControlFlow, ZeroTripLoopReturnsTheInitialValuesAndEmptyScans) {
  Session s(loop_model(/*with_cond=*/false, /*m_constant=*/false));
  const std::vector<Tensor> out = s.run({{"M", Tensor::scalar<int64_t>(0)}, {"x", kLoopX}, {"s0", f32({7}, {1})}});
  EXPECT_EQ(values(out[0]), (std::vector<float>{7}));
  EXPECT_EQ(out[1].shape(), (Shape{0, 1}));
}

// With a constant trip count and a body whose shapes do not depend on values, even the scan
// outputs' shapes are known: the Loop is a step of the static plan.
TEST(ControlFlow, LoopWithAConstantTripCountIsPlanned) {
  Builder body("body");
  body.input("i", DType::kI64, {}).input("c_in", DType::kBool, {}).input("s_in", DType::kF32, {2});
  body.outer("x").constant("ten", f32({10}, {1}));
  body.node("Add", {"s_in", "x"}, {"s_out"}).node("Mul", {"s_out", "ten"}, {"scan"});
  body.node("Identity", {"c_in"}, {"c_out"});
  body.output("c_out").output("s_out").output("scan");
  Builder main;
  main.input("x", DType::kF32, {2}).input("s0", DType::kF32, {2}).constant("M", Tensor::scalar<int64_t>(3));
  main.node("Loop", {"M", "", "s0"}, {"s", "scans"}, {{"body", body.g}}).output("s").output("scans");
  Session s(main.model());
  const std::vector<Tensor> out = s.run({{"x", f32({1, 2}, {2})}, {"s0", f32({0, 1}, {2})}});
  EXPECT_TRUE(s.memory_stats().planned);
  EXPECT_EQ(values(out[0]), (std::vector<float>{3, 7}));
  EXPECT_EQ(out[1].shape(), (Shape{3, 2}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{10, 30, 20, 50, 30, 70}));
}

// A Loop whose body only carries values: planned even with a run-time trip count. Its body is
// prepared once; further iterations allocate no tensor buffers at all.
TEST(ControlFlow, LoopBodyIsPlannedOnceNotPerIteration) {
  Builder body("body");
  body.input("i", DType::kI64, {}).input("c_in", DType::kBool, {}).input("h_in", DType::kF32, {1, 4});
  body.outer("w").outer("b");
  body.node("MatMul", {"h_in", "w"}, {"m"}).node("Add", {"m", "b"}, {"a"}).node("Tanh", {"a"}, {"h_out"});
  body.node("Identity", {"c_in"}, {"c_out"});
  body.output("c_out").output("h_out");
  Builder main;
  main.input("M", DType::kI64, {}).input("h0", DType::kF32, {1, 4});
  std::vector<float> w(16);
  for (size_t k = 0; k < w.size(); ++k) w[k] = 0.1f * static_cast<float>(static_cast<int>(k % 5) - 2);
  main.constant("w", f32(w, {4, 4})).constant("b", f32({0.1f, -0.2f, 0.3f, 0.0f}, {1, 4}));
  main.node("Loop", {"M", "", "h0"}, {"h"}, {{"body", body.g}}).output("h");
  Session s(main.model());
  const Tensor h0 = f32({1, 0, -1, 0.5f}, {1, 4});
  auto run = [&](int64_t m) { return s.run({{"M", Tensor::scalar<int64_t>(m)}, {"h0", h0}})[0]; };
  // The reference: the same recurrence by hand.
  std::vector<float> h = values(h0);
  for (int it = 0; it < 20; ++it) {
    std::vector<float> next(4);
    for (int j = 0; j < 4; ++j) {
      float acc = 0;
      for (int k = 0; k < 4; ++k) acc += h[static_cast<size_t>(k)] * w[static_cast<size_t>(k * 4 + j)];
      next[static_cast<size_t>(j)] = std::tanh(acc + std::vector<float>{0.1f, -0.2f, 0.3f, 0.0f}[static_cast<size_t>(j)]);
    }
    h = next;
  }
  const Tensor got = run(20);
  EXPECT_TRUE(s.memory_stats().planned);
  for (int j = 0; j < 4; ++j) EXPECT_NEAR(got.data<float>()[j], h[static_cast<size_t>(j)], 1e-5f);
  run(3);
  const int64_t before_short = Buffer::allocation_count();
  run(3);
  const int64_t short_run = Buffer::allocation_count() - before_short;
  const int64_t before_long = Buffer::allocation_count();
  run(60);
  const int64_t long_run = Buffer::allocation_count() - before_long;
  EXPECT_EQ(long_run, short_run) << "buffers allocated per iteration";
}

// A Loop whose body holds an If whose branches read a value of the body (y) and one of the
// main graph (w), two scopes out.
TEST(ControlFlow, NestedIfInsideLoopReadsBothEnclosingScopes) {
  Builder then_b("then");
  then_b.outer("y").outer("w").node("Add", {"y", "w"}, {"t"}).output("t");
  Builder else_b("else");
  else_b.outer("y").outer("w").node("Sub", {"y", "w"}, {"e"}).output("e");
  Builder body("body");
  body.input("i", DType::kI64, {}).input("c_in", DType::kBool, {}).input("s_in", DType::kF32, {2});
  body.constant("one", Tensor::scalar<int64_t>(1));
  body.node("Less", {"i", "one"}, {"first"});
  body.node("Mul", {"s_in", "s_in"}, {"y"});
  body.node("If", {"first"}, {"z"}, {{"then_branch", then_b.g}, {"else_branch", else_b.g}}, "inner_if");
  body.node("Identity", {"c_in"}, {"c_out"});
  body.output("c_out").output("z");  // w is read only by the inner If: not a value of the body
  Builder main;
  main.input("M", DType::kI64, {}).input("s0", DType::kF32, {2}).constant("w", f32({1, 2}, {2}));
  main.node("Loop", {"M", "", "s0"}, {"s"}, {{"body", body.g}}).output("s");
  Session s(main.model());
  // i=0: s = s^2 + w; i=1 and i=2: s = s^2 - w.
  std::vector<float> ref{1, 0.5f};
  const std::vector<float> w{1, 2};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) ref[j] = ref[j] * ref[j] + (i == 0 ? w[j] : -w[j]);
  }
  EXPECT_EQ(values(s.run({{"M", Tensor::scalar<int64_t>(3)}, {"s0", f32({1, 0.5f}, {2})}})[0]), ref);
}

TEST(ControlFlow, LoopBodyWithTheWrongNumberOfInputsIsAnErrorNamingTheNode) {
  Builder body("body");
  body.input("i", DType::kI64, {}).input("c_in", DType::kBool, {});  // no loop-carried input
  body.node("Identity", {"c_in"}, {"c_out"}).output("c_out").output("c_in");
  Builder main;
  main.input("M", DType::kI64, {}).input("s0", DType::kF32, {1});
  main.node("Loop", {"M", "", "s0"}, {"s"}, {{"body", body.g}}, "bad_loop").output("s");
  Session s(main.model());
  try {
    s.run({{"M", Tensor::scalar<int64_t>(2)}, {"s0", f32({0}, {1})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("node 'bad_loop' (Loop)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the body has 2 inputs"), std::string::npos) << msg;
  }
}

TEST(ControlFlow, LoopWhoseBodyChangesACarriedDtypeIsAnError) {
  Builder body("body");
  body.input("i", DType::kI64, {}).input("c_in", DType::kBool, {}).untyped_input("s_in");
  body.node("Cast", {"s_in"}, {"s_out"}, {{"to", int64_t{7}}}).node("Identity", {"c_in"}, {"c_out"});
  body.output("c_out").output("s_out");
  Builder main;
  main.input("M", DType::kI64, {}).input("s0", DType::kF32, {1});
  main.node("Loop", {"M", "", "s0"}, {"s"}, {{"body", body.g}}, "casting_loop").output("s");
  Session s(main.model());
  try {
    s.run({{"M", Tensor::scalar<int64_t>(2)}, {"s0", f32({0}, {1})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("node 'casting_loop' (Loop)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("loop-carried value 0"), std::string::npos) << msg;
  }
}

// An error inside a body says which control-flow node and which iteration it came from.
TEST(ControlFlow, ErrorsInsideABodyNameTheNodeAndTheIteration) {
  Builder body("body");
  body.input("i", DType::kI64, {}).input("c_in", DType::kBool, {}).input("s_in", DType::kF32, {});
  body.outer("table");
  body.node("Gather", {"table", "i"}, {"picked"}, {}, "lookup").node("Add", {"s_in", "picked"}, {"s_out"});
  body.node("Identity", {"c_in"}, {"c_out"}).output("c_out").output("s_out");
  Builder main;
  main.input("M", DType::kI64, {}).input("s0", DType::kF32, {}).constant("table", f32({1, 2, 3}, {3}));
  main.node("Loop", {"M", "", "s0"}, {"s"}, {{"body", body.g}}, "walk").output("s");
  Session s(main.model());
  EXPECT_EQ(s.run({{"M", Tensor::scalar<int64_t>(3)}, {"s0", Tensor::scalar<float>(0)}})[0].data<float>()[0], 6.0f);
  try {
    s.run({{"M", Tensor::scalar<int64_t>(5)}, {"s0", Tensor::scalar<float>(0)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("node 'walk' (Loop): body (iteration 3): node 'lookup' (Gather)"), std::string::npos) << msg;
  }
}

// ---- Scan ----------------------------------------------------------------------------------

// Running sum over rows of x (axis `in_axis`), scan output the running sum (reversed stacking when asked).
std::shared_ptr<Model> scan_model(int64_t in_axis, int64_t in_reverse, int64_t out_axis, int64_t out_reverse) {
  Builder body("body");
  body.input("acc_in", DType::kF32, {2}).input("row", DType::kF32, {2});
  body.node("Add", {"acc_in", "row"}, {"acc_out"}).node("Identity", {"acc_out"}, {"seen"});
  body.output("acc_out").output("seen");
  Builder main;
  main.input("init", DType::kF32, {2}).input("x", DType::kF32, in_axis == 0 ? Shape{3, 2} : Shape{2, 3});
  main.node("Scan", {"init", "x"}, {"total", "partial"},
            {{"body", body.g},
             {"num_scan_inputs", int64_t{1}},
             {"scan_input_axes", std::vector<int64_t>{in_axis}},
             {"scan_input_directions", std::vector<int64_t>{in_reverse}},
             {"scan_output_axes", std::vector<int64_t>{out_axis}},
             {"scan_output_directions", std::vector<int64_t>{out_reverse}}},
            "running_sum");
  main.output("total").output("partial");
  return main.model();
}

TEST(ControlFlow, ScanCarriesStatesAndStacksOutputs) {
  Session s(scan_model(0, 0, 0, 0));
  const std::vector<Tensor> out = s.run({{"init", f32({0, 0}, {2})}, {"x", f32({1, 2, 3, 4, 5, 6}, {3, 2})}});
  EXPECT_TRUE(s.memory_stats().planned);  // the sequence length is a shape: always static
  EXPECT_EQ(values(out[0]), (std::vector<float>{9, 12}));
  EXPECT_EQ(out[1].shape(), (Shape{3, 2}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, 2, 4, 6, 9, 12}));
}

TEST(ControlFlow, ScanAxesAndDirections) {
  // x is [2,3]: scanning axis 1 in reverse visits columns (3,6), (2,5), (1,4); the partial
  // sums (3,6), (5,11), (6,15) stack along output axis 1, in reverse order.
  Session s(scan_model(1, 1, 1, 1));
  const std::vector<Tensor> out = s.run({{"init", f32({0, 0}, {2})}, {"x", f32({1, 2, 3, 4, 5, 6}, {2, 3})}});
  EXPECT_EQ(values(out[0]), (std::vector<float>{6, 15}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 3}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{6, 5, 3, 15, 11, 6}));
}

TEST(ControlFlow, ScanOverAnEmptySequenceGivesTheInitialStates) {
  Builder body("body");
  body.input("acc_in", DType::kF32, {2}).input("row", DType::kF32, {2});
  body.node("Add", {"acc_in", "row"}, {"acc_out"}).output("acc_out").output("acc_out");
  Builder main;
  main.input("init", DType::kF32, {2}).input("x", DType::kF32, {0, 2});
  main.node("Scan", {"init", "x"}, {"total", "partial"}, {{"body", body.g}, {"num_scan_inputs", int64_t{1}}});
  main.output("total").output("partial");
  Session s(main.model());
  const std::vector<Tensor> out = s.run({{"init", f32({1, 2}, {2})}, {"x", Tensor(DType::kF32, {0, 2})}});
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(out[1].shape(), (Shape{0, 2}));
}

TEST(ControlFlow, ScanBodyWithTheWrongNumberOfInputsIsAnErrorNamingTheNode) {
  Builder body("body");
  body.input("row", DType::kF32, {2});
  body.node("Neg", {"row"}, {"y"}).output("y");
  Builder main;
  main.input("init", DType::kF32, {2}).input("x", DType::kF32, {3, 2});
  main.node("Scan", {"init", "x"}, {"y"}, {{"body", body.g}, {"num_scan_inputs", int64_t{1}}}, "bad_scan").output("y");
  Session s(main.model());
  try {
    s.run({{"init", f32({0, 0}, {2})}, {"x", Tensor(DType::kF32, {3, 2})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("node 'bad_scan' (Scan)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("the body has 1 inputs but the node gives 2"), std::string::npos) << msg;
  }
}

// ---- around the runtime ----------------------------------------------------------------------

// The If comes before the node computing the value its branch reads: sorting the nodes counts
// that read as an input.
TEST(ControlFlow, TopologicalSortOrdersImplicitInputsFirst) {
  Builder then_b("then");
  then_b.outer("doubled").node("Identity", {"doubled"}, {"t"}).output("t");
  Builder else_b("else");
  else_b.outer("x").node("Identity", {"x"}, {"e"}).output("e");
  Builder main;
  main.input("cond", DType::kBool, {}).input("x", DType::kF32, {2});
  main.node("If", {"cond"}, {"y"}, {{"then_branch", then_b.g}, {"else_branch", else_b.g}});
  main.node("Add", {"x", "x"}, {"doubled"});
  main.output("y");
  Graph g = *main.g;
  g.topological_sort();
  EXPECT_EQ(g.nodes[0].op_type, "Add");
  auto m = std::make_shared<Model>();
  m->graph = g;
  Session s(m);
  EXPECT_EQ(values(s.run({{"cond", Tensor::scalar<bool>(true)}, {"x", f32({1, 2}, {2})}})[0]),
            (std::vector<float>{2, 4}));
}

// A value only a subgraph reads stays alive in the arena until the control-flow node ran: here
// `d` dies for the main graph right after Relu, but the If reads it afterwards.
TEST(ControlFlow, PlannerKeepsImplicitInputsAlive) {
  Builder then_b("then");
  then_b.outer("d").node("Neg", {"d"}, {"t"}).output("t");
  Builder else_b("else");
  else_b.outer("d").node("Abs", {"d"}, {"e"}).output("e");
  Builder main;
  main.input("cond", DType::kBool, {}).input("x", DType::kF32, {64});
  main.node("Mul", {"x", "x"}, {"d"}).node("Relu", {"d"}, {"r"}).node("Sigmoid", {"r"}, {"big"});
  main.node("If", {"cond"}, {"y"}, {{"then_branch", then_b.g}, {"else_branch", else_b.g}});
  main.node("Add", {"y", "big"}, {"z"}).output("z");
  Session s(main.model());
  std::vector<float> xs(64);
  std::iota(xs.begin(), xs.end(), -32.0f);
  const std::vector<float> z = values(s.run({{"cond", Tensor::scalar<bool>(true)}, {"x", f32(xs, {64})}})[0]);
  EXPECT_TRUE(s.memory_stats().planned);
  for (size_t i = 0; i < xs.size(); ++i) {
    const float d = xs[i] * xs[i];
    const float ref = -d + 1.0f / (1.0f + std::exp(-d));
    EXPECT_NEAR(z[i], ref, 1e-5f * std::max(1.0f, std::abs(ref))) << i;
  }
}

TEST(ControlFlow, GraphCostCountsEachSubgraphOnce) {
  const GraphCost cost = estimate_graph_cost(if_model()->graph);
  EXPECT_TRUE(cost.static_shapes);
  ASSERT_EQ(cost.nodes.size(), 1u);
  // Add (3) + Mul (3) for the branches, plus the If's own output (3).
  EXPECT_DOUBLE_EQ(cost.total.macs, 9);
  const GraphCost scan = estimate_graph_cost(scan_model(0, 0, 0, 0)->graph);
  EXPECT_TRUE(scan.static_shapes);
  // One iteration of the body (Add 2; Identity only moves data) plus the Scan's outputs (2 + 6).
  EXPECT_DOUBLE_EQ(scan.total.macs, 10);
  // A Loop with a run-time trip count and scan outputs: learnt by execution.
  const GraphCost loop = estimate_graph_cost(loop_model(false, false)->graph);
  EXPECT_FALSE(loop.static_shapes);
}

TEST(ControlFlow, SubgraphsSurviveTheXnnFormat) {
  const std::shared_ptr<Model> m = loop_model(/*with_cond=*/true, /*m_constant=*/false);
  const std::string bytes = serialize_xnn(*m);
  auto back = std::make_shared<Model>(load_xnn_bytes(bytes.data(), bytes.size(), "loop.xnn"));
  Session a(m), b(back);
  const std::map<std::string, Tensor> in{{"M", Tensor::scalar<int64_t>(9)}, {"x", kLoopX}, {"s0", f32({1}, {1})}};
  const std::vector<Tensor> ra = a.run(in), rb = b.run(in);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) EXPECT_EQ(values(ra[i]), values(rb[i]));
}

TEST(ControlFlow, ShapesChangingBetweenRunsReprepareTheBodies) {
  Builder body("body");
  body.input("acc_in", DType::kF32, {}).input("row", DType::kF32, {});
  body.node("Add", {"acc_in", "row"}, {"acc_out"}).output("acc_out").output("acc_out");
  Builder main;
  main.input("init", DType::kF32, {}).input("x", DType::kF32, {1});
  main.g->value(main.g->inputs.back()).shape = {Dim::named("n")};  // any length
  main.node("Scan", {"init", "x"}, {"total", "partial"}, {{"body", body.g}, {"num_scan_inputs", int64_t{1}}});
  main.output("total").output("partial");
  Session s(main.model());
  for (int n : {3, 5, 2}) {
    std::vector<float> xs(static_cast<size_t>(n), 1.0f);
    const std::vector<Tensor> out = s.run({{"init", Tensor::scalar<float>(0)}, {"x", f32(xs, {n})}});
    EXPECT_EQ(out[0].data<float>()[0], static_cast<float>(n));
    EXPECT_EQ(out[1].shape(), (Shape{n}));
  }
}

}  // namespace
}  // namespace xnn
