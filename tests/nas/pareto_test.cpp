// Non-dominated sorting, crowding distance and constrained domination on hand-made points,
// and NSGA-II on a two-objective problem.
#include <gtest/gtest.h>

#include <cmath>

#include "nas/search/nsga2.h"

namespace xnn::nas {
namespace {

const std::vector<Direction> kMinMin = {Direction::kMinimize, Direction::kMinimize};

TEST(Pareto, DominationFollowsTheDirections) {
  EXPECT_TRUE(dominates({1, 1}, {2, 2}, kMinMin));
  EXPECT_TRUE(dominates({1, 2}, {2, 2}, kMinMin));
  EXPECT_FALSE(dominates({2, 2}, {2, 2}, kMinMin));  // equal: neither
  EXPECT_FALSE(dominates({1, 3}, {2, 2}, kMinMin));
  // Maximise accuracy, minimise latency.
  const std::vector<Direction> acc_lat = {Direction::kMaximize, Direction::kMinimize};
  EXPECT_TRUE(dominates({0.9, 10}, {0.8, 12}, acc_lat));
  EXPECT_FALSE(dominates({0.8, 10}, {0.9, 12}, acc_lat));
}

TEST(Pareto, NonDominatedSortOnHandMadePoints) {
  //   index: 0       1       2       3       4       5       6
  std::vector<std::vector<double>> pts = {{1, 5}, {2, 3}, {4, 1}, {3, 4}, {5, 5}, {2, 3}, {6, 6}};
  auto fronts = non_dominated_sort(pts, kMinMin);
  ASSERT_EQ(fronts.size(), 4u);
  EXPECT_EQ(fronts[0], (std::vector<size_t>{0, 1, 2, 5}));  // duplicates (1 and 5) share a front
  EXPECT_EQ(fronts[1], (std::vector<size_t>{3}));
  EXPECT_EQ(fronts[2], (std::vector<size_t>{4}));
  EXPECT_EQ(fronts[3], (std::vector<size_t>{6}));
  EXPECT_EQ(pareto_front(pts, kMinMin), fronts[0]);
  // Maximising the first objective instead changes the front.
  EXPECT_EQ(pareto_front(pts, {Direction::kMaximize, Direction::kMinimize}), (std::vector<size_t>{2, 4, 6}));
  EXPECT_TRUE(pareto_front({}, kMinMin).empty());
}

TEST(Pareto, CrowdingDistanceOnHandMadePoints) {
  // A front of 4 points on a line from (0, 6) to (6, 0).
  std::vector<std::vector<double>> pts = {{0, 6}, {1, 5}, {4, 2}, {6, 0}};
  auto d = crowding_distance(pts, {0, 1, 2, 3});
  EXPECT_TRUE(std::isinf(d[0]));
  EXPECT_TRUE(std::isinf(d[3]));
  // Point 1: neighbours 0 and 2 -> (4 - 0) / 6 on x, (6 - 2) / 6 on y.
  EXPECT_DOUBLE_EQ(d[1], 4.0 / 6 + 4.0 / 6);
  // Point 2: neighbours 1 and 3 -> (6 - 1) / 6 twice.
  EXPECT_DOUBLE_EQ(d[2], 5.0 / 6 + 5.0 / 6);
  auto two = crowding_distance(pts, {0, 1});
  EXPECT_TRUE(std::isinf(two[0]) && std::isinf(two[1]));
}

Trial make_trial(int64_t n, std::vector<double> values, std::vector<double> constraints = {}) {
  Trial t;
  t.number = n;
  t.state = TrialState::kComplete;
  t.values = std::move(values);
  t.constraints = std::move(constraints);
  return t;
}

TEST(Pareto, ConstrainedDominationFollowsDebsRules) {
  Trial feasible_bad = make_trial(0, {9, 9}, {-1});
  Trial infeasible_good = make_trial(1, {0, 0}, {2});
  Trial infeasible_less = make_trial(2, {5, 5}, {0.5, -3});
  EXPECT_TRUE(constrained_dominates(feasible_bad, infeasible_good, kMinMin));
  EXPECT_FALSE(constrained_dominates(infeasible_good, feasible_bad, kMinMin));
  EXPECT_TRUE(constrained_dominates(infeasible_less, infeasible_good, kMinMin));  // violation 0.5 < 2
  auto fronts = constrained_non_dominated_sort({feasible_bad, infeasible_good, infeasible_less}, kMinMin);
  ASSERT_EQ(fronts.size(), 3u);
  EXPECT_EQ(fronts[0], (std::vector<size_t>{0}));
  EXPECT_EQ(fronts[1], (std::vector<size_t>{2}));
  EXPECT_EQ(fronts[2], (std::vector<size_t>{1}));
  // Elite of 3 from a front of 4 drops the least crowded inner point.
  std::vector<Trial> ts = {make_trial(0, {0, 6}), make_trial(1, {1, 5}), make_trial(2, {4, 2}), make_trial(3, {6, 0}),
                           make_trial(4, {7, 7})};
  auto elite = select_elite(ts, kMinMin, 3);
  EXPECT_EQ(elite, (std::vector<size_t>{0, 3, 2}));
}

TEST(Nsga2, ApproachesTheParetoFrontOfATwoObjectiveProblem) {
  // f1 = x^2 + y^2, f2 = (x - 2)^2 + y^2: the Pareto set is y = 0, x in [0, 2].
  SearchSpace space;
  space.add_float("x", -4, 6).add_float("y", -5, 5);
  Nsga2Options o;
  o.population_size = 20;
  Nsga2 a(space, kMinMin, 4, o), b(space, kMinMin, 4, o);
  std::vector<std::vector<double>> points;
  for (int i = 0; i < 300; ++i) {
    Trial t;
    t.number = i;
    t.params = a.ask(i);
    ASSERT_EQ(t.params, b.ask(i));  // reproducible
    double x = std::get<double>(t.params.at("x")), y = std::get<double>(t.params.at("y"));
    t.state = TrialState::kComplete;
    t.values = {x * x + y * y, (x - 2) * (x - 2) + y * y};
    a.tell(t);
    b.tell(t);
  }
  ASSERT_EQ(a.parents().size(), 20u);
  int near = 0;
  for (const Trial& p : a.parents()) {
    double x = std::get<double>(p.params.at("x")), y = std::get<double>(p.params.at("y"));
    near += std::abs(y) < 0.3 && x > -0.3 && x < 2.3;
  }
  EXPECT_GE(near, 16);
}

}  // namespace
}  // namespace xnn::nas
