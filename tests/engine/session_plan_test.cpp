// The prepared session: static memory plan, views, in-place ops, optimised kernels and graph
// passes must give the reference runtime's results; steady-state runs must not allocate.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <execinfo.h>
#include <random>

#include "engine/core/half.h"
#include "engine/kernels/cpu_features.h"
#include "engine/runtime/session.h"

// Counting global operator new: a steady-state Session::run must not call it. The replacements
// allocate with malloc and free with free; GCC cannot see that they pair.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<bool> g_count_new{false};
std::atomic<int64_t> g_news{0};
}  // namespace
void* operator new(size_t n) {
  if (g_count_new.load(std::memory_order_relaxed)) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (std::getenv("XNN_TRACE_NEW")) {  // debugging aid: where did it come from?
      g_count_new = false;
      void* bt[12];
      backtrace_symbols_fd(bt, backtrace(bt, 12), 2);
      g_count_new = true;
    }
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// Every unaligned form is replaced, so no allocation made by one allocator is freed by another
// (sanitizers check that pairing).
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return operator new(n, std::nothrow); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace xnn {
namespace {

Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Tiny builder for test graphs.
struct Builder {
  Model model;
  Graph& g = model.graph;
  int input(const std::string& name, Shape shape) {
    Value v;
    v.name = name;
    v.dtype = DType::kF32;
    v.has_shape = true;
    for (int64_t d : shape) v.shape.push_back(Dim{d, ""});
    const int i = g.add_value(v);
    g.inputs.push_back(i);
    return i;
  }
  int constant(const std::string& name, Tensor t) { return g.add_constant(name, std::move(t)); }
  int node(const std::string& op, std::vector<int> ins, std::map<std::string, Attribute> attrs = {},
           const std::string& name = "") {
    Node n;
    n.op_type = op;
    n.name = name.empty() ? op + std::to_string(g.nodes.size()) : name;
    n.inputs = std::move(ins);
    Value out;
    out.name = n.name + "_out";
    n.outputs = {g.add_value(out)};
    n.attrs = std::move(attrs);
    g.nodes.push_back(n);
    return n.outputs[0];
  }
  std::shared_ptr<Model> done(std::vector<int> outputs) {
    g.outputs = std::move(outputs);
    return std::make_shared<Model>(model);
  }
};

double max_rel_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double m = 0, d = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(b.data<float>()[i])));
    d = std::max(d, std::fabs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]));
  }
  return d / std::max(m, 1e-30);
}

SessionOptions reference_options() {
  SessionOptions o;
  o.opt_level = 0;
  o.cpu_kernels = false;
  o.memory_planning = false;
  return o;
}

// conv-bn-relu -> depthwise -> 1x1 conv + residual -> relu -> pool -> flatten -> gemm.
std::shared_ptr<Model> small_cnn(int64_t batch = 1) {
  Builder b;
  const int x = b.input("x", {batch, 8, 12, 12});
  const int w1 = b.constant("w1", random_tensor({16, 8, 3, 3}, 1, 0.2f));
  const int b1 = b.constant("b1", random_tensor({16}, 2));
  int c1 = b.node("Conv", {x, w1, b1}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "conv1");
  Tensor scale = random_tensor({16}, 3, 0.1f), var = random_tensor({16}, 4, 0.1f);
  for (int64_t i = 0; i < 16; ++i) {
    scale.data<float>()[i] += 1.0f;
    var.data<float>()[i] = std::fabs(var.data<float>()[i]) + 0.5f;
  }
  const int bn = b.node("BatchNormalization", {c1, b.constant("g", scale), b.constant("beta", random_tensor({16}, 5)),
                                               b.constant("mean", random_tensor({16}, 6)), b.constant("var", var)});
  const int r1 = b.node("Relu", {bn});
  const int wd = b.constant("wd", random_tensor({16, 1, 3, 3}, 7, 0.3f));
  const int dw = b.node("Conv", {r1, wd}, {{"group", int64_t{16}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "dw");
  const int clip = b.node("Clip", {dw, b.constant("lo", Tensor::scalar(0.0f)), b.constant("hi", Tensor::scalar(6.0f))});
  const int w2 = b.constant("w2", random_tensor({16, 16, 1, 1}, 8, 0.25f));
  const int c2 = b.node("Conv", {clip, w2}, {}, "pw");
  const int add = b.node("Add", {c2, r1});
  const int r2 = b.node("Relu", {add});
  const int pool = b.node("MaxPool", {r2}, {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
  const int gap = b.node("GlobalAveragePool", {pool});
  const int flat = b.node("Flatten", {gap});
  const int fw = b.constant("fw", random_tensor({10, 16}, 9, 0.3f));
  const int fb = b.constant("fb", random_tensor({10}, 10));
  const int fc = b.node("Gemm", {flat, fw, fb}, {{"transB", int64_t{1}}}, "fc");
  const int sm = b.node("Softmax", {fc}, {{"axis", int64_t{-1}}});
  return b.done({sm, fc});
}

TEST(SessionPlan, OptimisedSessionMatchesReference) {
  for (int64_t batch : {1, 3}) {
    auto model = small_cnn(batch);
    const Tensor x = random_tensor({batch, 8, 12, 12}, 11);
    Session ref(model, reference_options());
    const std::vector<Tensor> want = ref.run({{"x", x}});
    for (int level : {0, 1, 2}) {
      for (int threads : {1, 2, 3}) {
        SessionOptions o;
        o.opt_level = level;
        o.threads = threads;
        Session s(model, o);
        const std::vector<Tensor> got = s.run({{"x", x}});
        ASSERT_EQ(got.size(), 2u);
        EXPECT_LE(max_rel_diff(got[0], want[0]), 1e-5) << "level " << level << " threads " << threads;
        EXPECT_LE(max_rel_diff(got[1], want[1]), 1e-5) << "level " << level << " threads " << threads;
        const MemoryStats m = s.memory_stats();
        EXPECT_TRUE(m.planned);
        EXPECT_GT(m.arena_bytes, 0);
        EXPECT_LE(m.arena_bytes, m.lower_bound_bytes * 11 / 10 + 64);
      }
    }
  }
}

TEST(SessionPlan, LevelTwoFusesAndPlansViews) {
  SessionOptions o;
  o.opt_level = 2;
  Session s(small_cnn(), o);
  int bn = 0, relu = 0;
  for (const Node& n : s.optimized_graph().nodes) {
    bn += n.op_type == "BatchNormalization";
    relu += n.op_type == "Relu";
  }
  EXPECT_EQ(bn, 0);
  EXPECT_EQ(relu, 0);
  s.run({{"x", random_tensor({1, 8, 12, 12}, 1)}});
  const std::vector<std::string> kernels = s.kernel_names();
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "view"), kernels.end()) << "Flatten should be a view";
  EXPECT_GE(s.memory_stats().aliased_tensors, 1);
}

TEST(SessionPlan, SteadyStateRunAllocatesNothing) {
  for (int threads : {1, 2}) {
    SessionOptions o;
    o.threads = threads;
    Session s(small_cnn(2), o);
    std::map<std::string, Tensor> in{{"x", random_tensor({2, 8, 12, 12}, 3)}};
    std::vector<Tensor> out = s.run(in);
    out.clear();
    out = s.run(in);  // scratch buffers reach their final size
    out.clear();
    out.reserve(4);
    const int64_t buffers = Buffer::allocation_count();
    g_news = 0;
    g_count_new = true;
    std::vector<Tensor> again = s.run(in);
    g_count_new = false;
    // Only the caller-facing handles allocate: the returned vector, and the shape vectors of the
    // input handle the session binds and of the two output handles it returns. Kernels, the
    // thread pool and the plan allocate nothing.
    EXPECT_LE(g_news.load(), 1 + 1 + 2) << "operator new calls in a steady-state run, threads " << threads;
    EXPECT_EQ(Buffer::allocation_count(), buffers) << "tensor buffers allocated in a steady-state run";
  }
}

TEST(SessionPlan, OutputsHeldByTheCallerAreNotOverwritten) {
  Session s(small_cnn());
  const Tensor x1 = random_tensor({1, 8, 12, 12}, 21), x2 = random_tensor({1, 8, 12, 12}, 22);
  const std::vector<Tensor> first = s.run({{"x", x1}});
  const Tensor first_copy = first[1].clone();
  const std::vector<Tensor> second = s.run({{"x", x2}});
  EXPECT_EQ(max_rel_diff(first[1], first_copy), 0.0);
  EXPECT_GT(max_rel_diff(second[1], first_copy), 0.0);
}

TEST(SessionPlan, NewInputShapesArePreparedAgain) {
  auto model = small_cnn();
  // Make the batch symbolic.
  model->graph.values[static_cast<size_t>(model->graph.inputs[0])].shape[0] = Dim{-1, "N"};
  Session s(model);
  Session ref(model, reference_options());
  for (int64_t batch : {1, 4, 2, 4}) {
    const Tensor x = random_tensor({batch, 8, 12, 12}, static_cast<uint32_t>(batch));
    const std::vector<Tensor> got = s.run({{"x", x}});
    const std::vector<Tensor> want = ref.run({{"x", x}});
    EXPECT_EQ(got[1].shape(), (Shape{batch, 10}));
    EXPECT_LE(max_rel_diff(got[1], want[1]), 1e-5);
  }
}

TEST(SessionPlan, ShapeComputationsAreEvaluatedAtPreparation) {
  // x -> Shape -> Gather(0) -> Unsqueeze -> Concat(-1) -> Reshape(x): PyTorch's flatten.
  Builder b;
  const int x = b.input("x", {2, 3, 4});
  const int shape = b.node("Shape", {x});
  const int idx = b.constant("zero", Tensor::scalar<int64_t>(0));
  const int n = b.node("Gather", {shape, idx}, {{"axis", int64_t{0}}});
  const int axes = b.constant("axes", Tensor::from_vector<int64_t>({0}, {1}));
  const int un = b.node("Unsqueeze", {n, axes});
  const int minus1 = b.constant("m1", Tensor::from_vector<int64_t>({-1}, {1}));
  const int cat = b.node("Concat", {un, minus1}, {{"axis", int64_t{0}}});
  const int rs = b.node("Reshape", {x, cat});
  const int y = b.node("Relu", {rs});
  SessionOptions o;
  o.opt_level = 0;  // keep the chain for the session to evaluate
  Session s(b.done({y}), o);
  const Tensor in = random_tensor({2, 3, 4}, 5);
  const Tensor out = s.run({{"x", in}})[0];
  EXPECT_EQ(out.shape(), (Shape{2, 12}));
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(out.data<float>()[i], std::max(0.0f, in.data<float>()[i]));
  const std::vector<std::string> k = s.kernel_names();
  EXPECT_EQ(std::count(k.begin(), k.end(), "shape-time"), 4);
  EXPECT_EQ(std::count(k.begin(), k.end(), "view"), 1);  // Reshape of the graph input
}

TEST(SessionPlan, DataDependentShapesRunWithoutAPlan) {
  // The target shape of the Reshape is a runtime input: no static plan, still correct.
  Builder b;
  const int x = b.input("x", {6});
  Value sv;
  sv.name = "shape";
  sv.dtype = DType::kI64;
  sv.has_shape = true;
  sv.shape = {Dim{2, ""}};
  const int shape = b.g.add_value(sv);
  b.g.inputs.push_back(shape);
  const int r = b.node("Reshape", {x, shape});
  const int y = b.node("Relu", {r});
  Session s(b.done({y}));
  const Tensor in = Tensor::from_vector<float>({0, 1, -2, 2, 3, -1}, {6});
  const Tensor out = s.run({{"x", in}, {"shape", Tensor::from_vector<int64_t>({3, 2}, {2})}})[0];
  EXPECT_FALSE(s.memory_stats().planned);
  ASSERT_EQ(out.shape(), (Shape{3, 2}));
  EXPECT_EQ(out.data<float>()[2], 0.0f);
  EXPECT_EQ(out.data<float>()[4], 3.0f);
  const Tensor out2 = s.run({{"x", in}, {"shape", Tensor::from_vector<int64_t>({2, 3}, {2})}})[0];
  EXPECT_EQ(out2.shape(), (Shape{2, 3}));
}

TEST(SessionPlan, InPlaceOnlyWhenTheInputDies) {
  // x -> Relu(a) -> Sigmoid(b) ; a is also read by the final Add: Sigmoid must not overwrite a.
  Builder b;
  const int x = b.input("x", {64});
  const int a = b.node("Relu", {x});
  const int s1 = b.node("Sigmoid", {a});
  const int e = b.node("Exp", {s1});  // s1 dies here: may be in place
  const int y = b.node("Add", {e, a});
  SessionOptions o;
  o.opt_level = 0;
  Session s(b.done({y}), o);
  Session ref(std::make_shared<Model>(s.model()), reference_options());
  const Tensor in = random_tensor({64}, 9);
  EXPECT_EQ(max_rel_diff(s.run({{"x", in}})[0], ref.run({{"x", in}})[0]), 0.0);
  EXPECT_GE(s.memory_stats().in_place_tensors, 1);
}

TEST(SessionPlan, PlanSummaryDescribesWhatTheProfiledRunExecutes) {
  SessionOptions o;
  o.profile = true;
  Session s(small_cnn(2), o);
  EXPECT_TRUE(s.plan_summary().empty()) << "nothing is prepared yet";
  s.prepare({{"x", {2, 8, 12, 12}}});
  const std::vector<NodeProfile> planned = s.plan_summary();
  s.run({{"x", random_tensor({2, 8, 12, 12}, 3)}});
  const std::vector<NodeProfile>& ran = s.last_profile();
  ASSERT_EQ(planned.size(), ran.size());
  ASSERT_FALSE(planned.empty());
  for (size_t i = 0; i < planned.size(); ++i) {
    EXPECT_EQ(planned[i].node_index, ran[i].node_index);
    EXPECT_EQ(planned[i].name, ran[i].name);
    EXPECT_EQ(planned[i].op_type, ran[i].op_type);
    EXPECT_EQ(planned[i].kernel, ran[i].kernel);
    EXPECT_EQ(planned[i].input_shapes, ran[i].input_shapes) << planned[i].name;
    EXPECT_EQ(planned[i].output_shapes, ran[i].output_shapes) << planned[i].name;
    EXPECT_EQ(planned[i].macs, ran[i].macs);
    EXPECT_EQ(planned[i].time_ms, 0.0);
  }
  EXPECT_EQ(planned.front().input_shapes[0], (Shape{2, 8, 12, 12}));
}

// Every float a narrow-format session produces is representable in that format, the results
// stay close to fp32, and the model's own weights are left untouched.
TEST(SessionPlan, FloatEmulationRoundsWeightsInputsAndEveryOutput) {
  auto model = small_cnn(1);
  const Tensor x = random_tensor({1, 8, 12, 12}, 21);
  Session fp32(model);
  const std::vector<Tensor> want = fp32.run({{"x", x}});
  const Tensor x_before = x.clone();
  for (FloatEmulation fe : {FloatEmulation::kF16, FloatEmulation::kBF16}) {
    SessionOptions o;
    o.float_emulation = fe;
    o.profile = true;
    Session s(model, o);
    const std::vector<Tensor> got = s.run({{"x", x}});
    const double bound = fe == FloatEmulation::kF16 ? 2e-2 : 1e-1;  // 11 vs 8 significant bits
    for (size_t k = 0; k < got.size(); ++k) {
      const double d = max_rel_diff(got[k], want[k]);
      EXPECT_GT(d, 0.0) << "emulation changed nothing";
      EXPECT_LE(d, bound);
      Tensor again = got[k].clone();
      float* p = again.data<float>();
      for (int64_t i = 0; i < again.numel(); ++i) {
        const float r = fe == FloatEmulation::kF16 ? Half::to_float(Half::from_float(p[i])) : p[i];
        ASSERT_EQ(r, got[k].data<float>()[i]) << "output " << k << " element " << i << " is not an fp16 value";
      }
    }
    for (const Value& v : s.optimized_graph().values) {
      if (!v.is_constant() || v.data->dtype() != DType::kF32 || fe != FloatEmulation::kF16) continue;
      for (int64_t i = 0; i < v.data->numel(); ++i) {
        const float w = v.data->data<float>()[i];
        ASSERT_EQ(Half::to_float(Half::from_float(w)), w) << v.name;
      }
    }
  }
  EXPECT_EQ(max_rel_diff(x, x_before), 0.0) << "the caller's input was modified";
  for (const Value& v : model->graph.values) {
    if (v.name != "w1") continue;
    bool some_not_half = false;
    for (int64_t i = 0; i < v.data->numel(); ++i) {
      const float w = v.data->data<float>()[i];
      some_not_half |= Half::to_float(Half::from_float(w)) != w;
    }
    EXPECT_TRUE(some_not_half) << "the model's weights were rounded in place";
  }
}

// Runs `model` planned (at `level`, with `threads`) and on the reference runtime; returns the
// planned session's memory stats after checking every output.
MemoryStats expect_planned_matches_reference(const std::shared_ptr<Model>& model, const Tensor& x, int level = 0,
                                             int threads = 1) {
  Session ref(model, reference_options());
  const std::vector<Tensor> want = ref.run({{"x", x}});
  SessionOptions o;
  o.opt_level = level;
  o.threads = threads;
  Session s(model, o);
  for (int run = 0; run < 2; ++run) {  // the second run reuses the arena as it was left
    const std::vector<Tensor> got = s.run({{"x", x}});
    EXPECT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
      EXPECT_LE(max_rel_diff(got[k], want[k]), 1e-5) << "output " << k << " level " << level << " run " << run;
    }
  }
  const MemoryStats m = s.memory_stats();
  EXPECT_TRUE(m.planned);
  EXPECT_LE(m.arena_bytes, m.lower_bound_bytes * 11 / 10 + 64);
  return m;
}

int conv(Builder& b, int in, int64_t cin, int64_t cout, int64_t k, uint32_t seed) {
  const int w = b.constant("w" + std::to_string(seed), random_tensor({cout, cin, k, k}, seed, 0.3f));
  const int64_t p = k / 2;
  return b.node("Conv", {in, w}, {{"pads", std::vector<int64_t>{p, p, p, p}}});
}

TEST(SessionPlan, ConcatInputsAreWrittenAsSlicesOfItsOutput) {
  // a, relu(b) -> Concat -> conv; `a` is read again after the Concat (by a Sigmoid that may
  // then overwrite it, the Concat being dead by then).
  Builder b;
  const int x = b.input("x", {1, 8, 8, 8});
  const int a = conv(b, x, 8, 16, 3, 1);
  const int r = b.node("Relu", {conv(b, x, 8, 8, 1, 2)});
  const int cat = b.node("Concat", {a, r}, {{"axis", int64_t{1}}});
  const int y = conv(b, cat, 24, 16, 1, 3);
  const int z = b.node("Sigmoid", {a});
  auto model = b.done({b.node("Add", {y, z})});
  const Tensor in = random_tensor({1, 8, 8, 8}, 4);
  for (int level : {0, 1, 2}) {
    for (int threads : {1, 2}) {
      const MemoryStats m = expect_planned_matches_reference(model, in, level, threads);
      EXPECT_EQ(m.sliced_concats, 1) << "level " << level;
      EXPECT_EQ(m.sliced_tensors, 2) << "level " << level;
    }
  }
  SessionOptions o;
  o.opt_level = 0;
  Session s(model, o);
  s.run({{"x", in}});
  const std::vector<std::string> kernels = s.kernel_names();
  EXPECT_NE(std::find(kernels.begin(), kernels.end(), "sliced"), kernels.end());
}

TEST(SessionPlan, NestedConcatsAndViewsOfSlicesShareOneBuffer) {
  // Concat(Concat(a, b), Reshape(c)): c's producer writes through the view into the outer slice;
  // axis 0 and axis -3 (= 1) both qualify.
  Builder b;
  const int x = b.input("x", {1, 8, 8, 8});
  const int inner = b.node("Concat", {conv(b, x, 8, 16, 3, 1), conv(b, x, 8, 16, 1, 2)}, {{"axis", int64_t{-3}}});
  const int c = b.node("Reshape", {conv(b, x, 8, 8, 3, 3), b.constant("shape", Tensor::from_vector<int64_t>({1, 8, 64}, {3}))});
  const int c4 = b.node("Reshape", {c, b.constant("shape4", Tensor::from_vector<int64_t>({1, 8, 8, 8}, {4}))});
  const int outer = b.node("Concat", {inner, c4}, {{"axis", int64_t{1}}});
  auto model = b.done({b.node("Relu", {conv(b, outer, 40, 8, 1, 4)})});
  const MemoryStats m = expect_planned_matches_reference(model, random_tensor({1, 8, 8, 8}, 5));
  EXPECT_EQ(m.sliced_concats, 2);
  EXPECT_EQ(m.sliced_tensors, 4);
  EXPECT_EQ(m.aliased_tensors, 2);  // the two Reshapes stay views
}

TEST(SessionPlan, AViewOfAGraphInputBecomesACopyIntoItsSlice) {
  // Reshape(x) would be a run-time view of the caller's input; planned as a Concat slice, the
  // Reshape runs as a copy into the slice instead.
  Builder b;
  const int x = b.input("x", {1, 8, 8, 8});
  const int same = b.node("Reshape", {x, b.constant("s4", Tensor::from_vector<int64_t>({1, 8, 8, 8}, {4}))});
  const int cat = b.node("Concat", {same, conv(b, x, 8, 8, 3, 1)}, {{"axis", int64_t{1}}});
  const MemoryStats m =
      expect_planned_matches_reference(b.done({b.node("Relu", {cat})}), random_tensor({1, 8, 8, 8}, 7));
  EXPECT_EQ(m.sliced_concats, 1);
}

TEST(SessionPlan, ConcatsThatCannotBeSlicedAreCopied) {
  const Tensor in = random_tensor({1, 8, 8, 8}, 6);
  auto expect_copied = [&](std::shared_ptr<Model> model, const char* what) {
    const MemoryStats m = expect_planned_matches_reference(model, in);
    EXPECT_EQ(m.sliced_concats, 0) << what;
  };
  const std::map<std::string, Attribute> axis1{{"axis", int64_t{1}}};
  {
    Builder b;  // a graph input cannot be written by a producer
    const int x = b.input("x", {1, 8, 8, 8});
    expect_copied(b.done({b.node("Relu", {b.node("Concat", {x, conv(b, x, 8, 8, 3, 1)}, axis1)})}), "graph input");
  }
  {
    Builder b;  // the same tensor twice
    const int x = b.input("x", {1, 8, 8, 8});
    const int a = conv(b, x, 8, 8, 3, 1);
    expect_copied(b.done({b.node("Relu", {b.node("Concat", {a, a}, axis1)})}), "repeated input");
  }
  {
    Builder b;  // slices not contiguous: a dimension before the axis is not 1
    const int x = b.input("x", {1, 8, 8, 8});
    const std::map<std::string, Attribute> axis2{{"axis", int64_t{2}}};
    expect_copied(b.done({b.node("Relu", {b.node("Concat", {conv(b, x, 8, 8, 3, 1), conv(b, x, 8, 8, 1, 2)}, axis2)})}),
                  "axis 2");
  }
  {
    Builder b;  // the second slice would start 4 * 3 * 5 * 4 = 240 bytes in: not arena-aligned
    const int x = b.input("x", {1, 8, 8, 8});
    const std::map<std::string, Attribute> k35{{"kernel_shape", std::vector<int64_t>{6, 4}}};
    const int p = b.node("MaxPool", {conv(b, x, 8, 4, 1, 1)}, k35);  // [1, 4, 3, 5]
    const int q = b.node("MaxPool", {conv(b, x, 8, 4, 3, 2)}, k35);
    expect_copied(b.done({b.node("Relu", {b.node("Concat", {p, q}, axis1)})}), "misaligned slice");
  }
  {
    Builder b;  // a graph output owns its buffer
    const int x = b.input("x", {1, 8, 8, 8});
    expect_copied(b.done({b.node("Concat", {conv(b, x, 8, 8, 3, 1), conv(b, x, 8, 8, 1, 2)}, axis1)}), "graph output");
  }
}

// An expansion 1x1 conv whose only reader is a depthwise conv, with an intermediate too big for
// L2 (96 x 112 x 112 floats: 4.8 MB), runs as one banded kernel where the AVX-512 depthwise
// kernel is in use: the depthwise step is "fused", the intermediate gets no memory, and the
// results are the reference's. A second reader, or the intermediate being a graph output, keeps
// the two steps apart.
std::shared_ptr<Model> expand_depthwise(bool second_reader, bool intermediate_is_output) {
  Builder b;
  const int x = b.input("x", {1, 16, 112, 112});
  const int w1 = b.constant("w1", random_tensor({96, 16, 1, 1}, 21, 0.25f));
  const int b1 = b.constant("b1", random_tensor({96}, 22));
  const int e = b.node("Conv", {x, w1, b1}, {}, "expand");
  const int r = b.node("Relu", {e}, {}, "relu");  // fused into the expansion at level 2
  const int wd = b.constant("wd", random_tensor({96, 1, 3, 3}, 23, 0.3f));
  const int d = b.node("Conv", {r, wd},
                       {{"group", int64_t{96}},
                        {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                        {"strides", std::vector<int64_t>{2, 2}}},
                       "dw");
  std::vector<int> outputs{d};
  if (second_reader) outputs.push_back(b.node("GlobalAveragePool", {r}, {}, "gap"));
  if (intermediate_is_output) outputs.push_back(r);
  return b.done(outputs);
}

TEST(SessionPlan, ExpansionAndDepthwiseRunAsOneBandedKernel) {
  const Tensor x = random_tensor({1, 16, 112, 112}, 24);
  const int64_t intermediate_bytes = 96 * 112 * 112 * 4;
  for (bool second_reader : {false, true}) {
    for (bool intermediate_is_output : {false, true}) {
      if (second_reader && intermediate_is_output) continue;
      auto model = expand_depthwise(second_reader, intermediate_is_output);
      Session ref(model, reference_options());
      const std::vector<Tensor> want = ref.run({{"x", x}});
      for (int threads : {1, 2}) {
        SessionOptions o;
        o.threads = threads;
        o.profile = true;
        Session s(model, o);
        const std::vector<Tensor> got = s.run({{"x", x}});
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(max_rel_diff(got[i], want[i]), 1e-5) << "output " << i;
        const std::vector<std::string> k = s.kernel_names();
        const bool banded = std::any_of(k.begin(), k.end(), [](const std::string& n) {
          return n.rfind("f32_conv1x1_dwconv3x3s2_bands+", 0) == 0;
        });
        const bool fused = std::find(k.begin(), k.end(), "fused") != k.end();
        const bool expect = kernels::avx512_enabled() && !second_reader && !intermediate_is_output;
        EXPECT_EQ(banded, expect) << "second reader " << second_reader << ", graph output " << intermediate_is_output;
        EXPECT_EQ(fused, expect);
        const MemoryStats m = s.memory_stats();
        if (expect) {
          EXPECT_LT(m.arena_bytes, intermediate_bytes) << "the intermediate is never stored";
          // The profile still lists the depthwise node, with its shapes and no time of its own.
          const auto& prof = s.last_profile();
          const auto dw = std::find_if(prof.begin(), prof.end(), [](const NodeProfile& p) { return p.name == "dw"; });
          ASSERT_NE(dw, prof.end());
          EXPECT_EQ(dw->kernel, "fused");
          EXPECT_EQ(dw->output_shapes, std::vector<Shape>{Shape({1, 96, 56, 56})});
        } else if (!intermediate_is_output) {
          EXPECT_GE(m.arena_bytes, intermediate_bytes);
        }
        EXPECT_LE(m.arena_bytes, m.lower_bound_bytes * 11 / 10 + 64);
      }
    }
  }
}

// The other order: a depthwise conv (1.8 MB of output) whose only reader is a 1x1 projection with
// a residual Add (fused into it at level 2) runs as one banded kernel on AVX-512 CPUs.
TEST(SessionPlan, DepthwiseAndProjectionRunAsOneBandedKernel) {
  Builder b;
  const int x = b.input("x", {1, 144, 56, 56});
  const int r = b.input("r", {1, 24, 56, 56});
  const int wd = b.constant("wd", random_tensor({144, 1, 3, 3}, 31, 0.3f));
  const int d = b.node("Conv", {x, wd}, {{"group", int64_t{144}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}, "dw");
  const int clip = b.node("Clip", {d, b.constant("lo", Tensor::scalar(0.0f)), b.constant("hi", Tensor::scalar(6.0f))});
  const int w2 = b.constant("w2", random_tensor({24, 144, 1, 1}, 32, 0.1f));
  const int p = b.node("Conv", {clip, w2, b.constant("b2", random_tensor({24}, 33))}, {}, "project");
  const int y = b.node("Add", {p, r}, {}, "residual");
  auto model = b.done({y});
  const std::map<std::string, Tensor> in{{"x", random_tensor({1, 144, 56, 56}, 34)}, {"r", random_tensor({1, 24, 56, 56}, 35)}};
  Session ref(model, reference_options());
  const Tensor want = ref.run(in)[0];
  for (int threads : {1, 2}) {
    SessionOptions o;
    o.threads = threads;
    Session s(model, o);
    EXPECT_LE(max_rel_diff(s.run(in)[0], want), 1e-5) << threads << " threads";
    const std::vector<std::string> k = s.kernel_names();
    const bool banded = std::any_of(k.begin(), k.end(), [](const std::string& n) {
      return n.rfind("f32_dwconv3x3s1_conv1x1_bands+", 0) == 0;
    });
    EXPECT_EQ(banded, kernels::avx512_enabled());
    EXPECT_EQ(std::find(k.begin(), k.end(), "fused") != k.end(), kernels::avx512_enabled());
    if (kernels::avx512_enabled()) {
      EXPECT_LT(s.memory_stats().arena_bytes, 144 * 56 * 56 * 4);
    }
    EXPECT_EQ(s.memory_stats().output_bytes, 24 * 56 * 56 * 4) << "the arena placed again counts outputs once";
  }
}

// An RGB stem whose output (3.2 MB) only a max pool reads, SqueezeNet 1.1's first two layers
// (ceil_mode pool), runs as one banded kernel on AVX-512 CPUs; with a second reader it does not.
TEST(SessionPlan, StemAndMaxPoolRunAsOneBandedKernel) {
  for (bool second_reader : {false, true}) {
    Builder b;
    const int x = b.input("x", {1, 3, 224, 224});
    const int w = b.constant("w", random_tensor({64, 3, 3, 3}, 41, 0.3f));
    const int c = b.node("Conv", {x, w, b.constant("bias", random_tensor({64}, 42))},
                         {{"strides", std::vector<int64_t>{2, 2}}}, "stem");
    const int r = b.node("Relu", {c});
    const int p = b.node("MaxPool", {r},
                         {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"strides", std::vector<int64_t>{2, 2}},
                          {"ceil_mode", int64_t{1}}},
                         "pool");
    std::vector<int> outputs{p};
    if (second_reader) outputs.push_back(b.node("Sigmoid", {r}));
    auto model = b.done(outputs);
    const std::map<std::string, Tensor> in{{"x", random_tensor({1, 3, 224, 224}, 43)}};
    Session ref(model, reference_options());
    const std::vector<Tensor> want = ref.run(in);
    for (int threads : {1, 2}) {
      SessionOptions o;
      o.threads = threads;
      o.profile = true;
      Session s(model, o);
      const std::vector<Tensor> got = s.run(in);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(got[0].shape(), Shape({1, 64, 55, 55}));
      for (size_t i = 0; i < got.size(); ++i) EXPECT_LE(max_rel_diff(got[i], want[i]), 1e-5) << "output " << i;
      const std::vector<std::string> k = s.kernel_names();
      const bool banded = std::any_of(k.begin(), k.end(), [](const std::string& n) {
        return n.rfind("f32_conv3x3s2_maxpool3x3s2_bands+f32_conv3x3s2_direct_4x64__avx512+", 0) == 0;
      });
      const bool expect = kernels::avx512_enabled() && !second_reader;
      EXPECT_EQ(banded, expect) << "second reader " << second_reader << ", threads " << threads;
      EXPECT_EQ(std::find(k.begin(), k.end(), "fused") != k.end(), expect);
      if (expect) {
        EXPECT_LT(s.memory_stats().arena_bytes, 64 * 111 * 111 * 4) << "the stem's output is never stored";
        const auto& prof = s.last_profile();
        const auto pool = std::find_if(prof.begin(), prof.end(), [](const NodeProfile& n) { return n.name == "pool"; });
        ASSERT_NE(pool, prof.end());
        EXPECT_EQ(pool->kernel, "fused");
      }
    }
  }
}

}  // namespace
}  // namespace xnn
