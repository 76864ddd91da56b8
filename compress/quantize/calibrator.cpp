#include "compress/quantize/calibrator.h"

#include <algorithm>
#include <unordered_set>

#include "engine/core/error.h"

namespace xnn::quantize {
namespace {

// A copy of the model whose outputs also list every float-valued tensor produced by a node.
std::shared_ptr<Model> observing_copy(const Model& model, std::vector<std::string>& observed) {
  auto copy = std::make_shared<Model>(model);
  Graph& g = copy->graph;
  std::unordered_set<int> outputs(g.outputs.begin(), g.outputs.end());
  for (const Node& n : g.nodes) {
    for (int o : n.outputs) {
      if (o < 0) continue;
      const Value& v = g.value(o);
      if (v.dtype != DType::kF32 && v.dtype != DType::kUnknown) continue;
      if (outputs.insert(o).second) g.outputs.push_back(o);
    }
  }
  for (int o : g.outputs) observed.push_back(g.value(o).name);
  return copy;
}

}  // namespace

CalibrationStats collect_statistics(const Model& float_model, const Tensor& samples, const BatchOptions& options) {
  if (samples.rank() == 0 || samples.dim(0) < 1) {
    throw Error("calibration needs at least one sample, got a tensor of shape " + shape_str(samples.shape()));
  }
  std::vector<std::string> observed;
  SessionOptions so;
  so.threads = options.threads;
  so.opt_level = 0;  // the graph is already optimised as it will be quantised
  Session session(observing_copy(float_model, observed), so);
  const std::string input_name = session.inputs().at(0).name;

  // Pass 1: ranges. Only float results are observed (an output may turn out to be an integer
  // tensor whose dtype was unknown before running).
  std::map<std::string, ObservedRange> ranges;
  auto observe = [&](const std::function<void(const std::string&, const Tensor&)>& f) {
    run_batched(session, samples, options.batch, [&](int64_t begin, int64_t count, const std::vector<Tensor>& outs) {
      f(input_name, samples.slice_outer(begin, begin + count));
      for (size_t i = 0; i < outs.size(); ++i) {
        if (outs[i].dtype() == DType::kF32) f(observed[i], outs[i]);
      }
    });
  };
  // Channel sums for the means (double: millions of values per channel on large maps).
  std::map<std::string, std::pair<std::vector<double>, int64_t>> channel_sums;  // sums, values per channel
  observe([&](const std::string& name, const Tensor& t) {
    ranges[name].add(t.data<float>(), t.numel());
    if (t.rank() < 2 || t.dim(1) < 1) return;
    const int64_t outer = t.dim(0), channels = t.dim(1), inner = t.numel() / (outer * channels);
    auto& [sums, count] = channel_sums[name];
    sums.resize(static_cast<size_t>(channels), 0.0);
    const float* p = t.data<float>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t c = 0; c < channels; ++c) {
        double acc = 0;
        for (int64_t i = 0; i < inner; ++i) acc += p[(o * channels + c) * inner + i];
        sums[static_cast<size_t>(c)] += acc;
      }
    count += outer * inner;
  });

  // Pass 2: histograms over the ranges of pass 1.
  CalibrationStats stats;
  for (auto& [name, sc] : channel_sums) {
    std::vector<double>& means = stats.channel_means[name];
    means = sc.first;
    for (double& m : means) m /= static_cast<double>(std::max<int64_t>(sc.second, 1));
  }
  stats.samples = samples.dim(0);
  for (const auto& [name, r] : ranges) stats.histograms.emplace(name, Histogram(r));
  observe([&](const std::string& name, const Tensor& t) { stats.histograms.at(name).add(t.data<float>(), t.numel()); });
  return stats;
}

std::map<std::string, Range> choose_ranges(const CalibrationStats& stats, const CalibrationSettings& settings) {
  std::map<std::string, Range> out;
  for (const auto& [name, h] : stats.histograms) out.emplace(name, choose_range(h, settings));
  return out;
}

}  // namespace xnn::quantize
