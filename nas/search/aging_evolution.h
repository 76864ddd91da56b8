// Regularised (aging) evolution, Real et al. 2019, "Regularized Evolution for Image Classifier
// Architecture Search": the population is the `population_size` most recently completed trials
// (the oldest leaves when a new one arrives, whatever its fitness); until it is full, asks are
// random; then each ask draws `sample_size` members at random (tournament), takes the best as
// parent and mutates exactly one of its parameters.
//
// Fitness: single objective by value with Deb's constraint rules (feasible first, then least
// violation); several objectives: the parent is drawn among the tournament's non-dominated
// members (constrained domination, see nsga2.h). Failed and pruned trials never join.
//
// Mutation of one parameter (chosen uniformly among those with more than one value): a
// categorical or an int with at most 16 values moves to a different value uniformly; a float or
// a wider int moves by a Gaussian step of `sigma` x its range (in log space when log), clipped,
// and always to a different value.
#pragma once
#include <deque>
#include <set>

#include "nas/search/strategy.h"

namespace xnn::nas {

// Defaults for budgets of tens to hundreds of trials (a population of 10, tournaments of 5
// gave the best medians on nas/bench at 20-100 trials); Real et al. used 100 / 25 for 20k.
struct AgingEvolutionOptions {
  int population_size = 10;
  int sample_size = 5;
  double sigma = 0.15;
  // Re-mutate (up to 32 times) a child whose parameters equal a told COMPLETE or PRUNED
  // trial's (compared in the space's canonical form: a mutation of an inactive NAS decision is
  // a repeat), so discrete spaces do not spend trials on repeats. A parent whose every
  // one-parameter neighbour was told yields a repeat.
  bool skip_duplicates = true;
};

class AgingEvolution : public Strategy {
 public:
  AgingEvolution(SearchSpace space, std::vector<Direction> directions, uint64_t seed,
                 AgingEvolutionOptions options = {});
  TrialParams ask(int64_t draw) override;
  void tell(const Trial& trial) override;
  std::string name() const override { return "evolution"; }
  std::string config_json() const override;

  // The mutation on its own (one parameter changes), for reuse (one-shot NAS subnet search).
  TrialParams mutate(const TrialParams& parent, std::mt19937_64& rng) const;
  const std::deque<Trial>& population() const { return population_; }

 private:
  AgingEvolutionOptions options_;
  std::deque<Trial> population_;
  std::set<std::vector<double>> told_;  // canonical keys of the told COMPLETE and PRUNED trials
};

}  // namespace xnn::nas
