// Int8 CPU kernels of the backend (qconv_cpu.cpp, qgemm_cpu.cpp, qpool_cpu.cpp,
// qelementwise_cpu.cpp) in a Session against the same graph run by the ops' reference kernels
// (cpu_kernels = false): random QLinearConv, QLinearMatMul, com.microsoft QGemm, uint8 MaxPool,
// QLinearGlobalAveragePool, QLinearAdd and QuantizeLinear graphs over shapes, strides, pads, dilations, groups,
// depthwise 3/5/7, zero points, per-tensor and per-channel scales, 7-bit and full-range weights,
// ReLU-like clamps (y zero point 0) and rounding ties must give the same bytes; kernel_names()
// must name the int8 kernels; nodes outside the kernels' scheme must fall back to the reference
// kernel. The engine_tests_scalar_isa run repeats these with XNN_ISA=scalar (its CpuBackend*
// filter covers these suites).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/qdepthwise.h"
#include "engine/kernels/qdepthwise_flat.h"
#include "engine/runtime/session.h"

namespace xnn {
namespace {

// Test graphs with one quantised node (inputs typed, constants given as tensors).
struct Builder {
  Model model;
  Graph& g = model.graph;
  int input(const std::string& name, DType dtype, const Shape& shape) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.has_shape = true;
    for (int64_t d : shape) v.shape.push_back(Dim::fixed(d));
    const int i = g.add_value(v);
    g.inputs.push_back(i);
    return i;
  }
  int constant(Tensor t) { return g.add_constant("c" + std::to_string(g.values.size()), std::move(t)); }
  std::shared_ptr<Model> single_node(const std::string& op, std::vector<int> ins, std::map<std::string, Attribute> attrs,
                                     const std::string& domain = "") {
    Node n;
    n.op_type = op;
    n.domain = domain;
    n.name = "q";
    n.inputs = std::move(ins);
    Value out;
    out.name = "y";
    n.outputs = {g.add_value(out)};
    n.attrs = std::move(attrs);
    g.nodes.push_back(n);
    g.outputs = n.outputs;
    return std::make_shared<Model>(model);
  }
};

template <typename T>
Tensor random_ints(const Shape& shape, std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  Tensor t(dtype_of<T>(), shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(d(rng));
  return t;
}

Tensor f32_values(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<float>(v, n == 1 ? Shape{} : Shape{n});
}

struct Outcome {
  Tensor got, want;
  std::string kernel;  // the optimised session's kernel for the node
};

// Runs the model with the CPU kernels (at `threads`, optionally --tune) and with the reference
// kernels only, on the same inputs.
Outcome run_both(const std::shared_ptr<Model>& model, const std::map<std::string, Tensor>& inputs, int threads,
                 bool tune = false) {
  SessionOptions fast;
  fast.threads = threads;
  fast.tune = tune;
  SessionOptions ref;
  ref.cpu_kernels = false;
  Session a(model, fast), b(model, ref);
  Outcome o;
  o.got = a.run(inputs)[0];
  o.got = a.run(inputs)[0];  // a second run must give the same (no state carried over)
  o.want = b.run(inputs)[0];
  const std::vector<std::string> names = a.kernel_names();
  o.kernel = names.empty() ? "" : names.back();
  return o;
}

// Bytes that differ (and the first of them), for a readable failure; "" when none do.
std::string byte_diff(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return "shape or dtype differs";
  const auto* g = static_cast<const uint8_t*>(got.raw());
  const auto* w = static_cast<const uint8_t*>(want.raw());
  const auto bytes = static_cast<int64_t>(got.nbytes());
  int64_t count = 0, first = -1;
  for (int64_t i = 0; i < bytes; ++i) {
    if (g[i] != w[i]) count += 1, first = first < 0 ? i : first;
  }
  if (count == 0) return "";
  return std::to_string(count) + " of " + std::to_string(bytes) + " bytes differ, first at " +
         std::to_string(first) + ": " + std::to_string(g[first]) + " vs reference " + std::to_string(w[first]);
}

struct QConvCase {
  int64_t n = 1, cin = 1, cout = 1, h = 1, w = 1, k = 1, stride = 1, pad = 0, dilation = 1, group = 1;
  int64_t pad_extra = 0;     // added to the bottom/right pads (asymmetric padding)
  bool per_channel = true;   // w_scale (and w_zp) one per output channel
  bool bias = true;
  bool seven_bit = false;    // |w| <= 64: the vpmaddubsw GEMM path
  bool relu_clamp = false;   // y zero point 0: the clamp at 0 acts as ReLU
  bool tie_multiplier = false;  // multiplier exactly 0.5: many round-half-even ties
  // What makes a node ineligible (the fallback tests).
  bool u8_weights = false, nonzero_w_zp = false, runtime_weights = false, int8_x = false;
};

std::string describe(const QConvCase& c) {
  return "n" + std::to_string(c.n) + " cin" + std::to_string(c.cin) + " cout" + std::to_string(c.cout) + " " +
         std::to_string(c.h) + "x" + std::to_string(c.w) + " k" + std::to_string(c.k) + " s" + std::to_string(c.stride) +
         " p" + std::to_string(c.pad) + "+" + std::to_string(c.pad_extra) + " d" + std::to_string(c.dilation) + " g" +
         std::to_string(c.group) + (c.per_channel ? " per-channel" : " per-tensor") + (c.bias ? " bias" : "") +
         (c.seven_bit ? " 7-bit" : "") + (c.relu_clamp ? " relu" : "") + (c.tie_multiplier ? " ties" : "");
}

// A QLinearConv model and its input for the case.
std::pair<std::shared_ptr<Model>, std::map<std::string, Tensor>> qconv_model(const QConvCase& c, std::mt19937& rng) {
  Builder b;
  const DType xt = c.int8_x ? DType::kI8 : DType::kU8;
  const int x = b.input("x", xt, {c.n, c.cin, c.h, c.w});
  const Shape w_shape{c.cout, c.cin / c.group, c.k, c.k};
  const int64_t depth = c.cin / c.group * c.k * c.k;
  const int wlim = c.seven_bit ? 64 : 127;
  Tensor weights = c.u8_weights ? random_ints<uint8_t>(w_shape, rng, 0, 255) : random_ints<int8_t>(w_shape, rng, -wlim, wlim);
  if (!c.seven_bit && !c.u8_weights) weights.data<int8_t>()[0] = -128;  // the full int8 range
  const int64_t n_w = c.per_channel ? c.cout : 1;
  std::uniform_real_distribution<float> unit(0.5f, 2.0f);
  const float x_scale = c.tie_multiplier ? 1.0f : 0.02f;
  std::vector<float> w_scale(static_cast<size_t>(n_w));
  for (float& s : w_scale) s = c.tie_multiplier ? 0.5f : 0.004f * unit(rng);
  // y_scale so that the typical accumulator (~ 5000·√K) lands near ±60 after requantisation,
  // some values saturating.
  const float y_scale = c.tie_multiplier ? 1.0f : x_scale * 0.004f * 5000.0f * std::sqrt(static_cast<float>(depth)) / 60.0f;
  std::uniform_int_distribution<int> zp(0, 255);
  const uint8_t x_zp = static_cast<uint8_t>(zp(rng));
  const uint8_t y_zp = c.relu_clamp ? 0 : static_cast<uint8_t>(zp(rng));
  Tensor w_zp = c.u8_weights ? Tensor(DType::kU8, n_w == 1 ? Shape{} : Shape{n_w})
                             : Tensor(DType::kI8, n_w == 1 ? Shape{} : Shape{n_w});
  if (c.nonzero_w_zp) static_cast<uint8_t*>(w_zp.raw())[0] = 3;

  std::vector<int> ins;
  ins.push_back(x);
  ins.push_back(b.constant(Tensor::scalar<float>(x_scale)));
  ins.push_back(b.constant(c.int8_x ? Tensor::scalar<int8_t>(static_cast<int8_t>(x_zp - 128)) : Tensor::scalar<uint8_t>(x_zp)));
  std::map<std::string, Tensor> inputs;
  if (c.runtime_weights) {
    ins.push_back(b.input("w", weights.dtype(), w_shape));
    inputs["w"] = weights;
  } else {
    ins.push_back(b.constant(weights));
  }
  ins.push_back(b.constant(f32_values(w_scale)));
  ins.push_back(b.constant(w_zp));
  ins.push_back(b.constant(Tensor::scalar<float>(y_scale)));
  ins.push_back(b.constant(Tensor::scalar<uint8_t>(y_zp)));
  if (c.bias) ins.push_back(b.constant(random_ints<int32_t>({c.cout}, rng, -20000, 20000)));
  std::map<std::string, Attribute> attrs;
  attrs["kernel_shape"] = std::vector<int64_t>{c.k, c.k};
  attrs["strides"] = std::vector<int64_t>{c.stride, c.stride};
  attrs["pads"] = std::vector<int64_t>{c.pad, c.pad, c.pad + c.pad_extra, c.pad + c.pad_extra};
  attrs["dilations"] = std::vector<int64_t>{c.dilation, c.dilation};
  attrs["group"] = c.group;
  inputs["x"] = c.int8_x ? random_ints<int8_t>({c.n, c.cin, c.h, c.w}, rng, -128, 127)
                         : random_ints<uint8_t>({c.n, c.cin, c.h, c.w}, rng, 0, 255);
  return {b.single_node("QLinearConv", ins, attrs), inputs};
}

bool is_int8_kernel(const std::string& name) { return name.rfind("qs8_", 0) == 0; }

TEST(CpuBackendQConv, RandomGraphsBitExactWithReference) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 80; ++trial) {
    QConvCase c;
    c.k = std::vector<int64_t>{1, 1, 3, 3, 3, 5, 7}[rng() % 7];
    c.stride = 1 + rng() % 2;
    c.dilation = rng() % 5 == 0 ? 2 : 1;
    c.pad = rng() % (c.k / 2 + 2);
    c.pad_extra = rng() % 4 == 0 ? 1 : 0;
    c.cin = 1 + rng() % 12, c.cout = 1 + rng() % 20;
    const int mode = static_cast<int>(rng() % 4);
    if (mode == 1) {  // depthwise
      c.group = c.cin = c.cout = 2 + rng() % 23;
    } else if (mode == 2) {  // grouped
      c.group = 2 + rng() % 3;
      c.cin = c.group * (1 + rng() % 4);
      c.cout = c.group * (1 + rng() % 4);
    }
    c.h = c.k * c.dilation + rng() % 14, c.w = c.k * c.dilation + rng() % 14;
    c.n = 1 + rng() % 2;
    c.per_channel = rng() % 3 != 0;
    c.bias = rng() % 4 != 0;
    c.seven_bit = rng() % 3 == 0;
    c.relu_clamp = rng() % 3 == 0;
    c.tie_multiplier = rng() % 8 == 0;
    const auto [model, inputs] = qconv_model(c, rng);
    for (int threads : {1, 2}) {
      const Outcome o = run_both(model, inputs, threads);
      EXPECT_TRUE(is_int8_kernel(o.kernel)) << "trial " << trial << " " << describe(c) << ": kernel " << o.kernel;
      EXPECT_EQ(byte_diff(o.got, o.want), "") << "trial " << trial << " " << describe(c) << " threads " << threads
                                              << " kernel " << o.kernel;
    }
  }
}

TEST(CpuBackendQConv, AlgorithmRuleNamesTheMicroKernels) {
  std::mt19937 rng(7);
  const auto kernel_of = [&](const QConvCase& c) {
    const auto [model, inputs] = qconv_model(c, rng);
    const Outcome o = run_both(model, inputs, 1);
    EXPECT_EQ(byte_diff(o.got, o.want), "") << describe(c);
    return o.kernel;
  };
  const bool avx2 = kernels::best_isa() == kernels::Isa::kAvx2;
  // Depthwise 3x3 s2, 5x5 s1 and 7x7 s2 -> the direct depthwise kernels: with AVX512-VNNI+VBMI
  // the flat one for the first two (outputs 8 and 15 wide; 16 outputs read 5 and 6 input rows of
  // 15 bytes), the row kernels for 7x7 s2 (9 rows of 15 = 135 bytes: more than the flat 127).
  for (auto [k, s] : std::vector<std::pair<int64_t, int64_t>>{{3, 2}, {5, 1}, {7, 2}}) {
    QConvCase c;
    c.group = c.cin = c.cout = 16, c.h = c.w = 15, c.k = k, c.stride = s, c.pad = k / 2;
    const bool flat = avx2 && kernels::qs8_dwconv_flat_enabled() && k != 7;
    EXPECT_EQ(kernel_of(c), flat ? "qs8_dwconv" + std::to_string(k) + "x" + std::to_string(k) + "s" + std::to_string(s) +
                                       "_flat__avx512vnni"
                                 : kernels::qs8_dwconv_kernel_name(k, s, kernels::best_isa()));
  }
  // Depthwise with dilation 2, stride 1 -> grouped implicit GEMM (4 of the padded 16 columns of
  // each output row are extra: at most a quarter).
  QConvCase dil;
  dil.group = dil.cin = dil.cout = 8, dil.h = dil.w = 12, dil.k = 3, dil.dilation = 2, dil.pad = 2;
  EXPECT_EQ(kernel_of(dil).rfind("qs8_conv_implicit+qs8_gemm_", 0), 0u);
  // 3x3 stride 1 on a 7x7 map: 2 extra of 9 columns -> implicit; 5x5 on 5x5 without padding: 4
  // extra of 5 -> im2col; stride 2 on 14x14, pad 1: phase planes of 8 columns, 1 extra -> implicit.
  // (With 512-bit VNNI, 16 input channels take the interleaved form of the implicit GEMM.)
  const std::string implicit =
      avx2 && kernels::vnni512_enabled() ? "qs8_conv_implicit4c+qs8_gemm_" : "qs8_conv_implicit+qs8_gemm_";
  QConvCase small;
  small.cin = 16, small.cout = 8, small.h = small.w = 7, small.k = 3, small.pad = 1;
  EXPECT_EQ(kernel_of(small).rfind(implicit, 0), 0u);
  QConvCase wide_kernel;
  wide_kernel.cin = 4, wide_kernel.cout = 8, wide_kernel.h = wide_kernel.w = 5, wide_kernel.k = 5;
  EXPECT_EQ(kernel_of(wide_kernel).rfind("qs8_conv_im2col+qs8_gemm_", 0), 0u);
  QConvCase strided;
  strided.cin = 16, strided.cout = 8, strided.h = strided.w = 14, strided.k = 3, strided.stride = 2, strided.pad = 1;
  EXPECT_EQ(kernel_of(strided).rfind(implicit, 0), 0u);
  // 1x1 stride 1 -> GEMM on the input as is; 7-bit weights take the vpmaddubsw path on AVX2;
  // with VNNI every weight matrix takes vpdpbusd (on zmm with 512-bit VNNI: 24 rows in 8-row panels).
  QConvCase pw;
  pw.cin = 32, pw.cout = 24, pw.h = pw.w = 9;
  const bool vnni = kernels::vnni_enabled();
  const std::string vnni_gemm = kernels::vnni512_enabled()       ? "qs8_conv_1x1+qs8_gemm_8x16c4__avx512vnni"
                                : kernels::cpu_features().avx_vnni ? "qs8_conv_1x1+qs8_gemm_6x16c4__avxvnni"
                                                                   : "qs8_conv_1x1+qs8_gemm_6x16c4__avx512vnni";
  const std::string full = vnni ? vnni_gemm
                           : avx2 ? "qs8_conv_1x1+qs8_gemm_6x16c2__avx2"
                                  : "qs8_conv_1x1+qs8_gemm_4x8c2__scalar";
  const std::string seven = vnni ? vnni_gemm
                            : avx2 ? "qs8_conv_1x1+qs8_gemm_4x16c4__avx2"
                                   : "qs8_conv_1x1+qs8_gemm_4x8c2__scalar";
  EXPECT_EQ(kernel_of(pw), full);
  pw.seven_bit = true;
  EXPECT_EQ(kernel_of(pw), seven);
  // Strided 3x3 (15x15, pad 1: 9 phase columns, 1 extra) -> implicit GEMM; stride 3 on 7x7
  // without padding (3 phase columns, 1 extra) -> im2col + GEMM.
  QConvCase s2;
  s2.cin = 16, s2.cout = 32, s2.h = s2.w = 15, s2.k = 3, s2.stride = 2, s2.pad = 1;
  EXPECT_EQ(kernel_of(s2).rfind(implicit, 0), 0u);
  QConvCase s3;
  s3.cin = 8, s3.cout = 16, s3.h = s3.w = 7, s3.k = 3, s3.stride = 3;
  EXPECT_EQ(kernel_of(s3).rfind("qs8_conv_im2col+qs8_gemm_", 0), 0u);
}

TEST(CpuBackendQConv, NetworkShapesBitExact) {
  std::mt19937 rng(11);
  // ResNet-18 / MobileNetV2 layer shapes (reduced spatial sizes keep the reference fast).
  std::vector<QConvCase> cases;
  auto add = [&](int64_t cin, int64_t cout, int64_t hw, int64_t k, int64_t s, int64_t group) {
    QConvCase c;
    c.cin = cin, c.cout = cout, c.h = c.w = hw, c.k = k, c.stride = s, c.pad = k / 2, c.group = group;
    c.relu_clamp = true;
    cases.push_back(c);
  };
  add(3, 64, 32, 7, 2, 1);      // ResNet stem
  add(64, 64, 14, 3, 1, 1);     // ResNet basic block
  add(128, 256, 8, 3, 2, 1);    // ResNet downsampling
  add(64, 128, 8, 1, 2, 1);     // ResNet 1x1 s2 shortcut
  add(144, 144, 14, 3, 2, 144); // MobileNetV2 depthwise s2
  add(96, 24, 14, 1, 1, 1);     // MobileNetV2 projection
  for (const QConvCase& c : cases) {
    const auto [model, inputs] = qconv_model(c, rng);
    const Outcome o = run_both(model, inputs, 2);
    EXPECT_TRUE(is_int8_kernel(o.kernel)) << describe(c) << ": " << o.kernel;
    EXPECT_EQ(byte_diff(o.got, o.want), "") << describe(c) << " kernel " << o.kernel;
  }
}

TEST(CpuBackendQConv, TuneChoosesAnApplicableKernelAndStaysBitExact) {
  std::mt19937 rng(13);
  QConvCase c;
  c.group = c.cin = c.cout = 24, c.h = c.w = 20, c.k = 3, c.stride = 1, c.pad = 1;
  const auto [model, inputs] = qconv_model(c, rng);
  const Outcome o = run_both(model, inputs, 1, /*tune=*/true);
  const bool dw = o.kernel == kernels::qs8_dwconv_kernel_name(3, 1, kernels::best_isa());
  // The grouped GEMM of this stride-1 layer is the implicit one (which wins is timing).
  EXPECT_TRUE(dw || o.kernel.rfind("qs8_conv_implicit+", 0) == 0) << o.kernel;
  EXPECT_EQ(byte_diff(o.got, o.want), "");
}

TEST(CpuBackendQConv, NodesOutsideTheSchemeRunTheReference) {
  std::mt19937 rng(17);
  QConvCase base;
  base.cin = 8, base.cout = 8, base.h = base.w = 9, base.k = 3, base.pad = 1;
  std::vector<std::pair<std::string, QConvCase>> cases;
  QConvCase c = base;
  c.u8_weights = true;
  cases.emplace_back("uint8 weights", c);
  c = base;
  c.nonzero_w_zp = true;
  cases.emplace_back("non-zero weight zero point", c);
  c = base;
  c.runtime_weights = true;
  cases.emplace_back("weights computed at run time", c);
  c = base;
  c.int8_x = true;
  cases.emplace_back("int8 x", c);
  for (const auto& [what, qc] : cases) {
    const auto [model, inputs] = qconv_model(qc, rng);
    const Outcome o = run_both(model, inputs, 1);
    EXPECT_EQ(o.kernel, "reference") << what;
    EXPECT_EQ(byte_diff(o.got, o.want), "") << what;
  }
}

// ---- QLinearMatMul ------------------------------------------------------------------------------

struct QMatMulCase {
  Shape a_shape;  // [..., K]
  int64_t n = 1;
  bool per_column = true;
  bool seven_bit = false;
  bool relu_clamp = false;
  bool runtime_b = false, u8_b = false, per_row_a_scale = false;
};

std::pair<std::shared_ptr<Model>, std::map<std::string, Tensor>> qmatmul_model(const QMatMulCase& c, std::mt19937& rng) {
  Builder b;
  const int64_t k = c.a_shape.back();
  const int64_t rows = c.a_shape.size() >= 2 ? c.a_shape[c.a_shape.size() - 2] : 1;
  const int a = b.input("a", DType::kU8, c.a_shape);
  const Shape b_shape{k, c.n};
  const int lim = c.seven_bit ? 64 : 127;
  Tensor bw = c.u8_b ? random_ints<uint8_t>(b_shape, rng, 0, 255) : random_ints<int8_t>(b_shape, rng, -lim, lim);
  std::uniform_real_distribution<float> unit(0.5f, 2.0f);
  std::vector<float> a_scale(static_cast<size_t>(c.per_row_a_scale ? rows : 1), 0.02f);
  std::vector<float> b_scale(static_cast<size_t>(c.per_column ? c.n : 1));
  for (float& s : b_scale) s = 0.004f * unit(rng);
  const float y_scale = 0.02f * 0.004f * 5000.0f * std::sqrt(static_cast<float>(k)) / 60.0f;
  std::uniform_int_distribution<int> zp(0, 255);
  std::map<std::string, Tensor> inputs;
  std::vector<int> ins{a, b.constant(f32_values(a_scale)), b.constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp(rng))))};
  if (c.runtime_b) {
    ins.push_back(b.input("b", bw.dtype(), b_shape));
    inputs["b"] = bw;
  } else {
    ins.push_back(b.constant(bw));
  }
  ins.push_back(b.constant(f32_values(b_scale)));
  const int64_t n_zp = c.per_column ? c.n : 1;
  ins.push_back(b.constant(Tensor(bw.dtype(), n_zp == 1 ? Shape{} : Shape{n_zp})));
  ins.push_back(b.constant(Tensor::scalar<float>(y_scale)));
  ins.push_back(b.constant(Tensor::scalar<uint8_t>(c.relu_clamp ? 0 : static_cast<uint8_t>(zp(rng)))));
  inputs["a"] = random_ints<uint8_t>(c.a_shape, rng, 0, 255);
  return {b.single_node("QLinearMatMul", ins, {}), inputs};
}

TEST(CpuBackendQMatMul, RandomGraphsBitExactWithReference) {
  std::mt19937 rng(31);
  for (int trial = 0; trial < 40; ++trial) {
    QMatMulCase c;
    const int64_t k = 1 + rng() % 300, m = 1 + rng() % 9;
    const int rank = 1 + static_cast<int>(rng() % 3);
    c.a_shape = rank == 1 ? Shape{k} : rank == 2 ? Shape{m, k} : Shape{static_cast<int64_t>(1 + rng() % 3), m, k};
    c.n = 1 + rng() % 70;
    c.per_column = rng() % 3 != 0;
    c.seven_bit = rng() % 3 == 0;
    c.relu_clamp = rng() % 3 == 0;
    const auto [model, inputs] = qmatmul_model(c, rng);
    for (int threads : {1, 2}) {
      const Outcome o = run_both(model, inputs, threads);
      // One row: the GEMV; several: the packed GEMM.
      const bool one_row = shape_numel(c.a_shape) == c.a_shape.back();
      EXPECT_EQ(o.kernel.rfind(one_row ? "qs8_matmul+qs8_gemv__" : "qs8_matmul+qs8_gemm_", 0), 0u)
          << "trial " << trial << ": " << o.kernel;
      EXPECT_EQ(byte_diff(o.got, o.want), "") << "trial " << trial << " A " << shape_str(c.a_shape) << " N " << c.n
                                              << " threads " << threads << " kernel " << o.kernel;
    }
  }
}

TEST(CpuBackendQMatMul, NodesOutsideTheSchemeRunTheReference) {
  std::mt19937 rng(37);
  QMatMulCase base;
  base.a_shape = {4, 32};
  base.n = 16;
  std::vector<std::pair<std::string, QMatMulCase>> cases;
  QMatMulCase c = base;
  c.runtime_b = true;
  cases.emplace_back("B computed at run time", c);
  c = base;
  c.u8_b = true;
  cases.emplace_back("uint8 B", c);
  c = base;
  c.per_row_a_scale = true;
  cases.emplace_back("per-row A scales", c);
  for (const auto& [what, qc] : cases) {
    const auto [model, inputs] = qmatmul_model(qc, rng);
    const Outcome o = run_both(model, inputs, 1);
    EXPECT_EQ(o.kernel, "reference") << what;
    EXPECT_EQ(byte_diff(o.got, o.want), "") << what;
  }
}

// ---- com.microsoft QGemm ------------------------------------------------------------------------

struct QGemmCase {
  int64_t m = 1, k = 1, n = 1;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f;
  int c_kind = 0;  // 0 none, 1 [N], 2 [1, N], 3 scalar, 4 [M, N] (not a bias: reference)
  bool y_zp_absent = false;
  bool float_output = false;  // no y_scale: float result (reference)
  bool per_column = true;
};

std::pair<std::shared_ptr<Model>, std::map<std::string, Tensor>> qgemm_model(const QGemmCase& c, std::mt19937& rng) {
  Builder b;
  const Shape a_shape = c.trans_a ? Shape{c.k, c.m} : Shape{c.m, c.k};
  const Shape b_shape = c.trans_b ? Shape{c.n, c.k} : Shape{c.k, c.n};
  const int a = b.input("a", DType::kU8, a_shape);
  std::uniform_real_distribution<float> unit(0.5f, 2.0f);
  std::vector<float> b_scale(static_cast<size_t>(c.per_column ? c.n : 1));
  for (float& s : b_scale) s = 0.004f * unit(rng);
  const float y_scale = c.alpha * 0.02f * 0.004f * 5000.0f * std::sqrt(static_cast<float>(c.k)) / 60.0f;
  std::uniform_int_distribution<int> zp(0, 255);
  std::vector<int> ins{a, b.constant(Tensor::scalar<float>(0.02f)),
                       b.constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp(rng)))),
                       b.constant(random_ints<int8_t>(b_shape, rng, -127, 127)), b.constant(f32_values(b_scale)),
                       b.constant(Tensor(DType::kI8, c.per_column ? Shape{c.n} : Shape{}))};
  const Shape c_shapes[] = {{}, {c.n}, {1, c.n}, {}, {c.m, c.n}};
  ins.push_back(c.c_kind == 0 ? -1 : b.constant(random_ints<int32_t>(c_shapes[c.c_kind], rng, -20000, 20000)));
  if (!c.float_output) {
    ins.push_back(b.constant(Tensor::scalar<float>(y_scale)));
    if (!c.y_zp_absent) ins.push_back(b.constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp(rng)))));
  }
  std::map<std::string, Attribute> attrs;
  attrs["transA"] = int64_t{c.trans_a};
  attrs["transB"] = int64_t{c.trans_b};
  attrs["alpha"] = c.alpha;
  std::map<std::string, Tensor> inputs;
  inputs["a"] = random_ints<uint8_t>(a_shape, rng, 0, 255);
  return {b.single_node("QGemm", ins, attrs, "com.microsoft"), inputs};
}

TEST(CpuBackendQGemm, RandomGraphsBitExactWithReference) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 40; ++trial) {
    QGemmCase c;
    c.m = 1 + rng() % 9, c.k = 1 + rng() % 200, c.n = 1 + rng() % 50;
    c.trans_a = rng() % 2, c.trans_b = rng() % 2;
    c.alpha = rng() % 3 == 0 ? 0.5f : 1.0f;
    c.c_kind = static_cast<int>(rng() % 4);
    c.y_zp_absent = rng() % 4 == 0;
    c.float_output = rng() % 4 == 0;
    c.per_column = rng() % 3 != 0;
    const auto [model, inputs] = qgemm_model(c, rng);
    const std::string want_kernel =
        c.float_output ? "qs8_gemm_f32+qs8_gemv__" : c.m == 1 ? "qs8_gemm+qs8_gemv__" : "qs8_gemm+qs8_gemm_";
    for (int threads : {1, 2}) {
      const Outcome o = run_both(model, inputs, threads);
      EXPECT_EQ(o.kernel.rfind(want_kernel, 0), 0u) << "trial " << trial << ": " << o.kernel;
      EXPECT_EQ(byte_diff(o.got, o.want), "") << "trial " << trial << " m" << c.m << " k" << c.k << " n" << c.n
                                              << " transA " << c.trans_a << " transB " << c.trans_b << " C kind "
                                              << c.c_kind << " threads " << threads << " kernel " << o.kernel;
    }
  }
}

TEST(CpuBackendQGemm, NodesOutsideTheSchemeRunTheReference) {
  std::mt19937 rng(43);
  QGemmCase base;
  base.m = 3, base.k = 40, base.n = 12;
  QGemmCase full_c = base;
  full_c.c_kind = 4;
  QGemmCase full_c_float = full_c;
  full_c_float.float_output = true;
  for (const auto& [what, qc] : std::vector<std::pair<std::string, QGemmCase>>{
           {"C varying along M", full_c}, {"C varying along M, float output", full_c_float}}) {
    const auto [model, inputs] = qgemm_model(qc, rng);
    const Outcome o = run_both(model, inputs, 1);
    EXPECT_EQ(o.kernel, "reference") << what;
    EXPECT_EQ(byte_diff(o.got, o.want), "") << what;
  }
}

// ---- uint8 MaxPool --------------------------------------------------------------------------------

TEST(CpuBackendQPool, MaxPoolRandomGeometryBitExact) {
  std::mt19937 rng(53);
  for (int trial = 0; trial < 60; ++trial) {
    const int64_t kh = 1 + rng() % 4, kw = 1 + rng() % 4, sh = 1 + rng() % 3, sw = 1 + rng() % 3;
    const int64_t h = kh + rng() % 20, w = kw + rng() % 40, c = 1 + rng() % 5, n = 1 + rng() % 2;
    const std::vector<int64_t> pads{static_cast<int64_t>(rng() % kh), static_cast<int64_t>(rng() % kw),
                                    static_cast<int64_t>(rng() % kh), static_cast<int64_t>(rng() % kw)};
    const int64_t ceil_mode = rng() % 3 == 0;
    Builder b;
    const int x = b.input("x", DType::kU8, {n, c, h, w});
    const auto model = b.single_node("MaxPool", {x},
                                     {{"kernel_shape", std::vector<int64_t>{kh, kw}},
                                      {"strides", std::vector<int64_t>{sh, sw}},
                                      {"pads", pads},
                                      {"ceil_mode", ceil_mode}});
    // Small values too, so that 0 (the empty window's value) and ties are common.
    const int hi = rng() % 2 ? 255 : 3;
    const std::map<std::string, Tensor> inputs{{"x", random_ints<uint8_t>({n, c, h, w}, rng, 0, hi)}};
    for (int threads : {1, 2}) {
      const Outcome o = run_both(model, inputs, threads);
      EXPECT_EQ(o.kernel, "u8_maxpool2d__scalar") << "trial " << trial;
      EXPECT_EQ(byte_diff(o.got, o.want), "") << "trial " << trial << " k" << kh << "x" << kw << " s" << sh << "x" << sw
                                              << " in " << h << "x" << w << " ceil " << ceil_mode;
    }
  }
}

// Wide rows with stride 2 (ResNet's 3x3/2 stem pool, and odd widths): the 16-outputs-per-step
// pick of the even sliding maxima, its tail, and the border windows.
TEST(CpuBackendQPool, MaxPoolStride2WideRowsBitExact) {
  std::mt19937 rng(61);
  for (const auto& [h, w, k, pad] : std::vector<std::array<int64_t, 4>>{
           {112, 112, 3, 1}, {9, 97, 3, 1}, {5, 66, 2, 0}, {7, 131, 3, 0}, {6, 80, 5, 2}}) {
    Builder b;
    const int x = b.input("x", DType::kU8, {1, 3, h, w});
    const auto model = b.single_node("MaxPool", {x},
                                     {{"kernel_shape", std::vector<int64_t>{k, k}},
                                      {"strides", std::vector<int64_t>{2, 2}},
                                      {"pads", std::vector<int64_t>{pad, pad, pad, pad}}});
    const std::map<std::string, Tensor> inputs{{"x", random_ints<uint8_t>({1, 3, h, w}, rng, 0, 255)}};
    const Outcome o = run_both(model, inputs, 2);
    EXPECT_EQ(o.kernel, "u8_maxpool2d__scalar");
    EXPECT_EQ(byte_diff(o.got, o.want), "") << h << "x" << w << " k" << k << " pad " << pad;
  }
}

TEST(CpuBackendQPool, MaxPoolOutsideTheKernelRunsTheReference) {
  std::mt19937 rng(59);
  Builder b;
  const int x = b.input("x", DType::kU8, {1, 2, 9, 9});
  const auto model = b.single_node("MaxPool", {x},
                                   {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"dilations", std::vector<int64_t>{2, 2}}});
  const Outcome o = run_both(model, {{"x", random_ints<uint8_t>({1, 2, 9, 9}, rng, 0, 255)}}, 1);
  EXPECT_EQ(o.kernel, "reference");
  EXPECT_EQ(byte_diff(o.got, o.want), "");
}

TEST(CpuBackendQPool, QLinearGlobalAveragePoolBitExact) {
  std::mt19937 rng(71);
  std::uniform_real_distribution<float> scale(0.005f, 0.1f);
  for (int trial = 0; trial < 30; ++trial) {
    const Shape shape{1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 40),
                      1 + static_cast<int64_t>(rng() % 12), 1 + static_cast<int64_t>(rng() % 12)};
    const bool ties = trial % 5 == 0;  // scales 1 and 0.5 over planes of even size: exact halves
    Builder b;
    const int x = b.input("x", DType::kU8, shape);
    std::vector<int> ins{x, b.constant(Tensor::scalar<float>(ties ? 1.0f : scale(rng))),
                         b.constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(rng() % 256))),
                         b.constant(Tensor::scalar<float>(ties ? 0.5f : scale(rng)))};
    if (trial % 4 != 0) ins.push_back(b.constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(rng() % 256))));
    const auto model = b.single_node("QLinearGlobalAveragePool", ins, {}, "com.microsoft");
    for (int threads : {1, 2}) {
      const Outcome o = run_both(model, {{"x", random_ints<uint8_t>(shape, rng, 0, 255)}}, threads);
      EXPECT_EQ(o.kernel, "u8_global_avgpool__scalar") << "trial " << trial;
      EXPECT_EQ(byte_diff(o.got, o.want), "") << "trial " << trial << " " << shape_str(shape);
    }
  }
  // channels_last stays with the reference.
  Builder b;
  const int x = b.input("x", DType::kU8, {1, 5, 5, 8});
  const auto model = b.single_node("QLinearGlobalAveragePool",
                                   {x, b.constant(Tensor::scalar<float>(0.1f)), b.constant(Tensor::scalar<uint8_t>(3)),
                                    b.constant(Tensor::scalar<float>(0.05f)), b.constant(Tensor::scalar<uint8_t>(7))},
                                   {{"channels_last", int64_t{1}}}, "com.microsoft");
  const Outcome o = run_both(model, {{"x", random_ints<uint8_t>({1, 5, 5, 8}, rng, 0, 255)}}, 1);
  EXPECT_EQ(o.kernel, "reference");
  EXPECT_EQ(byte_diff(o.got, o.want), "");
}

// ---- QLinearAdd, QuantizeLinear -------------------------------------------------------------------

std::shared_ptr<Model> qlinear_add_model(const Shape& a_shape, const Shape& b_shape, float sa, float sb, float sc,
                                         const std::vector<int>& zps) {
  Builder b;
  const int a = b.input("a", DType::kU8, a_shape);
  const int bb = b.input("b", DType::kU8, b_shape);
  std::vector<int> ins{a, b.constant(Tensor::scalar<float>(sa)),
                       zps[0] < 0 ? -1 : b.constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(zps[0]))),
                       bb, b.constant(Tensor::scalar<float>(sb)),
                       zps[1] < 0 ? -1 : b.constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(zps[1]))),
                       b.constant(Tensor::scalar<float>(sc))};
  if (zps[2] >= 0) ins.push_back(b.constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(zps[2]))));
  return b.single_node("QLinearAdd", ins, {}, "com.microsoft");
}

TEST(CpuBackendQElementwise, QLinearAddBitExact) {
  std::mt19937 rng(61);
  std::uniform_real_distribution<float> scale(0.01f, 0.2f);
  for (int trial = 0; trial < 40; ++trial) {
    const Shape shape{1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 40),
                      1 + static_cast<int64_t>(rng() % 30), 1 + static_cast<int64_t>(rng() % 30)};
    // Every few trials: scales that make ties (a multiplier of 0.5) and absent zero points.
    const bool ties = trial % 5 == 0;
    const float sa = ties ? 0.5f : scale(rng), sb = ties ? 1.5f : scale(rng), sc = ties ? 1.0f : scale(rng);
    std::vector<int> zps(3);
    for (int& z : zps) z = trial % 7 == 0 ? -1 : static_cast<int>(rng() % 256);
    const auto model = qlinear_add_model(shape, shape, sa, sb, sc, zps);
    const std::map<std::string, Tensor> inputs{{"a", random_ints<uint8_t>(shape, rng, 0, 255)},
                                               {"b", random_ints<uint8_t>(shape, rng, 0, 255)}};
    for (int threads : {1, 2}) {
      const Outcome o = run_both(model, inputs, threads);
      EXPECT_EQ(o.kernel, "u8_qlinear_add__" + std::string(kernels::isa_name(kernels::best_isa()))) << "trial " << trial;
      EXPECT_EQ(byte_diff(o.got, o.want), "") << "trial " << trial << " " << shape_str(shape);
    }
  }
  // Broadcasting stays with the reference.
  const auto model = qlinear_add_model({1, 4, 5, 5}, {1, 4, 1, 1}, 0.1f, 0.1f, 0.1f, {1, 2, 3});
  const Outcome o = run_both(model, {{"a", random_ints<uint8_t>({1, 4, 5, 5}, rng, 0, 255)},
                                     {"b", random_ints<uint8_t>({1, 4, 1, 1}, rng, 0, 255)}}, 1);
  EXPECT_EQ(o.kernel, "reference");
  EXPECT_EQ(byte_diff(o.got, o.want), "");
}

TEST(CpuBackendQElementwise, QuantizeLinearBitExact) {
  std::mt19937 rng(67);
  std::normal_distribution<float> value(0.0f, 3.0f);
  for (int trial = 0; trial < 30; ++trial) {
    const Shape shape{1, 1 + static_cast<int64_t>(rng() % 8), 1 + static_cast<int64_t>(rng() % 50),
                      1 + static_cast<int64_t>(rng() % 50)};
    const float scale = trial % 4 == 0 ? 0.5f : 0.003f + 0.05f * static_cast<float>(rng() % 100) / 100.0f;
    const int zp = trial % 6 == 0 ? -1 : static_cast<int>(rng() % 256);
    Builder b;
    const int x = b.input("x", DType::kF32, shape);
    std::vector<int> ins{x, b.constant(Tensor::scalar<float>(scale))};
    if (zp >= 0) ins.push_back(b.constant(Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp))));
    const auto model = b.single_node("QuantizeLinear", ins, {});
    Tensor in(DType::kF32, shape);
    for (int64_t i = 0; i < in.numel(); ++i) {
      // Some exact ties (k + 0.5 quanta), some far out of range, the rest Gaussian.
      const int kind = static_cast<int>(rng() % 8);
      in.data<float>()[i] = kind == 0   ? (static_cast<float>(static_cast<int>(rng() % 300) - 150) + 0.5f) * scale
                            : kind == 1 ? value(rng) * 1000.0f
                                        : value(rng);
    }
    for (int threads : {1, 2}) {
      const Outcome o = run_both(model, {{"x", in}}, threads);
      EXPECT_EQ(o.kernel, "f32_quantize_u8__" + std::string(kernels::isa_name(kernels::best_isa()))) << "trial " << trial;
      EXPECT_EQ(byte_diff(o.got, o.want), "") << "trial " << trial << " scale " << scale << " zp " << zp;
    }
  }
  // Per-axis scales and int8 outputs stay with the reference.
  Builder b;
  const int x = b.input("x", DType::kF32, {1, 3, 4, 4});
  const auto model = b.single_node(
      "QuantizeLinear",
      {x, b.constant(f32_values({0.1f, 0.2f, 0.3f})), b.constant(Tensor::from_vector<int8_t>({0, 1, 2}, {3}))},
      {{"axis", int64_t{1}}});
  Tensor in(DType::kF32, {1, 3, 4, 4});
  for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = value(rng);
  const Outcome o = run_both(model, {{"x", in}}, 1);
  EXPECT_EQ(o.kernel, "reference");
  EXPECT_EQ(byte_diff(o.got, o.want), "");
}

}  // namespace
}  // namespace xnn
