#include "nas/search/aging_evolution.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/core/error.h"
#include "harness/util/json.h"
#include "nas/search/nsga2.h"

namespace xnn::nas {

namespace {

constexpr int64_t kSmallIntRange = 16;  // up to this many values an int mutates like a categorical

// Number of distinct values of parameter `p` (capped: only "one" vs "more" and "small" matter).
int64_t value_count(const Param& p) {
  if (const auto* f = std::get_if<FloatDistribution>(&p.distribution)) return f->low == f->high ? 1 : kSmallIntRange + 1;
  if (const auto* i = std::get_if<IntDistribution>(&p.distribution)) return (i->high - i->low) / i->step + 1;
  return static_cast<int64_t>(std::get<CategoricalDistribution>(p.distribution).choices.size());
}

}  // namespace

AgingEvolution::AgingEvolution(SearchSpace space, std::vector<Direction> directions, uint64_t seed,
                               AgingEvolutionOptions options)
    : Strategy(std::move(space), std::move(directions), seed), options_(options) {
  XNN_CHECK(options_.population_size >= 1, "evolution: population_size must be >= 1");
  XNN_CHECK(options_.sample_size >= 1 && options_.sample_size <= options_.population_size,
            "evolution: sample_size must be in [1, population_size]");
  XNN_CHECK(options_.sigma > 0, "evolution: sigma must be > 0");
}

std::string AgingEvolution::config_json() const {
  return json::Writer()
      .begin_object()
      .field("population_size", options_.population_size)
      .field("sample_size", options_.sample_size)
      .field("sigma", options_.sigma)
      .field("skip_duplicates", options_.skip_duplicates)
      .end_object()
      .str();
}

void AgingEvolution::tell(const Trial& trial) {
  check_told(trial);
  if (trial.state == TrialState::kPruned) told_.insert(space_.canonical_key(trial.params));
  if (trial.state != TrialState::kComplete) return;  // failed trials may be retried (a crash)
  told_.insert(space_.canonical_key(trial.params));
  population_.push_back(trial);
  if (population_.size() > static_cast<size_t>(options_.population_size)) population_.pop_front();
}

TrialParams AgingEvolution::mutate(const TrialParams& parent, std::mt19937_64& rng) const {
  std::vector<size_t> mutable_params;
  for (size_t i = 0; i < space_.size(); ++i) {
    if (value_count(space_.params()[i]) > 1) mutable_params.push_back(i);
  }
  XNN_CHECK(!mutable_params.empty(), "evolution: no parameter has more than one value; nothing to mutate");
  std::vector<double> x = space_.encode(parent);
  size_t i = mutable_params[std::uniform_int_distribution<size_t>(0, mutable_params.size() - 1)(rng)];
  const Param& p = space_.params()[i];
  int64_t n = value_count(p);
  const double old = x[i];
  if (std::holds_alternative<CategoricalDistribution>(p.distribution) || n <= kSmallIntRange) {
    // A different value, uniformly: draw among the n - 1 others.
    int64_t step = 1, low = 0;
    if (const auto* d = std::get_if<IntDistribution>(&p.distribution)) step = d->step, low = d->low;
    auto cur = static_cast<int64_t>(std::llround((old - static_cast<double>(low)) / static_cast<double>(step)));
    int64_t k = std::uniform_int_distribution<int64_t>(0, n - 2)(rng);
    if (k >= cur) ++k;
    x[i] = static_cast<double>(low + k * step);
  } else {
    // A Gaussian step in (log) space, clipped, repeated until the value changes.
    bool log = false;
    double lo = 0, hi = 0;
    if (const auto* f = std::get_if<FloatDistribution>(&p.distribution)) log = f->log, lo = f->low, hi = f->high;
    else {
      const auto& d = std::get<IntDistribution>(p.distribution);
      log = d.log, lo = static_cast<double>(d.low), hi = static_cast<double>(d.high);
    }
    auto to = [&](double v) { return log ? std::log(v) : v; };
    auto from = [&](double v) { return log ? std::exp(v) : v; };
    std::normal_distribution<double> step(0.0, options_.sigma * (to(hi) - to(lo)));
    for (int tries = 0; tries < 64 && x[i] == old; ++tries) {
      double v = std::clamp(from(std::clamp(to(old) + step(rng), to(lo), to(hi))), lo, hi);
      x[i] = param_value_number(space_.from_internal(i, v));
    }
    if (x[i] == old) x[i] = space_.sample_internal(i, rng);  // a tiny range: redraw
  }
  return space_.decode(x);
}

TrialParams AgingEvolution::ask(int64_t draw) {
  auto rng = derive_rng(seed_, static_cast<uint64_t>(draw));
  if (population_.size() < static_cast<size_t>(options_.population_size)) return space_.sample(rng);
  // Tournament: sample_size distinct members drawn uniformly.
  std::vector<size_t> idx(population_.size());
  std::iota(idx.begin(), idx.end(), 0);
  for (int k = 0; k < options_.sample_size; ++k) {
    size_t j = std::uniform_int_distribution<size_t>(static_cast<size_t>(k), idx.size() - 1)(rng);
    std::swap(idx[static_cast<size_t>(k)], idx[j]);
  }
  idx.resize(static_cast<size_t>(options_.sample_size));
  size_t parent = idx[0];
  if (directions_.size() == 1) {
    for (size_t j : idx) {
      if (better_single(population_[j], population_[parent], directions_[0])) parent = j;
    }
  } else {
    std::vector<Trial> sample;
    for (size_t j : idx) sample.push_back(population_[j]);
    auto front = constrained_non_dominated_sort(sample, directions_).front();
    parent = idx[front[std::uniform_int_distribution<size_t>(0, front.size() - 1)(rng)]];
  }
  TrialParams child = mutate(population_[parent].params, rng);
  for (int tries = 0; options_.skip_duplicates && tries < 32 && told_.count(space_.canonical_key(child)); ++tries)
    child = mutate(population_[parent].params, rng);
  return child;
}

}  // namespace xnn::nas
