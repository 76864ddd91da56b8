// Latency predictor speed: predictions per second for a ~50-op model with precomputed features
// (the NAS inner loop: it must reach >= 10,000/s), and featurisation of a loaded model
// (Session preparation + plan_summary), which a search pays once per candidate.
//
// The predictor is fitted on synthetic per-op data shaped like a MobileNet's (conv kernels,
// depthwise, pooling, adds) so the forests have realistic sizes without measuring anything.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "harness/arch/mobilenet_space.h"
#include "harness/predict/latency_predictor.h"
#include "harness/predict/model_features.h"

namespace xnn::predict {
namespace {

OpFeatures synthetic_op(std::mt19937_64& rng, int i) {
  static const char* kKernels[] = {"f32_conv1x1_gemm+f32_gemm_6x16__avx2", "f32_dwconv3x3s1__avx2",
                                   "f32_dwconv5x5s2__avx2", "f32_conv_im2col+f32_gemm_6x16__avx2"};
  std::uniform_int_distribution<int> ch(1, 40), hw(1, 14), pick(0, 3);
  const int64_t c = 8 * ch(rng), h = 4 * hw(rng);
  const int k = pick(rng);
  OpShapes s;
  if (k == 1 || k == 2) {
    const int64_t ks = k == 1 ? 3 : 5, st = k == 1 ? 1 : 2;
    s.inputs = {{1, c, h, h}, {c, 1, ks, ks}, {c}};
    s.outputs = {{1, c, h / st, h / st}};
  } else {
    const int64_t co = 8 * ch(rng), ks = k == 0 ? 1 : 3;
    s.inputs = {{1, c, h, h}, {co, c, ks, ks}, {co}};
    s.outputs = {{1, co, h, h}};
  }
  std::string name = "n";
  name += std::to_string(i);
  return featurize_op(name, "FusedConv", kKernels[k], s, i % 2 ? "Relu" : "HardSwish");
}

const LatencyPredictor& fitted_predictor() {
  static const LatencyPredictor p = [] {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> noise(0.0, 0.05);
    std::vector<CalibrationModel> models(100);
    for (size_t m = 0; m < models.size(); ++m) {
      double total = 0;
      for (int i = 0; i < 50; ++i) {
        OpFeatures f = synthetic_op(rng, i);
        const double t = (0.002 + f.macs * 2e-8 + f.bytes * 5e-9) * noise(rng);
        total += t;
        models[m].ops.push_back(OpSample{std::move(f), t});
      }
      models[m].name = std::to_string(m);
      models[m].measured_ms = 0.05 + 1.02 * total;
    }
    return LatencyPredictor::fit(models, PredictorFitOptions{});
  }();
  return p;
}

std::vector<OpFeatures> fifty_ops() {
  std::mt19937_64 rng(11);
  std::vector<OpFeatures> ops;
  for (int i = 0; i < 50; ++i) ops.push_back(synthetic_op(rng, i));
  return ops;
}

// One item = one 50-op model predicted with its per-op breakdown and uncertainty.
void BM_Predict50Ops(benchmark::State& state) {
  const LatencyPredictor& p = fitted_predictor();
  const std::vector<OpFeatures> ops = fifty_ops();
  for (auto _ : state) benchmark::DoNotOptimize(p.predict(ops));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Predict50Ops);

// The latency only (what a search loop ranking candidates calls).
void BM_PredictLatency50Ops(benchmark::State& state) {
  const LatencyPredictor& p = fitted_predictor();
  const std::vector<OpFeatures> ops = fifty_ops();
  for (auto _ : state) benchmark::DoNotOptimize(p.predict_latency_ms(ops));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PredictLatency50Ops);

// Featurising a loaded MobileNet-like model (session creation, preparation, plan_summary).
void BM_FeaturizeLoadedModel(benchmark::State& state) {
  arch::SearchSpace space = arch::load_search_space(XNN_SOURCE_DIR "/configs/arch/mobilenet_space.yaml");
  std::mt19937_64 rng(3);
  const std::shared_ptr<const Model> model = arch::build_arch_model(space, arch::sample_arch(space, rng), 1);
  size_t ops = 0;
  for (auto _ : state) {
    const std::vector<OpFeatures> f = featurize_model(model, 1);
    ops = f.size();
    benchmark::DoNotOptimize(f.data());
  }
  state.counters["ops"] = static_cast<double>(ops);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FeaturizeLoadedModel)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace xnn::predict
