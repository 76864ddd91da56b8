// Multi-objective search: Pareto utilities (domination, the Pareto front, non-dominated
// sorting, crowding distance) and NSGA-II (Deb et al. 2002) behind the ask/tell interface.
//
// NSGA-II here: trials are grouped into generations of `population_size` completed trials in
// the order they were told. Until the first generation is complete asks are random. Then the
// parent population is the elite of (previous parents + the latest complete generation):
// fronts of the constrained non-dominated sort in order, the last front cut by crowding
// distance (largest first). A child: two binary tournaments (lower rank wins, then larger
// crowding distance) pick two parents, uniform crossover (each parameter from either parent
// with probability 1/2, like Optuna's UniformCrossover), then each parameter is redrawn
// uniformly with probability `mutation_prob` (default 1 / number of parameters).
// Constrained domination (Deb's rules): a feasible trial dominates an infeasible one; of two
// infeasible, the smaller total violation dominates; of two feasible, the usual domination.
#pragma once
#include <optional>

#include "nas/search/strategy.h"

namespace xnn::nas {

// a dominates b: no objective worse, at least one strictly better (by each direction).
bool dominates(const std::vector<double>& a, const std::vector<double>& b, const std::vector<Direction>& directions);
// Indices of the non-dominated points, in input order. Duplicate points are all kept.
std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& points,
                                 const std::vector<Direction>& directions);
// Fronts in order (front 0 = Pareto front), each a list of point indices in input order.
std::vector<std::vector<size_t>> non_dominated_sort(const std::vector<std::vector<double>>& points,
                                                    const std::vector<Direction>& directions);
// Crowding distance of each member of `front` (same order): per objective, sorted by value,
// the boundary members get infinity, inner ones add (next - previous) / (max - min).
std::vector<double> crowding_distance(const std::vector<std::vector<double>>& points, const std::vector<size_t>& front);

// The same for COMPLETE trials with constraints (constrained domination above).
bool constrained_dominates(const Trial& a, const Trial& b, const std::vector<Direction>& directions);
std::vector<std::vector<size_t>> constrained_non_dominated_sort(const std::vector<Trial>& trials,
                                                                const std::vector<Direction>& directions);
// The `count` best trials by (front, crowding distance descending); order: rank then crowding.
std::vector<size_t> select_elite(const std::vector<Trial>& trials, const std::vector<Direction>& directions,
                                 size_t count);

struct Nsga2Options {
  int population_size = 20;
  std::optional<double> mutation_prob;  // default 1 / number of parameters
  double crossover_prob = 0.9;          // else the child copies the first parent (then mutation)
};

class Nsga2 : public Strategy {
 public:
  Nsga2(SearchSpace space, std::vector<Direction> directions, uint64_t seed, Nsga2Options options = {});
  TrialParams ask(int64_t draw) override;
  void tell(const Trial& trial) override;
  std::string name() const override { return "nsga2"; }
  std::string config_json() const override;
  const std::vector<Trial>& parents() const { return parents_; }

 private:
  Nsga2Options options_;
  std::vector<Trial> parents_;   // elite population (empty until the first generation completes)
  std::vector<int64_t> parent_rank_;
  std::vector<double> parent_crowding_;
  std::vector<Trial> generation_;  // completed trials of the generation being filled
};

}  // namespace xnn::nas
