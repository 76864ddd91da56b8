// CPU-backend kernels for pooling and elementwise ops (engine/backends/cpu/{pool,elementwise}_cpu.cpp
// over engine/kernels/{pooling,elementwise}.h), prepared through CpuKernelRegistry exactly as the
// session does, and run against the ops' reference kernels: random pooling geometries
// (asymmetric pads, ceil_mode, auto_pad, count_include_pad, windows wholly in padding, NaN
// inputs), every elementwise op and broadcast form, both ISAs, 1 and 2 threads; plus the
// factories' refusals (Indices, dilation, dtypes, broadcasts, run-time Clip bounds, inner-axis
// Softmax).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/backends/cpu/cpu_kernel.h"
#include "engine/kernels/pooling.h"
#include "engine/runtime/executor.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

using kernels::Isa;
using Attrs = std::map<std::string, Attribute>;
constexpr float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

const Isa kIsas[] = {Isa::kScalar, Isa::kAvx2};

// One node under test: inputs (undefined = absent optional input) and which inputs are
// constants (TensorInfo::value set at preparation).
struct OpCase {
  Node node;
  std::vector<Tensor> inputs;
  std::vector<bool> constant;
  int num_outputs = 1;
};

OpCase make_case(const std::string& op, std::vector<Tensor> inputs, const Attrs& attrs = {},
                 std::vector<bool> constant = {}, int num_outputs = 1) {
  OpCase c;
  c.node.op_type = op;
  c.node.name = "node_under_test";
  c.node.attrs = attrs;
  for (size_t i = 0; i < inputs.size(); ++i) c.node.inputs.push_back(inputs[i].defined() ? static_cast<int>(i) : -1);
  for (int i = 0; i < num_outputs; ++i) c.node.outputs.push_back(100 + i);
  c.inputs = std::move(inputs);
  c.constant = std::move(constant);
  c.constant.resize(c.inputs.size(), false);
  c.num_outputs = num_outputs;
  return c;
}

std::vector<const Tensor*> input_ptrs(const OpCase& c) {
  std::vector<const Tensor*> p;
  for (const Tensor& t : c.inputs) p.push_back(t.defined() ? &t : nullptr);
  return p;
}

struct Prepared {
  std::unique_ptr<CpuKernel> kernel;
  std::vector<TensorInfo> outputs;
};

// Prepares the node as the session does (shape inference, then the registry's factories).
Prepared prepare(const OpCase& c, Isa isa, ThreadPool* pool) {
  std::vector<TensorInfo> ins(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i].defined()) continue;
    ins[i] = TensorInfo{c.inputs[i].dtype(), c.inputs[i].shape(), c.constant[i] ? &c.inputs[i] : nullptr};
  }
  const OpSchema* schema = OpRegistry::builtin().find(c.node.op_type);
  EXPECT_NE(schema, nullptr);
  Prepared p;
  p.outputs = infer_node(*schema, c.node, ins, c.num_outputs);
  CpuKernelPrepareContext ctx{c.node, ins, p.outputs, isa, pool, false};
  p.kernel = CpuKernelRegistry::builtin().create(ctx);
  return p;
}

Tensor run_kernel(const OpCase& c, Prepared& p, ThreadPool* pool) {
  Tensor out(p.outputs[0].dtype, p.outputs[0].shape);
  std::vector<Tensor*> outs = {&out};
  const std::vector<const Tensor*> ins = input_ptrs(c);
  KernelContext ctx(c.node, ins, outs, pool);
  p.kernel->run(ctx);
  return out;
}

Tensor run_reference(const OpCase& c) {
  std::vector<Tensor> outs;
  run_node(OpRegistry::builtin(), c.node, input_ptrs(c), outs);
  return outs[0];
}

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Runs `c` through the CPU kernel on every ISA and 1/2 threads and compares with the reference:
// exactly (tolerances 0: same value, same sign of zero, NaN where NaN) or within
// rel_tol * |want| + abs_tol. Returns the kernel name seen on the last ISA.
std::string expect_matches_reference(const OpCase& c, double rel_tol = 0, const std::string& what = "",
                                     double abs_tol = 0) {
  const Tensor want = run_reference(c);
  std::string name;
  for (Isa isa : kIsas) {
    if (!kernels::isa_supported(isa)) continue;
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      Prepared p = prepare(c, isa, &pool);
      if (!p.kernel) {
        ADD_FAILURE() << "no CPU kernel for " << c.node.op_type << " " << what;
        return "";
      }
      name = p.kernel->name();
      const Tensor got = run_kernel(c, p, &pool);
      EXPECT_EQ(shape_str(got.shape()), shape_str(want.shape()));
      for (int64_t i = 0; i < want.numel(); ++i) {
        const float g = got.data<float>()[i], w = want.data<float>()[i];
        const bool ok = rel_tol == 0 && abs_tol == 0
                            ? same_float(g, w)
                            : (same_float(g, w) || std::fabs(g - w) <= rel_tol * std::fabs(w) + abs_tol + 1e-37);
        if (!ok) {
          ADD_FAILURE() << name << " threads " << threads << " " << what << " at " << i << ": got " << g
                        << ", want " << w;
          return name;
        }
      }
    }
  }
  return name;
}

Tensor random_tensor(std::mt19937& rng, const Shape& shape, float lo = -1, float hi = 1) {
  Tensor t(DType::kF32, shape);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

std::vector<int64_t> ints(std::initializer_list<int64_t> v) { return std::vector<int64_t>(v); }

// ---- pooling kernels against the reference ---------------------------------------------------

struct PoolGeometry {
  Shape x;
  int64_t kh, kw, sh, sw, pt, pl, pb, pr;
  bool ceil_mode = false;
  std::string auto_pad = "NOTSET";
};

Attrs pool_attrs(const PoolGeometry& g) {
  Attrs a{{"kernel_shape", ints({g.kh, g.kw})}, {"strides", ints({g.sh, g.sw})}};
  if (g.auto_pad == "NOTSET") {
    a["pads"] = ints({g.pt, g.pl, g.pb, g.pr});
  } else {
    a["auto_pad"] = g.auto_pad;
  }
  if (g.ceil_mode) a["ceil_mode"] = int64_t{1};
  return a;
}

std::string describe(const PoolGeometry& g) {
  return shape_str(g.x) + " k" + std::to_string(g.kh) + "x" + std::to_string(g.kw) + " s" + std::to_string(g.sh) +
         "," + std::to_string(g.sw) + " pads " + std::to_string(g.pt) + "," + std::to_string(g.pl) + "," +
         std::to_string(g.pb) + "," + std::to_string(g.pr) + (g.ceil_mode ? " ceil" : "") + " " + g.auto_pad;
}

PoolGeometry random_geometry(std::mt19937& rng) {
  PoolGeometry g;
  const bool common = rng() % 2;  // half the cases in the vectorised 3x3/2x2 stride-2 family
  g.kh = g.kw = common ? 2 + rng() % 2 : 1 + rng() % 4;
  if (!common && rng() % 3 == 0) g.kw = 1 + rng() % 4;
  g.sh = g.sw = common ? 2 : 1 + rng() % 3;
  if (!common && rng() % 3 == 0) g.sw = 1 + rng() % 3;
  // Pads up to the kernel size: pads == kernel give windows wholly in padding.
  g.pt = rng() % (g.kh + (rng() % 4 == 0 ? 1 : 0));
  g.pl = rng() % (g.kw + (rng() % 4 == 0 ? 1 : 0));
  g.pb = rng() % g.kh;
  g.pr = rng() % g.kw;
  const auto below = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint32_t>(n)); };
  g.x = {1 + below(2), 1 + below(4), g.kh + below(30), g.kw + below(70)};
  g.ceil_mode = rng() % 3 == 0;
  const int ap = static_cast<int>(rng() % 8);
  if (ap == 0) g.auto_pad = "SAME_UPPER";
  if (ap == 1) g.auto_pad = "SAME_LOWER";
  if (ap == 2) g.auto_pad = "VALID";
  return g;
}

TEST(PoolKernel, MaxPoolRandomGeometries) {
  std::mt19937 rng(77);
  for (int iter = 0; iter < 120; ++iter) {
    const PoolGeometry g = random_geometry(rng);
    Tensor x = random_tensor(rng, g.x);
    if (iter % 4 == 0) {  // NaNs: a NaN seeding a window sticks, a later one is skipped (reference rule)
      for (int64_t i = 0; i < x.numel(); i += 1 + static_cast<int64_t>(rng() % 17)) x.data<float>()[i] = kNaN;
    }
    const OpCase c = make_case("MaxPool", {x}, pool_attrs(g));
    expect_matches_reference(c, 0, describe(g));
    if (HasFailure()) return;
  }
}

// Rows with fewer than 8 outputs left (f32_maxpool2d_2x2s2_rest__avx2: 4 in xmm, then single)
// keep the reference's NaN rule and tap order bit for bit: 10x10 -> 5x5 (LeNet), 13-wide rows.
TEST(PoolKernel, MaxPool2x2RestOfRowsWithNaNs) {
  std::mt19937 rng(80);
  for (const PoolGeometry& g : {PoolGeometry{{1, 16, 10, 10}, 2, 2, 2, 2, 0, 0, 0, 0},
                                PoolGeometry{{2, 3, 14, 13}, 2, 2, 2, 2, 0, 0, 0, 0},
                                PoolGeometry{{1, 4, 9, 29}, 2, 2, 2, 2, 0, 0, 0, 0, true}}) {
    Tensor x = random_tensor(rng, g.x);
    for (int64_t i = 0; i < x.numel(); i += 1 + static_cast<int64_t>(rng() % 7)) {
      x.data<float>()[i] = rng() % 3 == 0 ? kNaN : (rng() % 2 ? 0.0f : -0.0f);
    }
    const std::string name = expect_matches_reference(make_case("MaxPool", {x}, pool_attrs(g)), 0, describe(g));
    if (kernels::isa_supported(Isa::kAvx2)) {
      EXPECT_EQ(name, "f32_maxpool2d_2x2s2__avx2") << describe(g);
    }
  }
}

// Rows of more than 8 vector outputs that are not a multiple of 8 end with a block overlapping
// the one before, written twice: the values and the NaN / signed-zero rule stay the reference's.
// SqueezeNet's 111 -> 55 pool (ceil), a 2x2 pool on 29-wide rows, a stride-1 pool on 20-wide ones.
TEST(PoolKernel, OverlappingLastBlockKeepsTheReferenceRule) {
  std::mt19937 rng(81);
  for (const PoolGeometry& g : {PoolGeometry{{1, 3, 111, 111}, 3, 3, 2, 2, 0, 0, 0, 0, true},
                                PoolGeometry{{1, 2, 12, 29}, 2, 2, 2, 2, 0, 0, 0, 0},
                                PoolGeometry{{1, 2, 9, 20}, 3, 3, 1, 1, 0, 0, 0, 0}}) {
    Tensor x = random_tensor(rng, g.x);
    for (int64_t i = 0; i < x.numel(); i += 1 + static_cast<int64_t>(rng() % 7)) {
      x.data<float>()[i] = rng() % 3 == 0 ? kNaN : (rng() % 2 ? 0.0f : -0.0f);
    }
    expect_matches_reference(make_case("MaxPool", {x}, pool_attrs(g)), 0, describe(g));
    for (int64_t include : {0, 1}) {
      Attrs a = pool_attrs(g);
      a["count_include_pad"] = include;
      expect_matches_reference(make_case("AveragePool", {random_tensor(rng, g.x)}, a), 0, describe(g));
    }
  }
}

// The zmm 3x3 stride-2 row kernel loads whole blocks without masks while a block's 33 columns
// end inside the windows (count - o >= 17) and takes each window's third column of the last
// lane from the next block; a last block of exactly 16 outputs reads that column too. Rows of
// 16, 17, 32, 33, 48 and 64 outputs (and with left padding), NaNs and signed zeros, against the
// reference rule bit for bit.
TEST(PoolKernel, MaxPool3x3Stride2BlockEdges) {
  std::mt19937 rng(82);
  for (int64_t out_w : {16, 17, 32, 33, 48, 64}) {
    for (int64_t pad : {0, 1}) {
      const PoolGeometry g{{1, 2, 7, 2 * out_w + 1 - 2 * pad}, 3, 3, 2, 2, pad, pad, pad, pad};
      Tensor x = random_tensor(rng, g.x);
      for (int64_t i = 0; i < x.numel(); i += 1 + static_cast<int64_t>(rng() % 5)) {
        x.data<float>()[i] = rng() % 3 == 0 ? kNaN : (rng() % 2 ? 0.0f : -0.0f);
      }
      expect_matches_reference(make_case("MaxPool", {x}, pool_attrs(g)), 0, describe(g));
    }
  }
}

TEST(PoolKernel, AveragePoolRandomGeometries) {
  std::mt19937 rng(78);
  for (int iter = 0; iter < 120; ++iter) {
    const PoolGeometry g = random_geometry(rng);
    Attrs attrs = pool_attrs(g);
    attrs["count_include_pad"] = int64_t{iter % 2};
    const OpCase c = make_case("AveragePool", {random_tensor(rng, g.x)}, attrs);
    expect_matches_reference(c, 0, describe(g) + (iter % 2 ? " count_include_pad" : ""));
    if (HasFailure()) return;
  }
}

TEST(PoolKernel, ModelShapes) {
  std::mt19937 rng(79);
  // ResNet stem max pool, a 2x2 stride-2 max pool, ceil_mode variants (odd sizes), Inception's
  // 3x3 stride-1 average pool with and without counting padding.
  const PoolGeometry maxes[] = {{{1, 16, 112, 112}, 3, 3, 2, 2, 1, 1, 1, 1},
                                {{1, 8, 56, 56}, 2, 2, 2, 2, 0, 0, 0, 0},
                                {{2, 4, 57, 75}, 3, 3, 2, 2, 0, 0, 0, 0, true},
                                {{1, 4, 35, 35}, 2, 2, 2, 2, 0, 0, 0, 0, true},
                                {{1, 3, 147, 147}, 3, 3, 2, 2, 0, 0, 0, 0},
                                // small planes, mostly or wholly a partial vector block per row:
                                // LeNet-5's 28->14 and 10->5 pools, SqueezeNet's 27->13 (ceil)
                                {{1, 6, 28, 28}, 2, 2, 2, 2, 0, 0, 0, 0},
                                {{1, 16, 10, 10}, 2, 2, 2, 2, 0, 0, 0, 0},
                                {{1, 5, 27, 27}, 3, 3, 2, 2, 0, 0, 0, 0, true}};
  for (const PoolGeometry& g : maxes) {
    const std::string name = expect_matches_reference(make_case("MaxPool", {random_tensor(rng, g.x)}, pool_attrs(g)),
                                                      0, describe(g));
    if (kernels::isa_supported(Isa::kAvx2)) {
      const bool zmm = kernels::avx512_enabled();
      const std::string max3x3 = !zmm                 ? "f32_maxpool2d_3x3s2__avx2"
                                 : g.x[2] <= 27 ? "f32_maxpool2d_c16__avx512"  // 13-wide output rows
                                                : "f32_maxpool2d_3x3s2__avx512";
      EXPECT_EQ(name, g.kh == 3 ? max3x3 : "f32_maxpool2d_2x2s2__avx2") << describe(g);
    }
  }
  // YOLO's SPP max pools (stride 1, large windows), a tall window beyond the vector kernels'
  // 16 rows, a stride-3 pool (scalar without AVX-512).
  const PoolGeometry others[] = {{{1, 4, 20, 20}, 5, 5, 1, 1, 2, 2, 2, 2},
                                 {{1, 4, 20, 20}, 9, 9, 1, 1, 4, 4, 4, 4},
                                 {{1, 4, 20, 26}, 13, 13, 1, 1, 6, 6, 6, 6},
                                 {{1, 2, 40, 30}, 17, 3, 1, 2, 0, 1, 0, 1},
                                 {{1, 2, 40, 30}, 3, 3, 3, 3, 1, 1, 1, 1}};
  for (const PoolGeometry& g : others) {
    const std::string name = expect_matches_reference(make_case("MaxPool", {random_tensor(rng, g.x)}, pool_attrs(g)),
                                                      0, describe(g));
    if (kernels::isa_supported(Isa::kAvx2)) {
      // With AVX-512 all of them are small planes with 16 channels in the zmm lanes.
      const std::string row_or_scalar = g.kh <= 16 && g.sw <= 2 ? "f32_maxpool2d__avx2" : "f32_maxpool2d__scalar";
      EXPECT_EQ(name, kernels::avx512_enabled() ? "f32_maxpool2d_c16__avx512" : row_or_scalar) << describe(g);
    }
  }
  for (int64_t include : {0, 1}) {
    for (const PoolGeometry& g : {PoolGeometry{{1, 8, 35, 35}, 3, 3, 1, 1, 1, 1, 1, 1},
                                  PoolGeometry{{1, 8, 28, 28}, 2, 2, 2, 2, 0, 0, 0, 0},
                                  PoolGeometry{{1, 8, 10, 11}, 2, 2, 2, 2, 0, 0, 0, 0},
                                  PoolGeometry{{1, 8, 9, 9}, 3, 3, 1, 1, 1, 1, 1, 1},
                                  PoolGeometry{{1, 8, 29, 31}, 3, 3, 2, 2, 1, 1, 1, 1, true}}) {
      Attrs a = pool_attrs(g);
      a["count_include_pad"] = include;
      const std::string name =
          expect_matches_reference(make_case("AveragePool", {random_tensor(rng, g.x)}, a), 0, describe(g));
      if (kernels::isa_supported(Isa::kAvx2)) {
        EXPECT_EQ(name, "f32_avgpool2d__avx2");
      }
    }
  }
}

TEST(PoolKernel, GlobalAveragePool) {
  std::mt19937 rng(80);
  const std::vector<Shape> shapes = {{1, 1280, 7, 7}, {2, 3, 112, 112}, {1, 5, 1, 1}, {3, 7, 13}, {1, 2, 3, 5, 7}};
  for (const Shape& s : shapes) {
    // Positive values with a large offset: a naive float sum would lose digits here.
    const OpCase c = make_case("GlobalAveragePool", {random_tensor(rng, s, 100.0f, 101.0f)});
    const std::string name = expect_matches_reference(c, 1e-7, shape_str(s));
    EXPECT_EQ(name, kernels::isa_supported(Isa::kAvx2) ? "f32_global_avgpool__avx2" : "f32_global_avgpool__scalar");
  }
}

// ---- elementwise through the backend ---------------------------------------------------------

TEST(CpuBackendElementwise, BinaryOpsAllForms) {
  std::mt19937 rng(81);
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 16, 9, 9}, {2, 16, 9, 9}}, {{2, 16, 9, 9}, {}},         {{1}, {3, 40001}},
      {{2, 16, 9, 9}, {1, 16, 1, 1}}, {{16, 1, 1}, {2, 16, 9, 9}}, {{8, 50, 64}, {64}},
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const auto& [sa, sb] : shapes) {
      const OpCase c = make_case(op, {random_tensor(rng, sa, 0.5f, 2.0f), random_tensor(rng, sb, 0.5f, 2.0f)});
      expect_matches_reference(c, 0, std::string(op) + " " + shape_str(sa) + " " + shape_str(sb));
    }
  }
}

TEST(CpuBackendElementwise, ActivationsMatchReference) {
  std::mt19937 rng(82);
  Tensor x = random_tensor(rng, {2, 3, 37, 41}, -10.0f, 10.0f);
  // Specials: NaN, +-0, +-inf, the Clip/HardSwish kinks.
  const float specials[] = {kNaN, 0.0f, -0.0f, kInf, -kInf, 6.0f, -3.0f, 3.0f, 100.0f, -100.0f, -88.5f, -95.0f};
  for (size_t i = 0; i < std::size(specials); ++i) x.data<float>()[i * 7] = specials[i];
  const Tensor lo = Tensor::scalar<float>(-1.0f), hi = Tensor::scalar<float>(4.0f);
  // Exact: comparisons and one product. Slack: the hard ops (AVX2 fuses x/6 + 0.5 into one
  // rounding, an absolute error of ~|x| * 2^-24 that is large relative to results near the
  // kink) and the exp-based Sigmoid (a few ulp; the reference's own float exp).
  expect_matches_reference(make_case("Relu", {x}), 0, "Relu");
  expect_matches_reference(make_case("LeakyRelu", {x}), 0, "LeakyRelu default");
  expect_matches_reference(make_case("LeakyRelu", {x}, {{"alpha", 0.3f}}), 0, "LeakyRelu 0.3");
  expect_matches_reference(make_case("Clip", {x, lo, hi}, {}, {false, true, true}), 0, "Clip");
  expect_matches_reference(make_case("Clip", {x}), 0, "Clip without bounds");
  expect_matches_reference(make_case("Clip", {x, Tensor(), hi}, {}, {false, false, true}), 0, "Clip max only");
  expect_matches_reference(make_case("Clip", {x, hi, lo}, {}, {false, true, true}), 0, "Clip min > max");
  expect_matches_reference(make_case("HardSwish", {x}), 3e-7, "HardSwish", 2e-6);
  expect_matches_reference(make_case("HardSigmoid", {x}), 3e-7, "HardSigmoid", 2e-7);
  expect_matches_reference(make_case("HardSigmoid", {x}, {{"alpha", 0.5f}, {"beta", 0.25f}}), 3e-7, "HardSigmoid",
                           2e-7);
  expect_matches_reference(make_case("Sigmoid", {x}), 5e-7, "Sigmoid");
}

TEST(CpuBackendElementwise, SoftmaxLastAxis) {
  std::mt19937 rng(83);
  for (const Shape& s : std::vector<Shape>{{1, 1000}, {4, 12, 50}, {3, 7}}) {
    const Tensor x = random_tensor(rng, s, -20.0f, 20.0f);
    expect_matches_reference(make_case("Softmax", {x}), 1e-6, "Softmax " + shape_str(s));
    expect_matches_reference(make_case("Softmax", {x}, {{"axis", static_cast<int64_t>(s.size() - 1)}}), 1e-6,
                             "Softmax positive axis");
  }
}

TEST(CpuBackendElementwise, KernelNames) {
  const Isa isa = kernels::isa_supported(Isa::kAvx2) ? Isa::kAvx2 : Isa::kScalar;
  const std::string sfx = isa == Isa::kAvx2 ? "__avx2" : "__scalar";
  std::mt19937 rng(84);
  const Tensor x = random_tensor(rng, {2, 4, 3, 3}), s = random_tensor(rng, {1, 4, 1, 1});
  const auto name_of = [&](const OpCase& c) {
    Prepared p = prepare(c, isa, nullptr);
    return p.kernel ? p.kernel->name() : std::string("null");
  };
  EXPECT_EQ(name_of(make_case("Add", {x, x})), "f32_vadd" + sfx);
  EXPECT_EQ(name_of(make_case("Mul", {x, s})), "f32_vmul_channel" + sfx);
  EXPECT_EQ(name_of(make_case("Div", {Tensor::scalar<float>(1.0f), x})), "f32_vrdivc" + sfx);
  EXPECT_EQ(name_of(make_case("Relu", {x})), "f32_vrelu" + sfx);
  EXPECT_EQ(name_of(make_case("Clip", {x})), "f32_vclamp" + sfx);
  EXPECT_EQ(name_of(make_case("Sigmoid", {x})), "f32_vsigmoid" + sfx);
  EXPECT_EQ(name_of(make_case("HardSwish", {x})), "f32_vhswish" + sfx);
  EXPECT_EQ(name_of(make_case("Softmax", {x})), "f32_softmax" + sfx);
  // Forcing the ISA in the prepare context picks the scalar kernels.
  const Attrs pool3s2{{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}};
  Prepared p = prepare(make_case("MaxPool", {random_tensor(rng, {1, 2, 9, 9})}, pool3s2), Isa::kScalar, nullptr);
  ASSERT_TRUE(p.kernel);
  EXPECT_EQ(p.kernel->name(), "f32_maxpool2d__scalar");
}

// ---- factories that decline --------------------------------------------------------------------

TEST(CpuBackendFactories, DeclineWhatTheyDoNotCover) {
  std::mt19937 rng(85);
  const Isa isa = kernels::best_isa();
  const auto has_kernel = [&](const OpCase& c) { return prepare(c, isa, nullptr).kernel != nullptr; };
  const Tensor x4 = random_tensor(rng, {1, 3, 10, 10});
  const Attrs k3{{"kernel_shape", ints({3, 3})}};
  EXPECT_TRUE(has_kernel(make_case("MaxPool", {x4}, k3)));
  EXPECT_FALSE(has_kernel(make_case("MaxPool", {x4}, k3, {}, 2))) << "Indices requested";
  Attrs dilated = k3;
  dilated["dilations"] = ints({2, 2});
  EXPECT_FALSE(has_kernel(make_case("MaxPool", {x4}, dilated)));
  EXPECT_FALSE(has_kernel(make_case("AveragePool", {random_tensor(rng, {1, 3, 10})}, {{"kernel_shape", ints({3})}})));
  Tensor x64(DType::kF64, {1, 3, 10, 10});
  EXPECT_FALSE(has_kernel(make_case("MaxPool", {x64}, k3)));
  EXPECT_FALSE(has_kernel(make_case("GlobalAveragePool", {x64})));
  EXPECT_TRUE(has_kernel(make_case("GlobalAveragePool", {x4})));

  // Binary: both operands broadcast, or a split channel block, or integers.
  EXPECT_FALSE(has_kernel(make_case("Add", {random_tensor(rng, {2, 1, 4}), random_tensor(rng, {1, 3, 1})})));
  EXPECT_FALSE(has_kernel(make_case("Mul", {random_tensor(rng, {2, 3, 4}), random_tensor(rng, {2, 1, 4})})));
  Tensor i32(DType::kI32, {4});
  EXPECT_FALSE(has_kernel(make_case("Add", {i32, i32})));

  // Clip bounds known only at run time.
  const Tensor lo = Tensor::scalar<float>(0.0f), hi = Tensor::scalar<float>(6.0f);
  EXPECT_TRUE(has_kernel(make_case("Clip", {x4, lo, hi}, {}, {false, true, true})));
  EXPECT_FALSE(has_kernel(make_case("Clip", {x4, lo, hi}, {}, {false, false, true})));
  EXPECT_FALSE(has_kernel(make_case("Clip", {x4, lo, hi}, {}, {false, true, false})));

  // Softmax over an inner axis.
  EXPECT_FALSE(has_kernel(make_case("Softmax", {x4}, {{"axis", int64_t{1}}})));
  EXPECT_TRUE(has_kernel(make_case("Softmax", {x4}, {{"axis", int64_t{3}}})));
  EXPECT_FALSE(has_kernel(make_case("Softmax", {Tensor(DType::kF64, {2, 3})})));
}

TEST(CpuBackendElementwise, InPlaceOutput) {
  // The session may give an elementwise op its input's buffer as output.
  std::mt19937 rng(86);
  for (Isa isa : kIsas) {
    if (!kernels::isa_supported(isa)) continue;
    const Tensor a = random_tensor(rng, {3, 8, 5, 5}), s = random_tensor(rng, {8, 1, 1});
    const OpCase c = make_case("Mul", {a.clone(), s});
    const Tensor want = run_reference(c);
    Prepared p = prepare(c, isa, nullptr);
    ASSERT_TRUE(p.kernel);
    Tensor inout = c.inputs[0];  // shares the buffer of input 0
    std::vector<Tensor*> outs = {&inout};
    const std::vector<const Tensor*> ins = input_ptrs(c);
    KernelContext ctx(c.node, ins, outs, nullptr);
    p.kernel->run(ctx);
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(inout.data<float>()[i], want.data<float>()[i]) << i;
  }
}

// ---- through a Session -------------------------------------------------------------------------

// A small graph of these ops run by a Session with the CPU kernels (1 and 2 threads, in-place
// elementwise outputs from the memory planner) against the same session on reference kernels.
TEST(CpuBackendSession, PoolAndElementwiseGraphMatchesReference) {
  Model model;
  Graph& g = model.graph;
  const auto value = [&](const std::string& name) {
    Value v;
    v.name = name;
    return g.add_value(v);
  };
  const auto node = [&](const std::string& op, std::vector<int> ins, const Attrs& attrs = {}) {
    Node n;
    n.op_type = op;
    n.name = op + std::to_string(g.nodes.size());
    n.inputs = std::move(ins);
    n.outputs = {value(n.name + "_out")};
    n.attrs = attrs;
    g.nodes.push_back(n);
    return n.outputs[0];
  };
  Value in;
  in.name = "x";
  in.dtype = DType::kF32;
  in.has_shape = true;
  for (int64_t d : {2, 8, 23, 29}) in.shape.push_back(Dim::fixed(d));
  const int x = g.add_value(in);
  g.inputs.push_back(x);
  std::mt19937 rng(90);
  const int scale = g.add_constant("scale", random_tensor(rng, {1, 8, 1, 1}, 0.5f, 1.5f));
  const int shift = g.add_constant("shift", random_tensor(rng, {8, 1, 1}));
  const int lo = g.add_constant("lo", Tensor::scalar<float>(0.0f));
  const int hi = g.add_constant("hi", Tensor::scalar<float>(6.0f));
  const int two = g.add_constant("two", Tensor::scalar<float>(2.0f));
  const Attrs pool3s2{{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}};
  int t = node("MaxPool", {x}, pool3s2);
  t = node("Mul", {t, scale});
  t = node("Sub", {t, shift});
  const int gate = node("Sigmoid", {t});
  t = node("Mul", {t, gate});
  t = node("Div", {t, two});
  t = node("HardSwish", {t});
  t = node("LeakyRelu", {t}, {{"alpha", 0.2f}});
  t = node("Clip", {t, lo, hi});
  t = node("Relu", {t});
  t = node("AveragePool", {t}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}, {"ceil_mode", int64_t{1}}});
  const int gap = node("GlobalAveragePool", {t});
  t = node("Add", {t, gap});
  t = node("Softmax", {t});
  g.outputs = {t};
  auto shared = std::make_shared<Model>(model);

  const Tensor input = random_tensor(rng, {2, 8, 23, 29}, -4.0f, 4.0f);
  SessionOptions ref_options;
  ref_options.cpu_kernels = false;
  ref_options.opt_level = 0;
  Session ref(shared, ref_options);
  const Tensor want = ref.run({{"x", input}})[0];
  for (int threads : {1, 2}) {
    SessionOptions o;
    o.threads = threads;
    o.opt_level = 0;  // keep every op as written (no fusion), so each runs its CPU kernel
    o.profile = true;
    Session s(shared, o);
    for (int run = 0; run < 2; ++run) {  // the second run reuses the prepared kernels
      const Tensor got = s.run({{"x", input}})[0];
      ASSERT_EQ(shape_str(got.shape()), shape_str(want.shape()));
      for (int64_t i = 0; i < want.numel(); ++i) {
        ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 2e-6 * (1 + std::fabs(want.data<float>()[i]))) << i;
      }
    }
    ASSERT_EQ(s.last_profile().size(), shared->graph.nodes.size());
    for (const NodeProfile& p : s.last_profile()) {
      EXPECT_NE(p.kernel, "reference") << p.op_type << " did not get a CPU kernel";
    }
  }
}

}  // namespace
}  // namespace xnn
