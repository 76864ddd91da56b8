// Training-path kernels (engine/kernels/training_kernels.h) on the activation sizes of the
// small Fashion-MNIST CNN at batch 128: BatchNorm passes over [N][C][inner] walked channel by
// channel (as the training BatchNorm does), ReLU backward and the 2×2 max pool with argmax.
// Counter "GB/s" = bytes read + written per second.
//
// And a lone convolution's training step (BM_train_conv3x3_step, below).
//
//   xnn_kernel_bench --benchmark_filter=BM_train_ --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/core/graph.h"
#include "engine/kernels/training_kernels.h"
#include "engine/train/training_session.h"

namespace {

using xnn::kernels::Isa;

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

Isa isa_arg(int64_t a) { return a ? Isa::kAvx2 : Isa::kScalar; }

// args: C, inner (= H·W), isa
void BM_train_bn_forward(benchmark::State& state) {
  const int64_t n = 128, c = state.range(0), inner = state.range(1);
  const Isa isa = isa_arg(state.range(2));
  const std::vector<float> x = random_floats(static_cast<size_t>(n * c * inner), 1);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    for (int64_t ch = 0; ch < c; ++ch) {
      double s1 = 0, s2 = 0;
      for (int64_t i = 0; i < n; ++i) {
        float a = 0, b = 0;
        xnn::kernels::f32_shifted_sums(x.data() + (i * c + ch) * inner, inner, 0.1f, &a, &b, isa);
        s1 += a, s2 += b;
      }
      const float scale = static_cast<float>(1.0 / (1.0 + s2 * 1e-9)), shift = static_cast<float>(s1 * 1e-9);
      for (int64_t i = 0; i < n; ++i)
        xnn::kernels::f32_scale_shift(x.data() + (i * c + ch) * inner, inner, scale, shift, xnn::kernels::Activation::relu(),
                                      y.data() + (i * c + ch) * inner, isa);
    }
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(x.size() * 12), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_train_bn_forward)->Args({32, 784, 0})->Args({32, 784, 1})->Args({64, 196, 1})->Unit(benchmark::kMillisecond);

void BM_train_bn_backward(benchmark::State& state) {
  const int64_t n = 128, c = state.range(0), inner = state.range(1);
  const Isa isa = isa_arg(state.range(2));
  const std::vector<float> x = random_floats(static_cast<size_t>(n * c * inner), 1);
  const std::vector<float> dy = random_floats(x.size(), 2);
  std::vector<float> dx(x.size());
  for (auto _ : state) {
    for (int64_t ch = 0; ch < c; ++ch) {
      double s1 = 0, s2 = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t off = (i * c + ch) * inner;
        float a = 0, b = 0;
        xnn::kernels::f32_bn_grad_sums(x.data() + off, dy.data() + off, inner, 0.1f, 1.5f, -0.2f,
                                       xnn::kernels::Activation::relu(), &a, &b, isa);
        s1 += a, s2 += b;
      }
      for (int64_t i = 0; i < n; ++i) {
        const int64_t off = (i * c + ch) * inner;
        xnn::kernels::f32_bn_grad_apply(x.data() + off, dy.data() + off, inner, 0.1f, 1.5f, -0.2f,
                                        xnn::kernels::Activation::relu(), 1.0f, static_cast<float>(s1 * 1e-9),
                                        static_cast<float>(s2 * 1e-9), dx.data() + off, /*stream=*/true, isa);
      }
    }
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(x.size() * 20), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_train_bn_backward)->Args({32, 784, 0})->Args({32, 784, 1})->Args({64, 196, 1})->Unit(benchmark::kMillisecond);

// args: planes (N·C), input H = W, isa
void BM_train_maxpool2x2(benchmark::State& state) {
  const int64_t planes = state.range(0), h = state.range(1), oh = h / 2;
  const Isa isa = isa_arg(state.range(2));
  const std::vector<float> x = random_floats(static_cast<size_t>(planes * h * h), 1);
  std::vector<float> y(static_cast<size_t>(planes * oh * oh)), dx(x.size());
  std::vector<uint8_t> idx(y.size());
  for (auto _ : state) {
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oy = 0; oy < oh; ++oy) {
        const float* r0 = x.data() + (p * h + 2 * oy) * h;
        xnn::kernels::f32_maxpool2x2_argmax_row(r0, r0 + h, oh, y.data() + (p * oh + oy) * oh,
                                                idx.data() + (p * oh + oy) * oh, isa);
      }
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oy = 0; oy < oh; ++oy) {
        float* d0 = dx.data() + (p * h + 2 * oy) * h;
        xnn::kernels::f32_maxpool2x2_grad_row(y.data() + (p * oh + oy) * oh, idx.data() + (p * oh + oy) * oh, oh, d0,
                                              d0 + h, isa);
      }
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(x.size() * 4 * 2 + y.size() * 10),
                                              benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_train_maxpool2x2)->Args({128 * 32, 28, 0})->Args({128 * 32, 28, 1})->Args({128 * 64, 14, 1})->Unit(benchmark::kMillisecond);

// One training step of a lone 3×3 convolution (pad 1) on a batch of 128: its forward, and a
// backward that computes the weight gradient only (the input is the session's runtime input,
// so no input gradient), as the convolutions of the small Fashion-MNIST CNN. Counter "GFLOP/s"
// = 2·MACs of forward + weight gradient per second. args: C_in, C_out, H = W, threads.
namespace bench_conv {

int add_node(xnn::Graph& g, const std::string& op, std::vector<int> inputs, std::map<std::string, xnn::Attribute> attrs) {
  xnn::Node n;
  n.op_type = op;
  n.name = op + std::to_string(g.nodes.size());
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  xnn::Value v;
  v.name = n.name + "_out";
  v.dtype = xnn::DType::kF32;
  n.outputs.push_back(g.add_value(v));
  g.nodes.push_back(std::move(n));
  return g.nodes.back().outputs[0];
}

void BM_train_conv3x3_step(benchmark::State& state) {
  const int64_t batch = 128, c = state.range(0), m = state.range(1), hw = state.range(2);
  auto model = std::make_shared<xnn::Model>();
  xnn::Graph& g = model->graph;
  xnn::Value in;
  in.name = "x";
  in.dtype = xnn::DType::kF32;
  in.has_shape = true;
  in.shape = {xnn::Dim::fixed(batch), xnn::Dim::fixed(c), xnn::Dim::fixed(hw), xnn::Dim::fixed(hw)};
  const int x = g.add_value(in);
  g.inputs.push_back(x);
  const std::vector<float> wv = random_floats(static_cast<size_t>(m * c * 9), 3);
  xnn::Tensor w(xnn::DType::kF32, {m, c, 3, 3});
  std::copy(wv.begin(), wv.end(), w.data<float>());
  const int wi = g.add_constant("w", std::move(w));
  const int y = add_node(g, "Conv", {x, wi}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  // A global average pool keeps the loss small (64 logits): the step is the convolution's.
  const int pooled = add_node(g, "GlobalAveragePool", {y}, {});
  g.outputs.push_back(add_node(g, "Flatten", {pooled}, {{"axis", int64_t{1}}}));
  xnn::train::TrainingSession session(model, xnn::train::TrainingOptions{static_cast<int>(state.range(3)), 0, 0.0f});
  xnn::Tensor input(xnn::DType::kF32, {batch, c, hw, hw});
  const std::vector<float> xv = random_floats(static_cast<size_t>(input.numel()), 4);
  std::copy(xv.begin(), xv.end(), input.data<float>());
  xnn::Tensor labels(xnn::DType::kI64, {batch});
  for (int64_t i = 0; i < batch; ++i) labels.data<int64_t>()[i] = i % m;
  for (auto _ : state) session.train_step(input, labels);
  const double macs = 2.0 * static_cast<double>(batch * m * c * 9 * hw * hw);
  state.counters["GFLOP/s"] = benchmark::Counter(2 * macs, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_train_conv3x3_step)
    ->Args({32, 64, 14, 1})
    ->Args({64, 64, 7, 1})
    ->Args({32, 64, 14, 2})
    ->Args({64, 64, 7, 2})
    ->Unit(benchmark::kMillisecond);

}  // namespace bench_conv

}  // namespace
