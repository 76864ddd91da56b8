#include "compress/prune/pattern_prune.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <numeric>

#include "engine/core/error.h"

namespace xnn::prune {
namespace {

struct Layer {
  std::string name;
  std::span<float> data;  // whole 3×3 kernels
};

void check_options(const PatternOptions& o) {
  if (o.taps < 1 || o.taps > 8) throw Error("pattern pruning: taps " + std::to_string(o.taps) + " is outside [1, 8]");
  if (o.library_size < 1) throw Error("pattern pruning: library size must be >= 1");
}

double energy(const float* k, uint16_t mask) {
  double e = 0;
  for (int t = 0; t < 9; ++t) {
    if (mask & (1u << t)) e += static_cast<double>(k[t]) * k[t];
  }
  return e;
}

PatternPruneResult prune_layers(const std::vector<Layer>& layers, const PatternOptions& options, double connectivity,
                                std::vector<uint16_t> library) {
  check_options(options);
  if (!(connectivity >= 0.0 && connectivity < 1.0)) {
    throw Error("pattern pruning: connectivity " + std::to_string(connectivity) + " is outside [0, 1)");
  }
  PatternPruneResult r;
  if (library.empty()) {
    std::vector<std::span<const float>> spans;
    for (const Layer& l : layers) spans.emplace_back(l.data.data(), l.data.size());
    library = learn_pattern_library(spans, options);
  }
  r.library = library;
  for (const Layer& l : layers) {
    const int64_t kernels = static_cast<int64_t>(l.data.size() / 9);
    std::vector<uint8_t>& keep = r.masks[l.name];
    keep.assign(l.data.size(), 1);
    std::vector<std::pair<double, int64_t>> norms(static_cast<size_t>(kernels));
    for (int64_t i = 0; i < kernels; ++i) {
      float* k = l.data.data() + i * 9;
      uint16_t mask = 0;
      if (top_k_pattern(k, 1) != 0) mask = library[static_cast<size_t>(best_pattern(k, library))];
      for (int t = 0; t < 9; ++t) {
        if (!(mask & (1u << t))) k[t] = 0.0f, keep[static_cast<size_t>(i * 9 + t)] = 0;
      }
      norms[static_cast<size_t>(i)] = {energy(k, 0x1FF), i};
    }
    const int64_t remove = std::llround(connectivity * static_cast<double>(kernels));
    if (remove > 0) {
      std::nth_element(norms.begin(), norms.begin() + (remove - 1), norms.end());
      for (int64_t j = 0; j < remove; ++j) {
        const int64_t i = norms[static_cast<size_t>(j)].second;
        std::fill(l.data.begin() + i * 9, l.data.begin() + i * 9 + 9, 0.0f);
        std::fill(keep.begin() + i * 9, keep.begin() + i * 9 + 9, uint8_t{0});
      }
    }
    r.kernels += kernels;
    for (int64_t i = 0; i < kernels; ++i) {
      const float* k = l.data.data() + i * 9;
      r.removed_kernels += std::all_of(k, k + 9, [](float v) { return v == 0.0f; });
    }
  }
  return r;
}

bool is_3x3_group1(const Model& model, const PrunableWeight& w) {
  if (w.op_type != "Conv" && w.op_type != "FusedConv") return false;
  const int idx = model.graph.find_value(w.value);
  if (idx < 0 || !model.graph.value(idx).is_constant()) return false;
  const Tensor& t = *model.graph.value(idx).data;
  if (t.rank() != 4 || t.dim(2) != 3 || t.dim(3) != 3) return false;
  for (const Node& n : model.graph.nodes) {
    if (n.name == w.node) return n.attr_int("group", 1) == 1;
  }
  return false;
}

// The weight's tensor, writable (constants viewing a read-only mapping are copied first).
std::span<float> writable(Model& model, const std::string& value) {
  const int idx = model.graph.find_value(value);
  if (idx < 0 || !model.graph.value(idx).is_constant()) {
    throw Error("pattern pruning: weight '" + value + "' is not a constant of the model");
  }
  std::optional<Tensor>& data = model.graph.value(idx).data;
  if (data->dtype() != DType::kF32) throw Error("pattern pruning: weight '" + value + "' is not float32");
  if (!data->buffer()->owns_memory()) data = data->clone();
  return {data->data<float>(), static_cast<size_t>(data->numel())};
}

std::vector<Layer> parameter_layers(std::span<train::Parameter> params, const std::vector<PrunableWeight>& weights) {
  std::vector<Layer> layers;
  for (const PrunableWeight& w : weights) {
    for (train::Parameter& p : params) {
      if (p.name != w.value) continue;
      if (p.value.numel() % 9 != 0) throw Error("pattern pruning: parameter '" + p.name + "' is not made of 3x3 kernels");
      layers.push_back({w.value, {p.value.data<float>(), static_cast<size_t>(p.value.numel())}});
    }
  }
  return layers;
}

}  // namespace

std::vector<PrunableWeight> pattern_prunable_weights(const Model& model, const PruneOptions& options) {
  std::vector<PrunableWeight> out;
  for (const PrunableWeight& w : prunable_weights(model, options)) {
    if (is_3x3_group1(model, w)) out.push_back(w);
  }
  return out;
}

uint16_t top_k_pattern(const float* kernel, int taps) {
  std::array<int, 9> pos;
  std::iota(pos.begin(), pos.end(), 0);
  std::stable_sort(pos.begin(), pos.end(), [&](int a, int b) { return std::fabs(kernel[a]) > std::fabs(kernel[b]); });
  uint16_t mask = 0;
  for (int j = 0; j < std::min(taps, 9); ++j) {
    if (kernel[pos[static_cast<size_t>(j)]] != 0.0f) mask = static_cast<uint16_t>(mask | (1u << pos[static_cast<size_t>(j)]));
  }
  return mask;
}

int best_pattern(const float* kernel, const std::vector<uint16_t>& library) {
  XNN_CHECK(!library.empty(), "best_pattern: empty library");
  int best = 0;
  double best_energy = -1;
  for (size_t p = 0; p < library.size(); ++p) {
    const double e = energy(kernel, library[p]);
    if (e > best_energy) best_energy = e, best = static_cast<int>(p);
  }
  return best;
}

std::vector<uint16_t> learn_pattern_library(const std::vector<std::span<const float>>& layers,
                                            const PatternOptions& options) {
  check_options(options);
  std::map<uint16_t, int64_t> counts;
  for (const std::span<const float>& l : layers) {
    for (size_t i = 0; i + 9 <= l.size(); i += 9) {
      const uint16_t m = top_k_pattern(l.data() + i, options.taps);
      // Kernels with fewer nonzeros than taps (already pruned) say nothing about the layout.
      if (std::popcount(static_cast<unsigned>(m)) == options.taps) ++counts[m];
    }
  }
  std::vector<std::pair<int64_t, uint16_t>> ranked;
  for (const auto& [m, c] : counts) ranked.push_back({c, m});
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<uint16_t> library;
  for (size_t i = 0; i < ranked.size() && library.size() < static_cast<size_t>(options.library_size); ++i) {
    library.push_back(ranked[i].second);
  }
  if (library.empty()) {
    // No kernel with `taps` nonzeros: the first `taps` positions around the centre keep something.
    uint16_t m = 0x010;
    for (int t : {1, 3, 5, 7, 0, 2, 6, 8}) {
      if (std::popcount(static_cast<unsigned>(m)) >= options.taps) break;
      m = static_cast<uint16_t>(m | (1u << t));
    }
    library.push_back(m);
  }
  return library;
}

double connectivity_for_sparsity(double sparsity, int taps) {
  const double floor = 1.0 - static_cast<double>(taps) / 9.0;
  if (!(sparsity < 1.0) || sparsity < floor - 1e-12) {
    throw Error("pattern pruning: target sparsity " + std::to_string(sparsity) + " is not reachable with " +
                std::to_string(taps) + "-of-9 patterns: expected a value in [" + std::to_string(floor) +
                ", 1) (the patterns alone give " + std::to_string(floor) + "; connectivity pruning adds the rest)");
  }
  return std::max(0.0, 1.0 - 9.0 * (1.0 - sparsity) / static_cast<double>(taps));
}

PatternPruneResult pattern_prune(Model& model, const std::vector<PrunableWeight>& weights, const PatternOptions& options,
                                 double connectivity, std::vector<uint16_t> library) {
  std::vector<Layer> layers;
  for (const PrunableWeight& w : weights) {
    const std::span<float> d = writable(model, w.value);
    if (d.size() % 9 != 0) throw Error("pattern pruning: weight '" + w.value + "' is not made of 3x3 kernels");
    layers.push_back({w.value, d});
  }
  return prune_layers(layers, options, connectivity, std::move(library));
}

PatternPruneResult pattern_prune(std::span<train::Parameter> params, const std::vector<PrunableWeight>& weights,
                                 const PatternOptions& options, double connectivity, std::vector<uint16_t> library) {
  return prune_layers(parameter_layers(params, weights), options, connectivity, std::move(library));
}

GradualPatternPruner::GradualPatternPruner(std::vector<PrunableWeight> weights, PatternOptions options,
                                           GradualSchedule schedule)
    : weights_(std::move(weights)), options_(options), schedule_(schedule) {
  check_options(options_);
  const auto in_range = [](double s) { return s >= 0.0 && s < 1.0; };
  if (!in_range(schedule_.initial_sparsity) || !in_range(schedule_.final_sparsity)) {
    throw Error("gradual pattern pruning: connectivity shares must lie in [0, 1)");
  }
  if (!(schedule_.end_fraction > 0 && schedule_.end_fraction <= 1) || schedule_.begin_step < 0 || schedule_.every < 0) {
    throw Error("gradual pattern pruning: expected 0 < end_fraction <= 1, begin_step >= 0, every >= 0");
  }
}

void GradualPatternPruner::on_step(int64_t step, int64_t total_steps, std::span<train::Parameter> params) {
  if (end_ < 0) {
    end_ = schedule_.end_step > 0
               ? schedule_.end_step
               : std::max(schedule_.begin_step,
                          static_cast<int64_t>(std::floor(schedule_.end_fraction * static_cast<double>(total_steps))));
    every_ = schedule_.every > 0 ? schedule_.every : std::max<int64_t>(1, (end_ - schedule_.begin_step) / 10);
  }
  const bool update = result_.masks.empty() ||
                      (step >= schedule_.begin_step && step <= end_ &&
                       ((step - schedule_.begin_step) % every_ == 0 || step == end_));
  if (update) {
    const double c = zhu_gupta_sparsity(schedule_.initial_sparsity, schedule_.final_sparsity, step,
                                        schedule_.begin_step, end_);
    if (c != current_) {
      // The library is learned once, from the dense weights; later updates reuse it, and since
      // masked weights are zero, projected kernels keep their pattern and removed ones rank first.
      result_ = pattern_prune(params, weights_, options_, c, result_.library);
      current_ = c;
      ++updates_;
    }
  }
  apply_masks(params, result_.masks);
}

}  // namespace xnn::prune
