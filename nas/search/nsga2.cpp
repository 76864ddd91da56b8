#include "nas/search/nsga2.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/core/error.h"
#include "harness/util/json.h"

namespace xnn::nas {

bool dominates(const std::vector<double>& a, const std::vector<double>& b, const std::vector<Direction>& directions) {
  XNN_CHECK(a.size() == directions.size() && b.size() == directions.size(),
            "dominates: points and directions differ in length");
  bool strictly = false;
  for (size_t k = 0; k < directions.size(); ++k) {
    double x = minimised(a[k], directions[k]), y = minimised(b[k], directions[k]);
    if (x > y) return false;
    if (x < y) strictly = true;
  }
  return strictly;
}

namespace {

// Fast non-dominated sort (Deb et al.) over a domination predicate.
template <typename Dominates>
std::vector<std::vector<size_t>> sort_fronts(size_t n, Dominates dom) {
  std::vector<std::vector<size_t>> dominated(n);
  std::vector<int> count(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (dom(i, j)) {
        dominated[i].push_back(j);
        ++count[j];
      } else if (dom(j, i)) {
        dominated[j].push_back(i);
        ++count[i];
      }
    }
  }
  std::vector<std::vector<size_t>> fronts;
  std::vector<size_t> current;
  for (size_t i = 0; i < n; ++i) {
    if (count[i] == 0) current.push_back(i);
  }
  while (!current.empty()) {
    std::vector<size_t> next;
    for (size_t i : current) {
      for (size_t j : dominated[i]) {
        if (--count[j] == 0) next.push_back(j);
      }
    }
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(current));
    current = std::move(next);
  }
  return fronts;
}

}  // namespace

std::vector<std::vector<size_t>> non_dominated_sort(const std::vector<std::vector<double>>& points,
                                                    const std::vector<Direction>& directions) {
  return sort_fronts(points.size(), [&](size_t i, size_t j) { return dominates(points[i], points[j], directions); });
}

std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& points,
                                 const std::vector<Direction>& directions) {
  if (points.empty()) return {};
  return non_dominated_sort(points, directions).front();
}

std::vector<double> crowding_distance(const std::vector<std::vector<double>>& points, const std::vector<size_t>& front) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> dist(front.size(), 0.0);
  if (front.size() <= 2) return std::vector<double>(front.size(), inf);
  size_t m = points[front[0]].size();
  std::vector<size_t> order(front.size());
  for (size_t k = 0; k < m; ++k) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return points[front[a]][k] < points[front[b]][k]; });
    double lo = points[front[order.front()]][k], hi = points[front[order.back()]][k];
    dist[order.front()] = inf;
    dist[order.back()] = inf;
    if (hi == lo) continue;
    for (size_t r = 1; r + 1 < order.size(); ++r) {
      dist[order[r]] += (points[front[order[r + 1]]][k] - points[front[order[r - 1]]][k]) / (hi - lo);
    }
  }
  return dist;
}

bool constrained_dominates(const Trial& a, const Trial& b, const std::vector<Direction>& directions) {
  bool fa = is_feasible(a), fb = is_feasible(b);
  if (fa && !fb) return true;
  if (!fa && fb) return false;
  if (!fa) return constraint_violation(a) < constraint_violation(b);
  return dominates(a.values, b.values, directions);
}

std::vector<std::vector<size_t>> constrained_non_dominated_sort(const std::vector<Trial>& trials,
                                                                const std::vector<Direction>& directions) {
  return sort_fronts(trials.size(),
                     [&](size_t i, size_t j) { return constrained_dominates(trials[i], trials[j], directions); });
}

namespace {

// Rank and crowding distance of every trial.
void rank_and_crowd(const std::vector<Trial>& trials, const std::vector<Direction>& directions,
                    std::vector<int64_t>& rank, std::vector<double>& crowd) {
  rank.assign(trials.size(), 0);
  crowd.assign(trials.size(), 0.0);
  std::vector<std::vector<double>> points;
  for (const Trial& t : trials) points.push_back(t.values);
  auto fronts = constrained_non_dominated_sort(trials, directions);
  for (size_t f = 0; f < fronts.size(); ++f) {
    auto d = crowding_distance(points, fronts[f]);
    for (size_t i = 0; i < fronts[f].size(); ++i) {
      rank[fronts[f][i]] = static_cast<int64_t>(f);
      crowd[fronts[f][i]] = d[i];
    }
  }
}

}  // namespace

std::vector<size_t> select_elite(const std::vector<Trial>& trials, const std::vector<Direction>& directions,
                                 size_t count) {
  std::vector<int64_t> rank;
  std::vector<double> crowd;
  rank_and_crowd(trials, directions, rank, crowd);
  std::vector<size_t> order(trials.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rank[a] != rank[b]) return rank[a] < rank[b];
    return crowd[a] > crowd[b];
  });
  order.resize(std::min(count, order.size()));
  return order;
}

// ---------------------------------------------------------------- NSGA-II

Nsga2::Nsga2(SearchSpace space, std::vector<Direction> directions, uint64_t seed, Nsga2Options options)
    : Strategy(std::move(space), std::move(directions), seed), options_(options) {
  XNN_CHECK(options_.population_size >= 2, "nsga2: population_size must be >= 2");
  XNN_CHECK(!options_.mutation_prob || (*options_.mutation_prob >= 0 && *options_.mutation_prob <= 1),
            "nsga2: mutation_prob must be in [0, 1]");
  XNN_CHECK(options_.crossover_prob >= 0 && options_.crossover_prob <= 1, "nsga2: crossover_prob must be in [0, 1]");
}

std::string Nsga2::config_json() const {
  json::Writer w;
  w.begin_object().field("population_size", options_.population_size).key("mutation_prob");
  if (options_.mutation_prob) w.value(*options_.mutation_prob);
  else w.null();
  w.field("crossover_prob", options_.crossover_prob).end_object();
  return w.str();
}

void Nsga2::tell(const Trial& trial) {
  check_told(trial);
  if (trial.state != TrialState::kComplete) return;
  generation_.push_back(trial);
  if (generation_.size() < static_cast<size_t>(options_.population_size)) return;
  std::vector<Trial> pool = parents_;
  pool.insert(pool.end(), generation_.begin(), generation_.end());
  generation_.clear();
  std::vector<Trial> elite;
  for (size_t i : select_elite(pool, directions_, static_cast<size_t>(options_.population_size)))
    elite.push_back(pool[i]);
  parents_ = std::move(elite);
  rank_and_crowd(parents_, directions_, parent_rank_, parent_crowding_);
}

TrialParams Nsga2::ask(int64_t draw) {
  auto rng = derive_rng(seed_, static_cast<uint64_t>(draw));
  if (parents_.empty()) return space_.sample(rng);
  std::uniform_int_distribution<size_t> pick(0, parents_.size() - 1);
  auto tournament = [&] {
    size_t a = pick(rng), b = pick(rng);
    if (parent_rank_[a] != parent_rank_[b]) return parent_rank_[a] < parent_rank_[b] ? a : b;
    return parent_crowding_[a] >= parent_crowding_[b] ? a : b;
  };
  size_t p1 = tournament(), p2 = tournament();
  std::vector<double> x1 = space_.encode(parents_[p1].params), x2 = space_.encode(parents_[p2].params);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  std::vector<double> child = x1;
  if (u01(rng) < options_.crossover_prob) {
    for (size_t i = 0; i < child.size(); ++i) {
      if (u01(rng) < 0.5) child[i] = x2[i];
    }
  }
  double pm = options_.mutation_prob.value_or(1.0 / static_cast<double>(space_.size()));
  for (size_t i = 0; i < child.size(); ++i) {
    if (u01(rng) < pm) child[i] = space_.sample_internal(i, rng);
  }
  return space_.decode(child);
}

}  // namespace xnn::nas
