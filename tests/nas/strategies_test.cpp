// Strategies on small functions with known optima: each finds near-optimal points within a
// budget, two runs with the same seed are identical, TPE beats random on a smooth function.
// Everything is deterministic (fixed seeds); nothing is timed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "engine/core/error.h"
#include "nas/bench/bench_functions.h"
#include "nas/search/aging_evolution.h"
#include "nas/search/nsga2.h"
#include "nas/search/random_search.h"
#include "nas/search/tpe.h"

namespace xnn::nas {
namespace {

const std::vector<Direction> kMin = {Direction::kMinimize};

// Runs ask/tell for `budget` trials; returns the trials in order.
std::vector<Trial> run(Strategy& s, const std::function<double(const TrialParams&)>& f, int budget) {
  std::vector<Trial> out;
  for (int i = 0; i < budget; ++i) {
    Trial t;
    t.number = i;
    t.params = s.ask(i);
    t.state = TrialState::kComplete;
    t.values = {f(t.params)};
    s.tell(t);
    out.push_back(t);
  }
  return out;
}

double best_of(const std::vector<Trial>& ts) {
  double b = INFINITY;
  for (const Trial& t : ts) b = std::min(b, t.values[0]);
  return b;
}

std::unique_ptr<Strategy> make(const std::string& name, const SearchSpace& space, uint64_t seed) {
  if (name == "random") return std::make_unique<RandomSearch>(space, kMin, seed);
  if (name == "evolution") return std::make_unique<AgingEvolution>(space, kMin, seed);
  if (name == "nsga2") return std::make_unique<Nsga2>(space, kMin, seed);
  return std::make_unique<Tpe>(space, kMin, seed);
}

double run_best(const std::string& strategy, const std::string& function, uint64_t seed, int budget) {
  auto f = bench::make_bench_function(function);
  auto s = make(strategy, f.space, seed);
  return best_of(run(*s, f.evaluate, budget));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

TEST(Strategies, SameSeedGivesTheSameRunAndAnotherSeedAnother) {
  auto f = bench::make_bench_function("branin_mixed");
  for (const std::string name : {"random", "evolution", "tpe", "nsga2"}) {
    auto a = make(name, f.space, 11), b = make(name, f.space, 11), c = make(name, f.space, 12);
    auto ra = run(*a, f.evaluate, 60), rb = run(*b, f.evaluate, 60), rc = run(*c, f.evaluate, 60);
    for (size_t i = 0; i < ra.size(); ++i) {
      ASSERT_EQ(ra[i].params, rb[i].params) << name << " trial " << i;
      ASSERT_EQ(ra[i].values, rb[i].values) << name << " trial " << i;
    }
    EXPECT_NE(ra.back().params, rc.back().params) << name;
  }
}

TEST(Strategies, EachFindsNearOptimalPointsWithinABudget) {
  // Median over 5 seeds of the best value, against the known optimum.
  struct Case {
    std::string strategy, function;
    int budget;
    double max_regret;
  };
  const std::vector<Case> cases = {
      {"random", "branin", 200, 1.5},      {"evolution", "branin", 200, 0.15},
      {"tpe", "branin", 100, 0.1},         {"nsga2", "branin", 200, 0.5},
      {"tpe", "hartmann6", 100, 0.4},      {"evolution", "nas_tabular", 200, 0.02},
      {"tpe", "nas_tabular", 100, 0.03},   {"evolution", "branin_mixed", 200, 1.0},
      {"tpe", "branin_mixed", 150, 1.5},
  };
  for (const Case& c : cases) {
    std::vector<double> regrets;
    double opt = bench::make_bench_function(c.function).optimum;
    for (uint64_t seed = 0; seed < 5; ++seed) regrets.push_back(run_best(c.strategy, c.function, seed, c.budget) - opt);
    EXPECT_GE(median(regrets), -1e-9) << c.strategy << " on " << c.function;
    EXPECT_LT(median(regrets), c.max_regret) << c.strategy << " on " << c.function;
  }
}

TEST(Strategies, TpeBeatsRandomOnASmoothFunction) {
  // Hartmann-6 at 60 trials: every one of 5 seeds' TPE run ends below the median random run.
  std::vector<double> tpe, random;
  for (uint64_t seed = 0; seed < 5; ++seed) {
    tpe.push_back(run_best("tpe", "hartmann6", seed, 60));
    random.push_back(run_best("random", "hartmann6", seed, 60));
  }
  EXPECT_LT(median(tpe), median(random) - 0.5);
  EXPECT_LT(*std::max_element(tpe.begin(), tpe.end()), median(random));
}

TEST(Strategies, TpeStartsRandomThenFollowsTheGoodRegion) {
  SearchSpace space;
  space.add_float("x", -10, 10);
  Tpe tpe(space, kMin, 3);
  RandomSearch random(space, kMin, 3);
  // The first n_startup_trials asks are exactly random search's.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(tpe.ask(i), random.ask(i));
  auto f = [](const TrialParams& p) { return std::abs(std::get<double>(p.at("x")) - 4); };
  auto near = [](const std::vector<Trial>& ts) {  // of the last 20 asks, within 2 of the optimum
    int n = 0;
    for (size_t i = 20; i < ts.size(); ++i) n += std::abs(std::get<double>(ts[i].params.at("x")) - 4) < 2;
    return n;
  };
  int tpe_near = near(run(tpe, f, 40)), random_near = near(run(random, f, 40));
  EXPECT_GE(tpe_near, 8);  // uniform draws land there 20% of the time
  EXPECT_LT(random_near, tpe_near);
}

TEST(Strategies, TpeSplitsFeasibleByValueThenPrunedThenInfeasible) {
  SearchSpace space;
  space.add_float("x", 0, 1);
  Tpe tpe(space, kMin, 0);
  auto told = [&](int64_t n, TrialState st, std::vector<double> v, std::vector<double> cons = {},
                  std::map<int64_t, double> inter = {}) {
    Trial t;
    t.number = n;
    t.state = st;
    t.params = {{"x", 0.5}};
    t.values = std::move(v);
    t.constraints = std::move(cons);
    t.intermediate_values = std::move(inter);
    tpe.tell(t);
  };
  // 20 complete feasible trials with value = number; one infeasible with the best value.
  for (int64_t n = 0; n < 20; ++n) told(n, TrialState::kComplete, {static_cast<double>(20 - n)});
  told(20, TrialState::kComplete, {-100.0}, {0.5});
  told(21, TrialState::kPruned, {}, {}, {{3, 0.0}});
  auto [below, above] = tpe.split();
  // gamma(22) = ceil(2.2) = 3: the three best feasible values (numbers 17, 18, 19).
  ASSERT_EQ(below.size(), 3u);
  EXPECT_EQ(below[0].number, 17);
  EXPECT_EQ(below[2].number, 19);
  EXPECT_EQ(above.size(), 19u);
  // The infeasible trial never ranks below a feasible one, however good its value.
  for (const Trial& t : below) EXPECT_NE(t.number, 20);
  Tpe mo(space, {Direction::kMinimize, Direction::kMaximize}, 0);  // multi-objective defaults
  EXPECT_NE(mo.config_json().find("\"multivariate\":false"), std::string::npos);
  EXPECT_NE(tpe.config_json().find("\"multivariate\":true"), std::string::npos);
}

TEST(Strategies, EvolutionMutatesExactlyOneParameterAndAgesOutTheOldest) {
  auto f = bench::make_bench_function("branin_mixed");
  AgingEvolutionOptions o;
  o.population_size = 5;
  o.sample_size = 2;
  AgingEvolution evo(f.space, kMin, 9, o);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    TrialParams parent = f.space.sample(rng);
    TrialParams child = evo.mutate(parent, rng);
    int changed = 0;
    for (const auto& [k, v] : parent) changed += child.at(k) != v;
    ASSERT_EQ(changed, 1);
    ASSERT_TRUE(f.space.contains(child));
  }
  auto trials = run(evo, f.evaluate, 12);
  ASSERT_EQ(evo.population().size(), 5u);
  EXPECT_EQ(evo.population().front().number, 7);  // the 5 most recent
  // Past the random phase every ask is one mutation away from a population member.
  TrialParams next = evo.ask(12);
  bool one_away = false;
  for (const Trial& t : evo.population()) {
    int d = 0;
    for (const auto& [k, v] : t.params) d += next.at(k) != v;
    one_away = one_away || d == 1;
  }
  EXPECT_TRUE(one_away);
}

TEST(Strategies, DiscreteSpacesDoNotSpendTrialsOnRepeats) {
  SearchSpace space;  // 16 configurations
  space.add_categorical("a", {std::string("p"), std::string("q"), std::string("r"), std::string("s")});
  space.add_int("b", 1, 4);
  auto f = [](const TrialParams& p) { return static_cast<double>(std::get<int64_t>(p.at("b"))); };
  TpeOptions to;
  to.n_startup_trials = 0;
  AgingEvolutionOptions eo;
  eo.population_size = 2;
  eo.sample_size = 1;
  for (int variant = 0; variant < 3; ++variant) {
    std::unique_ptr<Strategy> s;
    if (variant == 0) s = std::make_unique<Tpe>(space, kMin, 1, to);
    if (variant == 1) s = std::make_unique<AgingEvolution>(space, kMin, 1, eo);
    if (variant == 2) {
      to.skip_duplicates = false;  // Optuna's behaviour: repeats happen
      s = std::make_unique<Tpe>(space, kMin, 1, to);
    }
    auto trials = run(*s, f, 12);
    std::set<TrialParams> seen;
    int repeats = 0;
    for (size_t i = 0; i < trials.size(); ++i) {
      bool repeat = !seen.insert(trials[i].params).second;
      if (i >= 2) repeats += repeat;  // the evolution's first two asks are random
    }
    if (variant < 2) EXPECT_EQ(repeats, 0) << variant;
    else EXPECT_GT(repeats, 0);
  }
}

// With a canonicalizer (here: "b" only matters when "a" is "on", like a NAS block past its
// stage's depth), a repeat is judged on the canonical form: 40 distinct configurations, and no
// ask after the evolution's random start repeats one (a parent always has an untold neighbour
// here: 8 of them with "a" off, 11 with it on); without the canonicalizer the evolution spends
// asks on mutations of the inactive "b".
TEST(Strategies, RepeatsAreJudgedOnTheCanonicalForm) {
  SearchSpace plain;
  plain.add_categorical("a", {std::string("off"), std::string("on")});
  plain.add_int("b", 1, 4);
  plain.add_int("c", 1, 8);
  SearchSpace space = plain;
  space.set_canonicalizer([](const TrialParams& p) {
    TrialParams c = p;
    if (std::get<std::string>(p.at("a")) == "off") c["b"] = int64_t{1};
    return c;
  });
  const TrialParams off_2 = {{"a", std::string("off")}, {"b", int64_t{2}}, {"c", int64_t{3}}};
  const TrialParams off_1 = {{"a", std::string("off")}, {"b", int64_t{1}}, {"c", int64_t{3}}};
  EXPECT_EQ(space.canonical_key(off_2), space.canonical_key(off_1));
  EXPECT_NE(plain.canonical_key(off_2), plain.canonical_key(off_1));
  auto f = [](const TrialParams& p) {
    return static_cast<double>(std::get<int64_t>(p.at("b")) + std::get<int64_t>(p.at("c")));
  };
  TpeOptions to;
  to.n_startup_trials = 0;
  AgingEvolutionOptions eo;
  eo.population_size = 2;
  eo.sample_size = 1;
  int plain_repeats = 0;
  for (int variant = 0; variant < 3; ++variant) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      std::unique_ptr<Strategy> s;
      if (variant == 0) s = std::make_unique<Tpe>(space, kMin, seed, to);
      if (variant == 1) s = std::make_unique<AgingEvolution>(space, kMin, seed, eo);
      if (variant == 2) s = std::make_unique<AgingEvolution>(plain, kMin, seed, eo);
      const auto trials = run(*s, f, 10);
      std::set<std::vector<double>> seen;
      int repeats = 0;
      for (size_t i = 0; i < trials.size(); ++i) {
        const bool repeat = !seen.insert(space.canonical_key(trials[i].params)).second;
        if (variant == 0 || i >= 2) repeats += repeat;  // the evolution's first two asks are random
      }
      if (variant < 2) EXPECT_EQ(repeats, 0) << variant << " seed " << seed;
      else plain_repeats += repeats;
    }
  }
  EXPECT_GT(plain_repeats, 0);
}

TEST(Strategies, ConstraintsSteerTheSearchToFeasiblePoints) {
  // Minimise x, subject to x >= 3 (constraint 3 - x <= 0): the best feasible value is 3.
  SearchSpace space;
  space.add_float("x", 0, 10);
  for (const std::string name : {"evolution", "tpe", "nsga2"}) {
    auto s = make(name, space, 1);
    double best_feasible = INFINITY;
    for (int i = 0; i < 120; ++i) {
      Trial t;
      t.number = i;
      t.params = s->ask(i);
      double x = std::get<double>(t.params.at("x"));
      t.state = TrialState::kComplete;
      t.values = {x};
      t.constraints = {3 - x};
      s->tell(t);
      if (x >= 3) best_feasible = std::min(best_feasible, x);
    }
    EXPECT_LT(best_feasible, 3.3) << name;
  }
}

TEST(Strategies, RejectBadTellsAndSettings) {
  SearchSpace space;
  space.add_float("x", 0, 1);
  Tpe tpe(space, kMin, 0);
  Trial t;
  t.state = TrialState::kComplete;
  t.params = {{"x", 0.5}};
  t.values = {1.0, 2.0};
  EXPECT_THROW(tpe.tell(t), Error);  // two values for one objective
  t.values = {NAN};
  EXPECT_THROW(tpe.tell(t), Error);
  t.values = {1.0};
  t.params = {{"x", 2.0}};
  EXPECT_THROW(tpe.tell(t), Error);  // outside the space
  t.state = TrialState::kRunning;
  EXPECT_THROW(tpe.tell(t), Error);
  EXPECT_THROW(Tpe(SearchSpace(), kMin, 0), Error);
  EXPECT_THROW(Tpe(space, {}, 0), Error);
  AgingEvolutionOptions o;
  o.sample_size = 30;
  EXPECT_THROW(AgingEvolution(space, kMin, 0, o), Error);
}

TEST(TruncatedNormal, MassAndSamplesAreRight) {
  EXPECT_NEAR(std::exp(log_gauss_mass(-1, 1)), 0.6826894921370859, 1e-12);
  EXPECT_NEAR(std::exp(log_gauss_mass(5, 6)), 2.8566567e-7, 1e-12);
  EXPECT_NEAR(std::exp(log_gauss_mass(-6, -5)), 2.8566567e-7, 1e-12);
  EXPECT_NEAR(log_gauss_mass(-INFINITY, INFINITY), 0.0, 1e-15);
  std::mt19937_64 rng(0);
  double sum = 0;
  for (int i = 0; i < 20000; ++i) {
    double z = sample_truncated_standard_normal(0, INFINITY, rng);
    ASSERT_GE(z, 0);
    sum += z;
    double w = sample_truncated_standard_normal(4, 4.5, rng);  // a far tail stays in range
    ASSERT_GE(w, 4);
    ASSERT_LE(w, 4.5);
  }
  EXPECT_NEAR(sum / 20000, std::sqrt(2 / M_PI), 0.02);
}

}  // namespace
}  // namespace xnn::nas
