// Tests for the neural-network op family (engine/ops/{conv,gemm,pool,normalization,softmax}.cpp).
// Conv, ConvTranspose, Gemm, MatMul and the windowed pools are checked against naive loop-nest
// oracles written here (the direct transcription of the ONNX definitions), on random shapes;
// everything else against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/ops/op_helpers.h"
#include "engine/runtime/executor.h"
#include "tests/engine/op_test_util.h"

namespace xnn {
namespace {

using op_test::Attrs;
using op_test::run_op;

Tensor random_tensor(std::mt19937& rng, Shape shape, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(DType::kF32, std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

Tensor f32(std::vector<float> v, Shape shape) { return Tensor::from_vector<float>(v, std::move(shape)); }

void expect_close(const Tensor& got, const Tensor& want, double tol = 1e-4, const std::string& what = "") {
  ASSERT_EQ(shape_str(got.shape()), shape_str(want.shape())) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.scalar_as_double(i), w = want.scalar_as_double(i);
    ASSERT_NEAR(g, w, tol * (1.0 + std::fabs(w))) << what << " at flat index " << i;
  }
}

// Expects `f` to throw an xnn::Error whose message names `node` and contains `text`.
template <typename F>
void expect_error(F&& f, const std::string& text, const std::string& node = "node_under_test") {
  try {
    f();
    ADD_FAILURE() << "expected an Error containing '" << text << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'" + node + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(text), std::string::npos) << msg;
  }
}

std::vector<int64_t> ints(std::initializer_list<int64_t> v) { return std::vector<int64_t>(v); }

// ---- Conv ------------------------------------------------------------------------------------

struct ConvCase {
  Shape x;                         // [N, C, spatial...]
  int64_t out_channels, group;
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  std::string auto_pad = "NOTSET";
  bool bias = true;
};

// Pads (begin, end) and output size for one spatial dim, straight from the ONNX Conv definition.
void conv_dim(const ConvCase& c, size_t i, int64_t& pad_begin, int64_t& out) {
  const size_t n = c.kernel.size();
  const int64_t in = c.x[2 + i], eff = (c.kernel[i] - 1) * c.dilations[i] + 1, s = c.strides[i];
  if (c.auto_pad == "VALID") {
    pad_begin = 0;
    out = (in - eff) / s + 1;
  } else if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
    out = (in + s - 1) / s;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + eff - in);
    pad_begin = c.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
  } else {
    pad_begin = c.pads[i];
    out = (in + c.pads[i] + c.pads[i + n] - eff) / s + 1;
  }
}

// The 7-deep (plus groups and a third spatial dim) loop nest with a bounds check per tap.
Tensor naive_conv(const ConvCase& c, const Tensor& x, const Tensor& w, const Tensor* b) {
  const size_t n = c.kernel.size();
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, p[3] = {0, 0, 0};
  Shape y_shape{c.x[0], c.out_channels};
  for (size_t i = 0; i < n; ++i) {
    const size_t j = 3 - n + i;
    in[j] = c.x[2 + i];
    k[j] = c.kernel[i];
    s[j] = c.strides[i];
    d[j] = c.dilations[i];
    conv_dim(c, i, p[j], out[j]);
    y_shape.push_back(out[j]);
  }
  const int64_t C = c.x[1], M = c.out_channels, cg = C / c.group, mg = M / c.group;
  Tensor y(DType::kF32, y_shape);
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  float* py = y.data<float>();
  int64_t o = 0;
  for (int64_t batch = 0; batch < c.x[0]; ++batch)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t od = 0; od < out[0]; ++od)
        for (int64_t oh = 0; oh < out[1]; ++oh)
          for (int64_t ow = 0; ow < out[2]; ++ow, ++o) {
            double acc = b ? b->data<float>()[m] : 0.0;
            const int64_t g = m / mg;
            for (int64_t ci = 0; ci < cg; ++ci)
              for (int64_t kd = 0; kd < k[0]; ++kd)
                for (int64_t kh = 0; kh < k[1]; ++kh)
                  for (int64_t kw = 0; kw < k[2]; ++kw) {
                    const int64_t id = od * s[0] - p[0] + kd * d[0];
                    const int64_t ih = oh * s[1] - p[1] + kh * d[1];
                    const int64_t iw = ow * s[2] - p[2] + kw * d[2];
                    if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1] || iw < 0 || iw >= in[2]) continue;
                    const int64_t c_in = g * cg + ci;
                    acc += static_cast<double>(px[(((batch * C + c_in) * in[0] + id) * in[1] + ih) * in[2] + iw]) *
                           pw[(((m * cg + ci) * k[0] + kd) * k[1] + kh) * k[2] + kw];
                  }
            py[o] = static_cast<float>(acc);
          }
  return y;
}

Attrs conv_attrs(const ConvCase& c) {
  Attrs a{{"group", c.group}, {"strides", c.strides}, {"dilations", c.dilations}, {"kernel_shape", c.kernel}};
  if (c.auto_pad == "NOTSET") {
    a["pads"] = c.pads;
  } else {
    a["auto_pad"] = c.auto_pad;
  }
  return a;
}

TEST(Conv, MatchesNaiveLoopsOnRandomShapes) {
  const std::vector<ConvCase> cases = {
      // 2-D: plain, strided, padded (asymmetric), dilated
      {{1, 3, 7, 8}, 4, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {{2, 4, 9, 9}, 6, 1, {3, 3}, {2, 2}, {1, 1}, {1, 0, 2, 1}},
      {{1, 2, 10, 7}, 3, 1, {3, 2}, {1, 2}, {2, 1}, {2, 1, 0, 1}, "NOTSET", false},
      {{1, 5, 6, 6}, 4, 1, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}},  // pointwise: no im2col
      {{1, 5, 7, 7}, 4, 1, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}},  // strided 1x1 (ResNet downsample)
      {{1, 3, 11, 11}, 2, 1, {5, 5}, {2, 2}, {1, 1}, {2, 2, 2, 2}},
      // groups, depthwise, depthwise with multiplier
      {{1, 4, 8, 8}, 6, 2, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}},
      {{2, 6, 8, 7}, 6, 6, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
      {{1, 3, 6, 6}, 6, 3, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}},
      // auto_pad
      {{1, 2, 7, 8}, 3, 1, {3, 3}, {2, 2}, {1, 1}, {}, "SAME_UPPER"},
      {{1, 2, 7, 8}, 3, 1, {4, 2}, {2, 3}, {1, 1}, {}, "SAME_LOWER"},
      {{1, 2, 7, 8}, 3, 1, {3, 3}, {2, 1}, {1, 2}, {}, "VALID"},
      // 1-D
      {{2, 3, 15}, 4, 1, {3}, {1}, {1}, {1, 1}},
      {{1, 4, 16}, 4, 2, {5}, {2}, {2}, {3, 1}},
      {{1, 3, 9}, 3, 3, {3}, {3}, {1}, {}, "SAME_UPPER"},
      // 3-D
      {{1, 2, 5, 6, 4}, 3, 1, {3, 2, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 1, 0, 1, 2}},
  };
  std::mt19937 rng(42);
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCase& c = cases[i];
    Shape w_shape{c.out_channels, c.x[1] / c.group};
    w_shape.insert(w_shape.end(), c.kernel.begin(), c.kernel.end());
    const Tensor x = random_tensor(rng, c.x), w = random_tensor(rng, w_shape);
    const Tensor b = c.bias ? random_tensor(rng, {c.out_channels}) : Tensor();
    const Tensor want = naive_conv(c, x, w, c.bias ? &b : nullptr);
    expect_close(run_op("Conv", {x, w, b}, conv_attrs(c))[0], want, 1e-4, "case " + std::to_string(i));
  }
}

TEST(Conv, KernelShapeComesFromWeightsAndF64Works) {
  // 1x1x3x3 input, 2x2 all-ones kernel, no attributes at all: sums of 2x2 windows.
  Tensor x(DType::kF64, {1, 1, 3, 3});
  for (int i = 0; i < 9; ++i) x.data<double>()[i] = i + 1;
  Tensor w(DType::kF64, {1, 1, 2, 2});
  for (int i = 0; i < 4; ++i) w.data<double>()[i] = 1;
  const Tensor y = run_op("Conv", {x, w})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  EXPECT_EQ(y.dtype(), DType::kF64);
  const double want[] = {12, 16, 24, 28};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<double>()[i], want[i]);
}

TEST(Conv, RejectsBadInputsNamingTheNode) {
  std::mt19937 rng(1);
  const Tensor x = random_tensor(rng, {1, 3, 5, 5});
  expect_error([&] { run_op("Conv", {x, random_tensor(rng, {4, 2, 3, 3})}); }, "3 channels");
  expect_error([&] { run_op("Conv", {random_tensor(rng, {3, 5}), random_tensor(rng, {4, 3})}); }, "rank >= 3");
  expect_error([&] { run_op("Conv", {x, random_tensor(rng, {4, 3, 3})}); }, "expected rank 4");
  expect_error([&] { run_op("Conv", {x, random_tensor(rng, {4, 1, 3, 3})}, {{"group", 3}}); }, "divisible by group");
  expect_error([&] { run_op("Conv", {x, random_tensor(rng, {4, 3, 3, 3}), random_tensor(rng, {3})}); }, "bias");
  expect_error([&] { run_op("Conv", {x, random_tensor(rng, {4, 3, 3, 3})}, {{"kernel_shape", ints({2, 2})}}); },
               "kernel_shape");
  expect_error([&] { run_op("Conv", {x, random_tensor(rng, {4, 3, 7, 7})}); }, "does not fit");
  EXPECT_THROW(run_op("Conv", {Tensor(DType::kF16, {1, 1, 3, 3}), Tensor(DType::kF16, {1, 1, 1, 1})}),
               UnsupportedError);
}

// ---- ConvTranspose ---------------------------------------------------------------------------

TEST(ConvTranspose, HandComputedCases) {
  // 1-D full "convolution": [1, 2, 3] * [1, 1].
  expect_close(run_op("ConvTranspose", {f32({1, 2, 3}, {1, 1, 3}), f32({1, 1}, {1, 1, 2})})[0],
               f32({1, 3, 5, 3}, {1, 1, 4}));
  // 1-D dilation 2: taps at offsets 0 and 2.
  expect_close(run_op("ConvTranspose", {f32({1, 2}, {1, 1, 2}), f32({1, 1}, {1, 1, 2})}, {{"dilations", ints({2})}})[0],
               f32({1, 2, 1, 2}, {1, 1, 4}));
  // 2-D stride 2 with a 2x2 ones kernel: every input cell becomes a 2x2 block.
  const Tensor x = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor ones = f32({1, 1, 1, 1}, {1, 1, 2, 2});
  expect_close(run_op("ConvTranspose", {x, ones}, {{"strides", ints({2, 2})}})[0],
               f32({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, {1, 1, 4, 4}));
  // pads crop, output_padding extends the end (with zeros before the crop).
  expect_close(run_op("ConvTranspose", {x, ones},
                      {{"strides", ints({2, 2})}, {"pads", ints({1, 1, 1, 1})}, {"output_padding", ints({1, 1})}})[0],
               f32({1, 2, 2, 3, 4, 4, 3, 4, 4}, {1, 1, 3, 3}));
  // output_shape larger than the natural 4x4: the extra cells at the end get only the bias.
  expect_close(
      run_op("ConvTranspose", {x, ones, f32({0.5f}, {1})}, {{"strides", ints({2, 2})}, {"output_shape", ints({5, 5})}})[0],
      f32({1.5, 1.5, 2.5, 2.5, 0.5, 1.5, 1.5, 2.5, 2.5, 0.5, 3.5, 3.5, 4.5, 4.5, 0.5, 3.5, 3.5, 4.5, 4.5, 0.5,
           0.5, 0.5, 0.5, 0.5, 0.5},
          {1, 1, 5, 5}));
  // auto_pad: output = input * stride; the full result [1, 1, 3, 2, 5, 3, 3] loses one cell,
  // at the end for SAME_UPPER, at the beginning for SAME_LOWER.
  const Tensor x1 = f32({1, 2, 3}, {1, 1, 3});
  const Tensor w1 = f32({1, 1, 1}, {1, 1, 3});
  expect_close(run_op("ConvTranspose", {x1, w1}, {{"strides", ints({2})}, {"auto_pad", "SAME_UPPER"}})[0],
               f32({1, 1, 3, 2, 5, 3}, {1, 1, 6}));
  expect_close(run_op("ConvTranspose", {x1, w1}, {{"strides", ints({2})}, {"auto_pad", "SAME_LOWER"}})[0],
               f32({1, 3, 2, 5, 3, 3}, {1, 1, 6}));
  // groups: channel c is scaled by its own 1x1 weight; W is [C, M/group, k].
  expect_close(run_op("ConvTranspose", {f32({1, 10}, {1, 2, 1}), f32({2, 3}, {2, 1, 1})}, {{"group", 2}})[0],
               f32({2, 30}, {1, 2, 1}));
}

// Scatter form of the ONNX definition: each input cell adds x * w[k] at i * stride + k * dilation - pad.
Tensor naive_conv_transpose_2d(const Tensor& x, const Tensor& w, int64_t group, const std::vector<int64_t>& s,
                               const std::vector<int64_t>& d, const std::vector<int64_t>& pads,
                               const std::vector<int64_t>& out_pad) {
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), KH = w.dim(2), KW = w.dim(3);
  const int64_t mg = w.dim(1), M = mg * group, cg = C / group;
  const int64_t OH = s[0] * (H - 1) + out_pad[0] + (KH - 1) * d[0] + 1 - pads[0] - pads[2];
  const int64_t OW = s[1] * (W - 1) + out_pad[1] + (KW - 1) * d[1] + 1 - pads[1] - pads[3];
  Tensor y(DType::kF32, {N, M, OH, OW});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t ww = 0; ww < W; ++ww)
          for (int64_t m = 0; m < mg; ++m)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t oh = h * s[0] + kh * d[0] - pads[0], ow = ww * s[1] + kw * d[1] - pads[1];
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                const int64_t out_c = (c / cg) * mg + m;
                y.data<float>()[((n * M + out_c) * OH + oh) * OW + ow] +=
                    x.data<float>()[((n * C + c) * H + h) * W + ww] * w.data<float>()[((c * mg + m) * KH + kh) * KW + kw];
              }
  return y;
}

TEST(ConvTranspose, MatchesNaiveScatterOnRandomShapes) {
  struct Case {
    Shape x;
    int64_t out_per_group, group;
    std::vector<int64_t> kernel, strides, dilations, pads, output_padding;
  };
  const std::vector<Case> cases = {
      {{1, 3, 5, 4}, 2, 1, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {0, 0}},
      {{2, 4, 4, 5}, 3, 2, {3, 2}, {2, 3}, {1, 1}, {1, 0, 1, 1}, {1, 2}},
      {{1, 2, 3, 3}, 2, 1, {2, 3}, {2, 2}, {2, 1}, {0, 1, 1, 0}, {1, 0}},
      {{1, 4, 6, 6}, 1, 4, {4, 4}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {0, 0}},  // depthwise upsampling
  };
  std::mt19937 rng(7);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Tensor x = random_tensor(rng, c.x);
    const Tensor w = random_tensor(rng, {c.x[1], c.out_per_group, c.kernel[0], c.kernel[1]});
    const Tensor want = naive_conv_transpose_2d(x, w, c.group, c.strides, c.dilations, c.pads, c.output_padding);
    const Attrs attrs{{"group", c.group},         {"strides", c.strides}, {"dilations", c.dilations},
                      {"pads", c.pads},           {"output_padding", c.output_padding}};
    expect_close(run_op("ConvTranspose", {x, w}, attrs)[0], want, 1e-4, "case " + std::to_string(i));
  }
}

TEST(ConvTranspose, RejectsBadInputsNamingTheNode) {
  std::mt19937 rng(3);
  expect_error([&] { run_op("ConvTranspose", {random_tensor(rng, {1, 3, 4, 4}), random_tensor(rng, {2, 1, 3, 3})}); },
               "3 channels");
  expect_error([&] { run_op("ConvTranspose", {random_tensor(rng, {1, 3, 4, 4}), random_tensor(rng, {3, 1, 3, 3})},
                            {{"group", 2}}); },
               "divisible by group");
  expect_error([&] { run_op("ConvTranspose", {random_tensor(rng, {3, 4}), random_tensor(rng, {3, 1})}); }, "rank >= 3");
}

// ---- Gemm, MatMul ----------------------------------------------------------------------------

Tensor naive_matmul_2d(const Tensor& a, const Tensor& b) {
  const int64_t M = a.dim(0), K = a.dim(1), N = b.dim(1);
  Tensor y(DType::kF32, {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(a.data<float>()[i * K + k]) * b.data<float>()[k * N + j];
      y.data<float>()[i * N + j] = static_cast<float>(acc);
    }
  return y;
}

Tensor transpose_2d(const Tensor& t) {
  Tensor r(DType::kF32, {t.dim(1), t.dim(0)});
  for (int64_t i = 0; i < t.dim(0); ++i)
    for (int64_t j = 0; j < t.dim(1); ++j) r.data<float>()[j * t.dim(0) + i] = t.data<float>()[i * t.dim(1) + j];
  return r;
}

TEST(Gemm, TransposesAlphaBetaAndBroadcastBias) {
  std::mt19937 rng(5);
  const int64_t M = 5, N = 7, K = 600;  // K > one GEMM k-block
  const Tensor a = random_tensor(rng, {M, K}), b = random_tensor(rng, {K, N});
  const Tensor ab = naive_matmul_2d(a, b);
  const float alpha = 0.5f, beta = 2.0f;
  for (const Shape& c_shape : {Shape{}, Shape{N}, Shape{1, N}, Shape{M, 1}, Shape{M, N}}) {
    const Tensor c = random_tensor(rng, c_shape);
    const std::vector<int64_t> cs = broadcast_strides(c_shape, {M, N});
    Tensor want(DType::kF32, {M, N});
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        want.data<float>()[i * N + j] = alpha * ab.data<float>()[i * N + j] + beta * c.data<float>()[i * cs[0] + j * cs[1]];
    for (int trans = 0; trans < 4; ++trans) {
      const bool ta = trans & 1, tb = trans & 2;
      const Attrs attrs{{"alpha", alpha}, {"beta", beta}, {"transA", int64_t{ta}}, {"transB", int64_t{tb}}};
      const Tensor y = run_op("Gemm", {ta ? transpose_2d(a) : a, tb ? transpose_2d(b) : b, c}, attrs)[0];
      expect_close(y, want, 1e-4, "C " + shape_str(c_shape) + " trans " + std::to_string(trans));
    }
  }
  expect_close(run_op("Gemm", {a, b})[0], ab, 1e-4, "no C");
  expect_error([&] { run_op("Gemm", {a, random_tensor(rng, {K + 1, N})}); }, "inner dimensions");
  expect_error([&] { run_op("Gemm", {a, b, random_tensor(rng, {2, N})}); }, "does not broadcast");
  expect_error([&] { run_op("Gemm", {random_tensor(rng, {2, 3, 4}), b}); }, "2-D");
}

TEST(MatMul, NumpyShapesAndBroadcasting) {
  std::mt19937 rng(9);
  // Output shapes, including 1-D promotion (the promoted unit dim is dropped).
  const std::vector<std::pair<std::pair<Shape, Shape>, Shape>> shapes = {
      {{{3, 4}, {4, 5}}, {3, 5}},       {{{4}, {4, 5}}, {5}},
      {{{3, 4}, {4}}, {3}},             {{{4}, {4}}, {}},
      {{{2, 3, 4}, {4, 5}}, {2, 3, 5}}, {{{2, 1, 3, 4}, {5, 4, 2}}, {2, 5, 3, 2}},
      {{{4}, {2, 4, 5}}, {2, 5}},       {{{1, 3, 4}, {2, 4, 5}}, {2, 3, 5}},
  };
  for (const auto& [in, out] : shapes) {
    const Tensor a = random_tensor(rng, in.first), b = random_tensor(rng, in.second);
    const Tensor y = run_op("MatMul", {a, b})[0];
    ASSERT_EQ(y.shape(), out) << shape_str(in.first) << " x " << shape_str(in.second);
  }
  // Values with batch broadcasting on both sides: [2, 1, 3, 4] x [5, 4, 2].
  const Tensor a = random_tensor(rng, {2, 1, 3, 4}), b = random_tensor(rng, {5, 4, 2});
  const Tensor y = run_op("MatMul", {a, b})[0];
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      const Tensor ai = a.slice_outer(i, i + 1).reshaped({3, 4}).clone();
      const Tensor bj = b.slice_outer(j, j + 1).reshaped({4, 2}).clone();
      const Tensor yij = y.slice_outer(i, i + 1).reshaped({5, 3, 2}).slice_outer(j, j + 1).reshaped({3, 2});
      expect_close(yij, naive_matmul_2d(ai, bj), 1e-5, "batch " + std::to_string(i) + "," + std::to_string(j));
    }
  // Shared B (folded into one GEMM): [2, 3, 4] x [4, 5].
  const Tensor a3 = random_tensor(rng, {2, 3, 4}), b2 = random_tensor(rng, {4, 5});
  expect_close(run_op("MatMul", {a3, b2})[0].reshaped({6, 5}), naive_matmul_2d(a3.reshaped({6, 4}), b2), 1e-5);
  // Integers fall out of the templates.
  const Tensor ai = Tensor::from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  const Tensor yi = run_op("MatMul", {ai, ai})[0];
  EXPECT_EQ(yi.to_int_vector(), (std::vector<int64_t>{7, 10, 15, 22}));

  expect_error([&] { run_op("MatMul", {random_tensor(rng, {3, 4}), random_tensor(rng, {5, 2})}); }, "inner dimensions");
  expect_error([&] { run_op("MatMul", {random_tensor(rng, {2, 3, 4}), random_tensor(rng, {3, 4, 2})}); },
               "cannot be broadcast");
  expect_error([&] { run_op("MatMul", {Tensor::scalar(1.0f), random_tensor(rng, {1, 2})}); }, "rank >= 1");
}

// ---- Pooling ---------------------------------------------------------------------------------

Tensor iota_tensor(Shape shape, float start = 1.0f) {
  Tensor t(DType::kF32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

TEST(Pool, CeilModeAndCountIncludePad) {
  const Tensor x4 = iota_tensor({1, 1, 4, 4});  // 1..16
  const Attrs ceil{{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}, {"ceil_mode", int64_t{1}}};
  expect_close(run_op("MaxPool", {x4}, ceil)[0], f32({11, 12, 15, 16}, {1, 1, 2, 2}));
  expect_close(run_op("AveragePool", {x4}, ceil)[0], f32({6, 7.5, 12, 13.5}, {1, 1, 2, 2}));
  // Without ceil_mode the partial windows are dropped.
  expect_close(run_op("MaxPool", {x4}, {{"kernel_shape", ints({3, 3})}, {"strides", ints({2, 2})}})[0],
               f32({11}, {1, 1, 1, 1}));

  const Tensor x3 = iota_tensor({1, 1, 3, 3});  // 1..9
  const Attrs padded{{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}};
  Attrs include = padded;
  include["count_include_pad"] = int64_t{1};
  // Corner window covers 1, 2, 4, 5 plus five padding cells.
  const Tensor exclude_pad = run_op("AveragePool", {x3}, padded)[0];
  const Tensor include_pad = run_op("AveragePool", {x3}, include)[0];
  EXPECT_FLOAT_EQ(exclude_pad.data<float>()[0], 12.0f / 4);
  EXPECT_FLOAT_EQ(include_pad.data<float>()[0], 12.0f / 9);
  EXPECT_FLOAT_EQ(exclude_pad.data<float>()[1], 21.0f / 6);
  EXPECT_FLOAT_EQ(include_pad.data<float>()[1], 21.0f / 9);
  EXPECT_FLOAT_EQ(include_pad.data<float>()[4], 45.0f / 9);
  expect_close(run_op("MaxPool", {x3}, padded)[0], f32({5, 6, 6, 8, 9, 9, 8, 9, 9}, {1, 1, 3, 3}));
}

TEST(Pool, MaxPoolIndicesRowAndColumnMajor) {
  // Two images, one channel, 2x3 planes; max of each 2x2 window (stride 1) is its bottom-right.
  const Tensor x = iota_tensor({2, 1, 2, 3});
  const Attrs attrs{{"kernel_shape", ints({2, 2})}};
  std::vector<Tensor> out = run_op("MaxPool", {x}, attrs, 2);
  expect_close(out[0], f32({5, 6, 11, 12}, {2, 1, 1, 2}));
  ASSERT_EQ(out[1].dtype(), DType::kI64);
  // Row-major (h, w) = (1, 1), (1, 2) -> 4, 5; plus 6 per image.
  EXPECT_EQ(out[1].to_int_vector(), (std::vector<int64_t>{4, 5, 10, 11}));
  Attrs column = attrs;
  column["storage_order"] = int64_t{1};
  out = run_op("MaxPool", {x}, column, 2);
  // Column-major: h + w * H -> 1 + 1*2 = 3, 1 + 2*2 = 5.
  EXPECT_EQ(out[1].to_int_vector(), (std::vector<int64_t>{3, 5, 9, 11}));
}

TEST(Pool, OneDimensionalDilatedAndIntegerMaxPool) {
  const Tensor x = f32({1, 5, 2, 4, 3, 0, 9}, {1, 1, 7});
  // Window taps at offsets 0 and 2.
  expect_close(run_op("MaxPool", {x}, {{"kernel_shape", ints({2})}, {"dilations", ints({2})}})[0],
               f32({2, 5, 3, 4, 9}, {1, 1, 5}));
  expect_close(run_op("AveragePool", {x}, {{"kernel_shape", ints({3})}, {"strides", ints({2})}})[0],
               f32({8.0f / 3, 3, 4}, {1, 1, 3}));
  const Tensor xi = Tensor::from_vector<uint8_t>({3, 200, 7, 255}, {1, 1, 4});
  const Tensor yi = run_op("MaxPool", {xi}, {{"kernel_shape", ints({2})}, {"strides", ints({2})}})[0];
  EXPECT_EQ(yi.to_int_vector(), (std::vector<int64_t>{200, 255}));
}

// Naive 2-D pooling oracle: explicit bounds checks per tap, divisor counted tap by tap.
Tensor naive_pool_2d(const Tensor& x, bool max, const std::vector<int64_t>& k, const std::vector<int64_t>& s,
                     const std::vector<int64_t>& d, const std::vector<int64_t>& pads, bool ceil_mode,
                     bool count_include_pad) {
  const int64_t planes = x.dim(0) * x.dim(1), H = x.dim(2), W = x.dim(3);
  int64_t out[2];
  const int64_t in[2] = {H, W};
  for (int i = 0; i < 2; ++i) {
    const double span = static_cast<double>(in[i] + pads[i] + pads[i + 2] - ((k[i] - 1) * d[i] + 1)) / s[i];
    out[i] = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
    if (ceil_mode && (out[i] - 1) * s[i] >= in[i] + pads[i]) --out[i];
  }
  Tensor y(DType::kF32, {x.dim(0), x.dim(1), out[0], out[1]});
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < out[0]; ++oh)
      for (int64_t ow = 0; ow < out[1]; ++ow) {
        double acc = max ? -INFINITY : 0.0;
        int64_t count = 0;
        for (int64_t kh = 0; kh < k[0]; ++kh)
          for (int64_t kw = 0; kw < k[1]; ++kw) {
            const int64_t ih = oh * s[0] - pads[0] + kh * d[0], iw = ow * s[1] - pads[1] + kw * d[1];
            const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
            const bool in_padding = ih >= -pads[0] && ih < H + pads[2] && iw >= -pads[1] && iw < W + pads[3];
            if (inside) {
              const double v = x.data<float>()[(p * H + ih) * W + iw];
              acc = max ? std::max(acc, v) : acc + v;
            }
            count += count_include_pad ? in_padding : inside;
          }
        y.data<float>()[(p * out[0] + oh) * out[1] + ow] = static_cast<float>(max ? acc : acc / count);
      }
  return y;
}

TEST(Pool, MatchesNaiveLoopsOnRandomShapes) {
  struct Case {
    Shape x;
    std::vector<int64_t> kernel, strides, dilations, pads;
    bool ceil_mode, count_include_pad;
  };
  const std::vector<Case> cases = {
      {{1, 2, 9, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, false},
      {{2, 3, 10, 7}, {3, 2}, {2, 3}, {1, 1}, {1, 0, 0, 1}, true, false},
      {{1, 1, 8, 8}, {2, 3}, {1, 2}, {2, 1}, {0, 1, 1, 1}, true, true},
      {{1, 2, 7, 9}, {3, 3}, {3, 2}, {1, 2}, {1, 2, 1, 2}, false, true},
  };
  std::mt19937 rng(11);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Tensor x = random_tensor(rng, c.x);
    const Attrs attrs{{"kernel_shape", c.kernel},
                      {"strides", c.strides},
                      {"dilations", c.dilations},
                      {"pads", c.pads},
                      {"ceil_mode", int64_t{c.ceil_mode}},
                      {"count_include_pad", int64_t{c.count_include_pad}}};
    const std::string what = "case " + std::to_string(i);
    expect_close(run_op("MaxPool", {x}, attrs)[0],
                 naive_pool_2d(x, true, c.kernel, c.strides, c.dilations, c.pads, c.ceil_mode, false), 1e-6, what);
    expect_close(run_op("AveragePool", {x}, attrs)[0],
                 naive_pool_2d(x, false, c.kernel, c.strides, c.dilations, c.pads, c.ceil_mode, c.count_include_pad),
                 1e-5, what);
  }
}

TEST(Pool, GlobalPools) {
  const Tensor x = iota_tensor({2, 3, 2, 2});
  const Tensor avg = run_op("GlobalAveragePool", {x})[0];
  const Tensor max = run_op("GlobalMaxPool", {x})[0];
  ASSERT_EQ(avg.shape(), (Shape{2, 3, 1, 1}));
  for (int i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ(avg.data<float>()[i], 4.0f * i + 2.5f);
    EXPECT_FLOAT_EQ(max.data<float>()[i], 4.0f * i + 4.0f);
  }
  EXPECT_EQ(run_op("GlobalAveragePool", {iota_tensor({1, 2, 5})})[0].shape(), (Shape{1, 2, 1}));
  expect_error([&] { run_op("GlobalMaxPool", {iota_tensor({2, 3})}); }, "rank >= 3");
  expect_error([&] { run_op("MaxPool", {iota_tensor({1, 1, 4, 4})}); }, "kernel_shape");
  expect_error([&] { run_op("AveragePool", {iota_tensor({1, 1, 4, 4})}, {{"kernel_shape", ints({3})}}); }, "kernel has 1 dims");
  expect_error([&] { run_op("MaxPool", {iota_tensor({4, 4})}, {{"kernel_shape", ints({3})}}); }, "rank >= 3");
}

// ---- Normalization ---------------------------------------------------------------------------

TEST(BatchNormalization, InferenceFormula) {
  std::mt19937 rng(13);
  const Tensor x = random_tensor(rng, {2, 3, 2, 2});
  const Tensor scale = f32({1, 2, 0.5}, {3}), bias = f32({0, 1, -1}, {3}), mean = f32({0.1f, -0.2f, 0.3f}, {3});
  const Tensor var = f32({1, 4, 0.25}, {3});
  const float eps = 1e-3f;
  const Tensor y = run_op("BatchNormalization", {x, scale, bias, mean, var}, {{"epsilon", eps}})[0];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = (i / 4) % 3;
    const float want = (x.data<float>()[i] - mean.data<float>()[c]) / std::sqrt(var.data<float>()[c] + eps) *
                           scale.data<float>()[c] + bias.data<float>()[c];
    EXPECT_NEAR(y.data<float>()[i], want, 1e-5) << i;
  }
  // Before opset 14, training was signalled by the saved statistics outputs: not implemented.
  EXPECT_THROW(run_op("BatchNormalization", {x, scale, bias, mean, var}, {}, 5), UnsupportedError);
  expect_error([&] { run_op("BatchNormalization", {x, f32({1, 2}, {2}), bias, mean, var}); }, "scale has shape [2]");
  expect_error([&] { run_op("BatchNormalization", {f32({1}, {1}), scale, bias, mean, var}); }, "rank >= 2");
}

TEST(BatchNormalization, TrainingModeUsesBatchStatistics) {
  // X [N=2, C=2, 1]: channel 0 holds 1, 3 (mean 2, biased variance 1); channel 1 holds 2, 6
  // (mean 4, biased variance 4 -- the unbiased 8 would be wrong).
  const Tensor x = f32({1, 2, 3, 6}, {2, 2, 1});
  const Tensor scale = f32({1, 2}, {2}), bias = f32({0, 1}, {2}), mean = f32({0, 0}, {2}), var = f32({1, 1}, {2});
  const std::vector<Tensor> out = run_op("BatchNormalization", {x, scale, bias, mean, var},
                                         {{"training_mode", int64_t{1}}, {"epsilon", 0.0f}, {"momentum", 0.5f}}, 3);
  ASSERT_EQ(out.size(), 3u);
  // Y: channel 0 (x - 2) / 1; channel 1 (x - 4) / 2 * 2 + 1.
  expect_close(out[0], f32({-1, -1, 1, 3}, {2, 2, 1}), 1e-6, "Y");
  // running = input * momentum + batch * (1 - momentum).
  expect_close(out[1], f32({1, 2}, {2}), 1e-6, "running_mean");
  expect_close(out[2], f32({1, 2.5f}, {2}), 1e-6, "running_var");
  // Default momentum 0.9; Y alone may be requested.
  const std::vector<Tensor> def =
      run_op("BatchNormalization", {x, scale, bias, mean, var}, {{"training_mode", int64_t{1}}, {"epsilon", 0.0f}}, 3);
  expect_close(def[1], f32({0.2f, 0.4f}, {2}), 1e-6, "running_mean, default momentum");
  expect_close(def[2], f32({1.0f, 1.3f}, {2}), 1e-6, "running_var, default momentum");
  const Tensor y = run_op("BatchNormalization", {x, scale, bias, mean, var}, {{"training_mode", int64_t{1}}, {"epsilon", 0.0f}})[0];
  expect_close(y, f32({-1, -1, 1, 3}, {2, 2, 1}), 1e-6, "Y alone");
}

TEST(LayerNormalization, AxisStatisticsAndBroadcastScale) {
  std::mt19937 rng(17);
  const Tensor x = random_tensor(rng, {2, 3, 4}, -5, 5);
  const Tensor scale = random_tensor(rng, {1, 4});  // broadcasts over the normalized [3, 4]
  const Tensor bias = random_tensor(rng, {3, 4});
  const float eps = 1e-2f;
  const std::vector<Tensor> out =
      run_op("LayerNormalization", {x, scale, bias}, {{"axis", int64_t{1}}, {"epsilon", eps}}, 3);
  ASSERT_EQ(out[1].shape(), (Shape{2, 1, 1}));
  ASSERT_EQ(out[2].shape(), (Shape{2, 1, 1}));
  for (int64_t r = 0; r < 2; ++r) {
    const float* row = x.data<float>() + r * 12;
    double mean = 0, var = 0;
    for (int i = 0; i < 12; ++i) mean += row[i] / 12.0;
    for (int i = 0; i < 12; ++i) var += (row[i] - mean) * (row[i] - mean) / 12.0;
    const double inv_std = 1.0 / std::sqrt(var + eps);
    EXPECT_NEAR(out[1].data<float>()[r], mean, 1e-5);
    EXPECT_NEAR(out[2].data<float>()[r], inv_std, 1e-5);
    for (int i = 0; i < 12; ++i) {
      const double want = (row[i] - mean) * inv_std * scale.data<float>()[i % 4] + bias.data<float>()[i];
      EXPECT_NEAR(out[0].data<float>()[r * 12 + i], want, 1e-5);
    }
  }
  // Default axis -1 without bias: every row of 4 has mean 0 and unit variance (eps aside).
  const Tensor y = run_op("LayerNormalization", {x, f32({1, 1, 1, 1}, {4})}, {{"epsilon", 0.0f}})[0];
  for (int64_t r = 0; r < 6; ++r) {
    double sum = 0, sq = 0;
    for (int i = 0; i < 4; ++i) sum += y.data<float>()[r * 4 + i], sq += y.data<float>()[r * 4 + i] * y.data<float>()[r * 4 + i];
    EXPECT_NEAR(sum, 0.0, 1e-5);
    EXPECT_NEAR(sq / 4, 1.0, 1e-4);
  }
  expect_error([&] { run_op("LayerNormalization", {x, f32({1, 1, 1}, {3})}); }, "does not broadcast");
  expect_error([&] { run_op("LayerNormalization", {x, scale}, {{"axis", int64_t{3}}}); }, "axis 3 out of range");
}

// ---- Softmax ---------------------------------------------------------------------------------

TEST(Softmax, StableForLargeInputsAlongAnyAxis) {
  const Tensor x = f32({1000, 1001, 1002, -1000, 0, 1000}, {2, 3});
  const Tensor y = run_op("Softmax", {x})[0];
  const double e0 = 1.0 / (1.0 + std::exp(1.0) + std::exp(2.0));
  const float want[] = {float(e0), float(e0 * std::exp(1.0)), float(e0 * std::exp(2.0)), 0, 0, 1};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(y.data<float>()[i], want[i], 1e-6) << i;
  const Tensor ly = run_op("LogSoftmax", {x})[0];
  EXPECT_NEAR(ly.data<float>()[2], std::log(e0 * std::exp(2.0)), 1e-5);
  EXPECT_NEAR(ly.data<float>()[3], -2000.0, 1e-2);
  EXPECT_TRUE(std::isfinite(ly.data<float>()[3]));

  // axis 0 of [2, 3]: each column normalised; columns are contiguous in neither row.
  const Tensor y0 = run_op("Softmax", {x}, {{"axis", int64_t{0}}})[0];
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(y0.data<float>()[j] + y0.data<float>()[3 + j], 1.0, 1e-6);
  EXPECT_NEAR(y0.data<float>()[0], 1.0, 1e-6);     // 1000 vs -1000
  EXPECT_NEAR(y0.data<float>()[1], 1.0 / (1.0 + std::exp(-1001.0)), 1e-6);
  // Middle axis of a 3-D tensor.
  std::mt19937 rng(19);
  const Tensor x3 = random_tensor(rng, {2, 5, 3}, -50, 50);
  const Tensor y3 = run_op("Softmax", {x3}, {{"axis", int64_t{-2}}})[0];
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 3; ++i) {
      double s = 0;
      for (int a = 0; a < 5; ++a) s += y3.data<float>()[(o * 5 + a) * 3 + i];
      EXPECT_NEAR(s, 1.0, 1e-5);
    }
  expect_error([&] { run_op("Softmax", {x}, {{"axis", int64_t{2}}}); }, "out of range");
  expect_error([&] { run_op("LogSoftmax", {Tensor::scalar(1.0f)}); }, "rank >= 1");
}

}  // namespace
}  // namespace xnn
