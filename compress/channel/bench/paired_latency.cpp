// Paired latency of two models on this CPU, for a noisy shared machine: one process, both
// sessions prepared, runs alternate A B B A ... so that load bursts hit both alike; reports each
// model's median and minimum and the median of the per-pair ratios A/B. Used to measure the
// speed-up of a channel-pruned model (README.md); never run by tests.
//   xnn_paired_latency A.onnx B.xnn [PAIRS=50] [THREADS=1] [N (batch, symbolic dim 0)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/runtime/graph_cost.h"
#include "engine/runtime/model_io.h"
#include "engine/runtime/session.h"

namespace {

std::map<std::string, xnn::Tensor> make_inputs(const xnn::Model& m, int64_t batch) {
  std::map<std::string, xnn::Tensor> in;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  for (int i : m.graph.inputs) {
    const xnn::Value& v = m.graph.value(i);
    xnn::Shape s = xnn::concrete_input_shape(v, {});
    if (!s.empty() && !v.shape[0].known()) s[0] = batch;
    xnn::Tensor t(xnn::DType::kF32, s);
    for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = dist(rng);
    in[v.name] = t;
  }
  return in;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s A B [PAIRS=50] [THREADS=1] [BATCH=1]\n", argv[0]);
    return 2;
  }
  try {
    const int pairs = argc > 3 ? std::atoi(argv[3]) : 50;
    xnn::SessionOptions so;
    so.threads = argc > 4 ? std::atoi(argv[4]) : 1;
    const int64_t batch = argc > 5 ? std::atoll(argv[5]) : 1;
    std::shared_ptr<xnn::Model> ma = xnn::load_model(argv[1]), mb = xnn::load_model(argv[2]);
    xnn::Session sa(ma, so), sb(mb, so);
    const auto ia = make_inputs(*ma, batch), ib = make_inputs(*mb, batch);
    for (int w = 0; w < 3; ++w) sa.run(ia), sb.run(ib);
    const auto time = [](xnn::Session& s, const std::map<std::string, xnn::Tensor>& in) {
      const auto t0 = std::chrono::steady_clock::now();
      s.run(in);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    std::vector<double> ta, tb, ratio;
    for (int p = 0; p < pairs; ++p) {
      double a, b;
      if (p % 2 == 0) {
        a = time(sa, ia), b = time(sb, ib);
      } else {
        b = time(sb, ib), a = time(sa, ia);
      }
      ta.push_back(a), tb.push_back(b), ratio.push_back(a / b);
    }
    std::printf("A %s: median %.3f ms, min %.3f ms, %.4g GMACs\n", argv[1], median(ta),
                *std::min_element(ta.begin(), ta.end()), xnn::estimate_graph_cost(ma->graph).total.macs / 1e9);
    std::printf("B %s: median %.3f ms, min %.3f ms, %.4g GMACs\n", argv[2], median(tb),
                *std::min_element(tb.begin(), tb.end()), xnn::estimate_graph_cost(mb->graph).total.macs / 1e9);
    std::printf("A/B: median of %d paired ratios %.3f, ratio of medians %.3f, ratio of minima %.3f (threads %d, batch %lld)\n",
                pairs, median(ratio), median(ta) / median(tb),
                *std::min_element(ta.begin(), ta.end()) / *std::min_element(tb.begin(), tb.end()), so.threads,
                static_cast<long long>(batch));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
