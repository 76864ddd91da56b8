// The ask/tell interface every black-box search strategy implements, the trial record they
// learn from, objective directions, constraint feasibility, and the pruner interface.
//
// A strategy is a deterministic function of (seed, told history, draw index): `ask(draw)`
// draws from a generator derived from the seed and the draw index only (derive_rng), and
// `tell` feeds finished trials in order. Re-playing the same history into a fresh strategy
// therefore reproduces the same next ask; that is how a Study resumes (study.h).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nas/search/search_space.h"

namespace xnn::nas {

enum class Direction { kMinimize, kMaximize };
enum class TrialState { kRunning, kComplete, kPruned, kFail };

const char* direction_name(Direction d);  // "minimize" / "maximize"
Direction parse_direction(const std::string& text);  // an Error names the bad text
const char* trial_state_name(TrialState s);   // "RUNNING", "COMPLETE", "PRUNED", "FAIL"
TrialState parse_trial_state(const std::string& text);

// What a strategy or pruner knows of a trial.
struct Trial {
  int64_t number = 0;
  TrialState state = TrialState::kRunning;
  TrialParams params;
  std::vector<double> values;       // one per objective, for COMPLETE trials
  std::vector<double> constraints;  // optional; each <= 0 means satisfied
  std::map<int64_t, double> intermediate_values;  // step -> value (pruners)
};

// Feasible when every constraint is <= 0 (no constraints: feasible).
bool is_feasible(const Trial& t);
// Sum of the positive parts of the constraints (0 for a feasible trial).
double constraint_violation(const Trial& t);
// Value as "lower is better" for the given direction.
inline double minimised(double v, Direction d) { return d == Direction::kMaximize ? -v : v; }

// Single-objective order with Deb's constraint rules: feasible before infeasible, feasible by
// value, infeasible by violation. True when `a` ranks strictly before `b`.
bool better_single(const Trial& a, const Trial& b, Direction d);

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Parameters for the next trial. `draw` is the trial's position among the study's asks
  // (Study passes it); the randomness of this ask derives from (seed, draw) alone.
  virtual TrialParams ask(int64_t draw) = 0;
  // A finished trial (COMPLETE with values, PRUNED or FAIL), in the order trials finished.
  virtual void tell(const Trial& trial) = 0;

  virtual std::string name() const = 0;         // "random", "evolution", "tpe", "nsga2"
  virtual std::string config_json() const = 0;  // its settings, stored with the study

  const SearchSpace& space() const { return space_; }
  const std::vector<Direction>& directions() const { return directions_; }
  uint64_t seed() const { return seed_; }

 protected:
  // Throws when the space is empty or there is no direction.
  Strategy(SearchSpace space, std::vector<Direction> directions, uint64_t seed);
  // Checks a told trial against the space and the number of objectives.
  void check_told(const Trial& trial) const;

  SearchSpace space_;
  std::vector<Direction> directions_;
  uint64_t seed_;
};

// Early stopping of weak trials. The study calls should_prune after each intermediate report
// of the running trial (whose intermediate_values include the new one) and tells every
// finished trial, in order, as it does the strategy.
class Pruner {
 public:
  virtual ~Pruner() = default;
  virtual bool should_prune(const Trial& running, int64_t step, double intermediate) = 0;
  virtual void tell(const Trial& finished) = 0;
  virtual std::string name() const = 0;
  virtual std::string config_json() const = 0;
};

}  // namespace xnn::nas
