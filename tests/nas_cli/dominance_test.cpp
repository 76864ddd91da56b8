// Whether the front dominates a baseline: from recorded figures, and from back-to-back rounds
// that alternate which model goes first and judge by the median ratio (a stand-in latency
// function that drifts like a shared machine's phases).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "engine/core/error.h"
#include "nas/dominance.h"

using namespace xnn;
using namespace xnn::nas;

namespace {

CandidateResult point(const std::string& name, double top1, double latency_ms) {
  CandidateResult c;
  c.name = name;
  c.top1 = top1;
  c.latency_ms = latency_ms;
  c.xnn_path = "/models/" + name + ".xnn";
  return c;
}

}  // namespace

TEST(Dominance, NeedsAtLeastTheAccuracyAtNoMoreLatencyOneStrictly) {
  const CandidateResult base = point("base", 0.90, 1.0);
  EXPECT_TRUE(dominates(point("a", 0.91, 1.0), base));
  EXPECT_TRUE(dominates(point("b", 0.90, 0.9), base));
  EXPECT_FALSE(dominates(point("c", 0.90, 1.0), base));  // equal on both
  EXPECT_FALSE(dominates(point("d", 0.95, 1.01), base));
  EXPECT_FALSE(dominates(point("e", 0.89, 0.5), base));
  const std::vector<CandidateResult> front = {point("a", 0.91, 1.0), point("e", 0.89, 0.5)};
  const std::vector<CandidateResult> baselines = {base, point("slow", 0.80, 0.6), point("best", 0.99, 0.1)};
  EXPECT_EQ(dominated_baselines(front, baselines), (std::vector<std::string>{"base", "slow"}));
}

TEST(Dominance, BackToBackRoundsJudgeByTheMedianRatioAndAlternateTheOrder) {
  // The machine slows by 30% after every call: a model measured second always looks slower.
  std::vector<std::string> calls;
  double phase = 1.0;
  const std::map<std::string, double> cost = {{"/models/base.xnn", 1.0}, {"/models/fast.xnn", 0.95},
                                              {"/models/weak.xnn", 0.5}, {"/models/burst.xnn", 0.9}};
  int call = 0;
  const LatencyFn latency = [&](const std::string& path) {
    calls.push_back(path);
    ++call;
    // One burst: the 3rd measurement of burst.xnn is 5x slower.
    const double burst = (path == "/models/burst.xnn" && std::count(calls.begin(), calls.end(), path) == 3) ? 5.0 : 1.0;
    phase *= 1.3;
    return cost.at(path) * phase * burst;
  };
  const std::vector<CandidateResult> front = {point("fast", 0.92, 9.0), point("weak", 0.80, 0.1),
                                              point("burst", 0.91, 9.0)};
  const std::vector<CandidateResult> baselines = {point("base", 0.91, 1.0)};
  // As recorded, nothing dominates (front latencies 9 ms).
  EXPECT_TRUE(dominated_baselines(front, baselines).empty());

  const std::vector<DominanceCheck> checks = confirm_dominance(front, baselines, latency, 5);
  ASSERT_EQ(checks.size(), 2u);  // weak is less accurate: never measured
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "/models/weak.xnn"), 0);
  EXPECT_EQ(calls.size(), 20u);  // 2 candidates x 5 rounds x 2 models
  // Round 0 baseline first, round 1 candidate first.
  EXPECT_EQ(calls[0], "/models/base.xnn");
  EXPECT_EQ(calls[1], "/models/fast.xnn");
  EXPECT_EQ(calls[2], "/models/fast.xnn");
  EXPECT_EQ(calls[3], "/models/base.xnn");

  const DominanceCheck& fast = checks[0];
  EXPECT_EQ(fast.candidate, "fast");
  EXPECT_EQ(fast.baseline, "base");
  ASSERT_EQ(fast.ratios.size(), 5u);
  // Measured second, a model is 1.3x slower: ratios alternate 0.95*1.3 and 0.95/1.3.
  EXPECT_NEAR(fast.ratios[0], 0.95 * 1.3, 1e-9);
  EXPECT_NEAR(fast.ratios[1], 0.95 / 1.3, 1e-9);
  EXPECT_NEAR(fast.median_ratio, 0.95 * 1.3, 1e-9);  // 3 of 5 rounds had the baseline first
  EXPECT_FALSE(fast.dominates);

  // The burst round does not decide: burst is 0.9x in its other rounds.
  const DominanceCheck& burst = checks[1];
  EXPECT_EQ(burst.candidate, "burst");
  EXPECT_GT(*std::max_element(burst.ratios.begin(), burst.ratios.end()), 3.0);
  EXPECT_NEAR(burst.candidate_ms[0] / burst.baseline_ms[0], burst.ratios[0], 1e-12);

  EXPECT_THROW(confirm_dominance(front, baselines, latency, 0), Error);
}

TEST(Dominance, ADriftFreeMachineGivesTheTrueRatio) {
  const LatencyFn latency = [](const std::string& path) { return path == "/models/base.xnn" ? 2.0 : 1.6; };
  const std::vector<CandidateResult> front = {point("equal_acc", 0.90, 5.0), point("better", 0.93, 5.0)};
  const std::vector<CandidateResult> baselines = {point("base", 0.90, 1.0), point("top", 0.95, 1.0)};
  const std::vector<DominanceCheck> checks = confirm_dominance(front, baselines, latency, 3);
  ASSERT_EQ(checks.size(), 2u);  // nothing reaches "top"'s accuracy
  for (const DominanceCheck& c : checks) {
    EXPECT_DOUBLE_EQ(c.median_ratio, 0.8);
    EXPECT_TRUE(c.dominates) << c.candidate;  // equal accuracy, strictly faster; or both better
  }
  EXPECT_EQ(dominated_baselines(checks, baselines), (std::vector<std::string>{"base"}));
  // Equal accuracy at an equal time is not domination.
  const LatencyFn same = [](const std::string&) { return 1.0; };
  const std::vector<DominanceCheck> tie = confirm_dominance({point("twin", 0.90, 1.0)}, {point("base", 0.90, 1.0)}, same, 3);
  ASSERT_EQ(tie.size(), 1u);
  EXPECT_FALSE(tie[0].dominates);
}
