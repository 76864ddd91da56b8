// xnn-lab gate: the Mann-Whitney U test, median and CV (against scipy), the policy file, the
// per-metric decisions, Google Benchmark JSON parsing and run selectors across databases.
//
// Reference values: scipy 1.17.1,
//   scipy.stats.mannwhitneyu(x, y, alternative='two-sided', method='exact' | 'asymptotic',
//                            use_continuity=True)
// on the samples written out below (statistic = U of x, pvalue).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "harness/gate/gate.h"
#include "harness/gate/gbench.h"
#include "harness/gate/mann_whitney.h"
#include "harness/gate/policy.h"

namespace xnn::gate {
namespace {
namespace fs = std::filesystem;

// The deterministic overlapping samples the scipy reference values were computed on:
// x_i = 1 + 0.1 sin(1.3 i + 0.2) + 0.001 i,  y_i = shift + 0.1 sin(0.7 i + 1.1) + 0.0013 i.
std::vector<double> wave_x(int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(1.0 + 0.1 * std::sin(1.3 * i + 0.2) + 0.001 * i);
  return v;
}
std::vector<double> wave_y(int n, double shift) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(shift + 0.1 * std::sin(0.7 * i + 1.1) + 0.0013 * i);
  return v;
}

TEST(MannWhitney, CompleteSeparationOfFiveAndFiveIsTheSmallestExactP) {
  const auto r = mann_whitney_u({1.1, 2.3, 3.5, 4.2, 5.9}, {6.1, 7.3, 8.2, 9.9, 10.4});
  EXPECT_TRUE(r.exact);
  EXPECT_FALSE(r.ties);
  EXPECT_DOUBLE_EQ(r.u1, 0);
  EXPECT_DOUBLE_EQ(r.u2, 25);
  EXPECT_NEAR(r.p_value, 0.007936507936507936, 1e-15);  // scipy exact; = 2 / C(10, 5)
  // Swapping the samples swaps U1 and U2, not the two-sided p.
  const auto s = mann_whitney_u({6.1, 7.3, 8.2, 9.9, 10.4}, {1.1, 2.3, 3.5, 4.2, 5.9});
  EXPECT_DOUBLE_EQ(s.u1, 25);
  EXPECT_NEAR(s.p_value, r.p_value, 1e-15);
}

TEST(MannWhitney, ExactAndAsymptoticMatchScipyOnSmallSamples) {
  const std::vector<double> x = {0.85, 0.91, 0.88, 0.95, 0.87, 0.90};
  const std::vector<double> y = {0.93, 0.97, 0.99, 0.92, 1.01, 0.96, 0.94};
  const auto e = mann_whitney_u(x, y, MwuMethod::kExact);
  EXPECT_DOUBLE_EQ(e.u1, 3);
  EXPECT_NEAR(e.p_value, 0.008158508158508158, 1e-14);
  const auto a = mann_whitney_u(x, y, MwuMethod::kAsymptotic);
  EXPECT_FALSE(a.exact);
  EXPECT_NEAR(a.p_value, 0.012419330651552265, 1e-12);
  EXPECT_TRUE(mann_whitney_u(x, y).exact);  // auto: no ties, 42 cells

  const auto u = mann_whitney_u({3.2, 1.5, 4.8}, {2.2, 6.1, 5.5, 7.7, 8.1, 6.6, 9.0});  // unequal sizes
  EXPECT_DOUBLE_EQ(u.u1, 2);
  EXPECT_NEAR(u.p_value, 0.06666666666666667, 1e-14);
}

TEST(MannWhitney, TiesUseTheTieCorrectedNormalApproximation) {
  const auto r = mann_whitney_u({1, 2, 2, 3, 3, 3, 4, 5}, {3, 3, 4, 4, 5, 5, 6, 7, 7});
  EXPECT_TRUE(r.ties);
  EXPECT_FALSE(r.exact);  // auto never uses the exact distribution with ties
  EXPECT_DOUBLE_EQ(r.u1, 11);
  EXPECT_NEAR(r.p_value, 0.01630200829707017, 1e-12);
  EXPECT_THROW(mann_whitney_u({1, 2, 2}, {3, 4}, MwuMethod::kExact), Error);
}

TEST(MannWhitney, TwentyAndSixtySamplesMatchScipy) {
  const auto x20 = wave_x(20), y20 = wave_y(20, 1.03);
  const auto e20 = mann_whitney_u(x20, y20);
  EXPECT_TRUE(e20.exact);  // 400 cells: the perf_smoke recipe's size uses the exact test
  EXPECT_DOUBLE_EQ(e20.u1, 132);
  EXPECT_NEAR(e20.p_value, 0.06750114507526123, 1e-13);
  EXPECT_NEAR(mann_whitney_u(x20, y20, MwuMethod::kAsymptotic).p_value, 0.06786818721248442, 1e-12);

  const auto x50 = wave_x(50), y50 = wave_y(50, 1.01);
  const auto e50 = mann_whitney_u(x50, y50);
  EXPECT_TRUE(e50.exact);  // 2,500 cells: the largest auto-exact size
  EXPECT_DOUBLE_EQ(e50.u1, 1060);
  EXPECT_NEAR(e50.p_value, 0.19229968796213645, 1e-12);

  const auto x60 = wave_x(60), y60 = wave_y(60, 1.02);
  const auto a60 = mann_whitney_u(x60, y60);
  EXPECT_FALSE(a60.exact);  // 3,600 cells: normal approximation
  EXPECT_DOUBLE_EQ(a60.u1, 1408);
  EXPECT_NEAR(a60.p_value, 0.03989425892270804, 1e-12);
  EXPECT_NEAR(mann_whitney_u(x60, y60, MwuMethod::kExact).p_value, 0.03958473260265307, 1e-12);
}

TEST(MannWhitney, IdenticalSamplesGivePOne) {
  const auto all_tied = mann_whitney_u({2, 2, 2, 2, 2}, {2, 2, 2, 2, 2});
  EXPECT_DOUBLE_EQ(all_tied.u1, 12.5);
  EXPECT_DOUBLE_EQ(all_tied.p_value, 1.0);
  const auto same = mann_whitney_u({1, 2, 3, 4, 5}, {1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(same.u1, 12.5);
  EXPECT_DOUBLE_EQ(same.p_value, 1.0);
}

TEST(MannWhitney, RejectsEmptyAndNonFiniteSamples) {
  EXPECT_THROW(mann_whitney_u({}, {1.0}), Error);
  EXPECT_THROW(mann_whitney_u({1.0, NAN}, {1.0}), Error);
}

TEST(MannWhitney, SmallestReachablePValue) {
  EXPECT_NEAR(min_two_sided_p(3, 3), 0.1, 1e-12);
  EXPECT_NEAR(min_two_sided_p(4, 4), 0.02857142857142857, 1e-12);  // 4 + 4 cannot reach 0.01
  EXPECT_NEAR(min_two_sided_p(5, 5), 0.007936507936507936, 1e-12);
  EXPECT_NEAR(min_two_sided_p(6, 6), 0.0021645021645021645, 1e-12);
  EXPECT_DOUBLE_EQ(min_two_sided_p(1, 1), 1.0);
}

TEST(MannWhitney, MedianAndCoefficientOfVariation) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2, 10}), 2.5);
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3);
  EXPECT_TRUE(std::isnan(median({})));
  EXPECT_NEAR(coefficient_of_variation({1, 2, 3, 4}), 0.5163977794943222, 1e-15);  // numpy std(ddof=1)/mean
  EXPECT_DOUBLE_EQ(coefficient_of_variation({7, 7, 7}), 0);
  EXPECT_DOUBLE_EQ(coefficient_of_variation({7}), 0);
}

// ---------------------------------------------------------------- policy

TEST(GatePolicy, DefaultsAndOverrides) {
  const Policy d = default_policy();
  EXPECT_DOUBLE_EQ(d.alpha, 0.01);
  EXPECT_EQ(d.min_samples, 5);
  EXPECT_DOUBLE_EQ(d.max_cv, 0.10);
  EXPECT_DOUBLE_EQ(d.rule("any", "latency_ms").regression, 0.05);
  EXPECT_DOUBLE_EQ(d.rule("any", "size_bytes").regression, 0.01);
  EXPECT_TRUE(d.rule("any", "top1").absolute);
  EXPECT_DOUBLE_EQ(d.rule("any", "top1").regression, 0.3);

  const Policy p = parse_policy(
      "alpha: 0.002\nmin_samples: 8\nmax_cv: 0.2\n"
      "metrics:\n  latency_ms: {regression: 0.1, improvement: 0.07}\n  size_bytes: false\n"
      "models:\n  fmnist_cnn: {latency_ms: {regression: 0.25}, top1: {regression: 1}}\n",
      "p.yaml");
  EXPECT_DOUBLE_EQ(p.alpha, 0.002);
  EXPECT_EQ(p.min_samples, 8);
  EXPECT_DOUBLE_EQ(p.max_cv, 0.2);
  EXPECT_DOUBLE_EQ(p.rule("other", "latency_ms").regression, 0.1);
  EXPECT_DOUBLE_EQ(p.rule("fmnist_cnn", "latency_ms").regression, 0.25);
  EXPECT_DOUBLE_EQ(p.rule("fmnist_cnn", "latency_ms").improvement, 0.07);  // inherited from metrics:
  EXPECT_DOUBLE_EQ(p.rule("fmnist_cnn", "top1").regression, 1);
  EXPECT_TRUE(p.rule("fmnist_cnn", "top1").absolute);
  EXPECT_FALSE(p.rule("x", "size_bytes").enabled);
  EXPECT_EQ(p.source, "p.yaml");
  EXPECT_DOUBLE_EQ(parse_policy("", "empty.yaml").alpha, 0.01);
}

void expect_policy_error(const std::string& yaml, const std::string& message) {
  try {
    parse_policy(yaml, "pol.yaml");
    ADD_FAILURE() << "no error for: " << yaml;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(GatePolicy, ErrorsNameFileLineKeyAndSuggest) {
  expect_policy_error("alpah: 0.01\n",
                      "pol.yaml:1:1: unknown key 'alpah' at the top level (did you mean 'alpha'?); expected one of: alpha, "
                      "min_samples, max_cv, metrics, models");
  expect_policy_error("metrics:\n  latency_ms: {regresion: 0.1}\n",
                      "pol.yaml:2:16: unknown key 'regresion' in metrics.latency_ms (did you mean 'regression'?)");
  expect_policy_error("metrics:\n  model_size_bytes: {regression: 0.1}\n",
                      "pol.yaml:2:3: unknown key 'model_size_bytes' in metrics (did you mean 'size_bytes'?)");
  expect_policy_error("models:\n  m: {latency: {regression: 0.1}}\n",
                      "pol.yaml:2:7: unknown key 'latency' in models.m (did you mean 'latency_ms'?)");
  expect_policy_error("alpha: 2\n", "pol.yaml:1:8: alpha: expected a number between 0 and 1 (exclusive), got 2");
  expect_policy_error("min_samples: 1\n", "pol.yaml:1:14: min_samples: expected an integer >= 2, got 1");
  expect_policy_error("metrics:\n  top1: {regression: -1}\n", "metrics.top1.regression: expected a number >= 0, got -1");
  expect_policy_error("metrics:\n  top1: {absolute: maybe}\n", "metrics.top1.absolute: expected true or false, got 'maybe'");
  expect_policy_error("alpha: [1\n", "pol.yaml:");
  expect_policy_error("- 1\n", "expected a map of policy settings");
}

// ---------------------------------------------------------------- decisions

JobData job(const std::string& model, std::vector<double> latency, double size = 1000, double top1 = NAN) {
  JobData j;
  j.db = "/x.db";
  j.job_id = model + std::to_string(latency.size());
  j.model = model;
  j.variant = "fp32";
  j.target = "cpu";
  j.status = job_status::kDone;
  if (!latency.empty()) j.samples["latency_ms"] = std::move(latency);
  j.metrics.push_back({"size_bytes", size, "bytes"});
  if (!std::isnan(top1)) j.metrics.push_back({"top1", top1, "ratio"});
  return j;
}

std::vector<double> scaled(const std::vector<double>& v, double f) {
  std::vector<double> out;
  for (double x : v) out.push_back(x * f);
  return out;
}

Comparison find(const std::vector<Comparison>& cs, const std::string& metric) {
  for (const Comparison& c : cs) {
    if (c.metric == metric) return c;
  }
  throw Error("no comparison for " + metric);
}

// Ten samples with a CV of about 1.5%.
const std::vector<double> kBase = {1.00, 1.02, 0.99, 1.01, 1.03, 0.98, 1.00, 1.02, 1.01, 0.99};

TEST(GateDecision, RegressionNeedsSignificanceAndTheMinimumChange) {
  const Policy p = default_policy();
  const auto slow = compare_jobs(job("m", kBase), job("m", scaled(kBase, 1.5)), p);
  const Comparison c = find(slow, "latency_ms");
  EXPECT_EQ(c.verdict, Verdict::kRegression) << c.reason;
  EXPECT_TRUE(c.sampled);
  EXPECT_LT(c.p_value, 0.01);
  EXPECT_NEAR(c.change_rel, 0.5, 1e-12);
  EXPECT_NEAR(c.baseline, 1.005, 1e-12);
  EXPECT_NE(c.reason.find("+50.00%"), std::string::npos) << c.reason;

  // +3%: significant (complete separation of 10 and 10) but under the 5% threshold: PASS.
  std::vector<double> tight, shifted;
  for (int i = 0; i < 10; ++i) {
    tight.push_back(1.0 + 0.001 * i);
    shifted.push_back(1.03 + 0.001 * i);
  }
  const Comparison small = find(compare_jobs(job("m", tight), job("m", shifted), p), "latency_ms");
  EXPECT_NEAR(small.change_rel, 0.03 / 1.0045, 1e-12);
  EXPECT_LT(small.p_value, 0.01);
  EXPECT_EQ(small.verdict, Verdict::kPass) << small.reason;
  EXPECT_NE(small.reason.find("significant but below"), std::string::npos);

  // +8% median but heavily overlapping samples: not significant, PASS.
  const std::vector<double> b = {1.00, 1.20, 0.90, 1.10, 0.95, 1.25, 0.92, 1.18, 1.05, 0.97};
  const std::vector<double> c2 = {1.02, 1.22, 0.93, 1.19, 1.15, 1.24, 0.98, 1.21, 1.08, 1.13};
  Policy loose = p;
  loose.max_cv = 0.5;
  const Comparison noisy = find(compare_jobs(job("m", b), job("m", c2), loose), "latency_ms");
  EXPECT_GT(noisy.change_rel, 0.05);
  EXPECT_GE(noisy.p_value, 0.01);
  EXPECT_EQ(noisy.verdict, Verdict::kPass) << noisy.reason;
}

TEST(GateDecision, ImprovementAndIdenticalSamples) {
  const Policy p = default_policy();
  const Comparison fast = find(compare_jobs(job("m", kBase), job("m", scaled(kBase, 0.8)), p), "latency_ms");
  EXPECT_EQ(fast.verdict, Verdict::kImprovement) << fast.reason;
  const Comparison same = find(compare_jobs(job("m", kBase), job("m", kBase), p), "latency_ms");
  EXPECT_EQ(same.verdict, Verdict::kPass);
  EXPECT_DOUBLE_EQ(same.p_value, 1.0);
  EXPECT_DOUBLE_EQ(same.change_rel, 0.0);
}

TEST(GateDecision, UncertainWithTooFewSamplesOrTooMuchNoise) {
  const Policy p = default_policy();
  const std::vector<double> three = {1.0, 1.01, 0.99};
  const Comparison few = find(compare_jobs(job("m", three), job("m", scaled(three, 2.0)), p), "latency_ms");
  EXPECT_EQ(few.verdict, Verdict::kUncertain);  // even a 2x change: 3 samples cannot reach alpha
  EXPECT_NE(few.reason.find("too few samples"), std::string::npos);
  EXPECT_NE(few.hint.find("metrics.latency.runs="), std::string::npos) << few.hint;

  const std::vector<double> noisy = {1.0, 1.5, 0.8, 1.3, 0.7, 1.2, 0.9, 1.4, 1.1, 0.6};
  const Comparison cv = find(compare_jobs(job("m", noisy), job("m", scaled(noisy, 1.5)), p), "latency_ms");
  EXPECT_EQ(cv.verdict, Verdict::kUncertain);
  EXPECT_GT(cv.cv_baseline, 0.10);
  EXPECT_NE(cv.reason.find("too noisy"), std::string::npos);

  // 5 + 5 reaches alpha 0.01 only by complete separation; with alpha 0.005 it never can.
  Policy strict = p;
  strict.alpha = 0.005;
  const std::vector<double> five = {1.0, 1.01, 0.99, 1.02, 1.0};
  const Comparison unreachable = find(compare_jobs(job("m", five), job("m", scaled(five, 2.0)), strict), "latency_ms");
  EXPECT_EQ(unreachable.verdict, Verdict::kUncertain);
  EXPECT_NE(unreachable.reason.find("complete separation"), std::string::npos);

  JobData gb = job("BM_x", three);
  gb.from_gbench = true;
  EXPECT_NE(find(compare_jobs(gb, gb, p), "latency_ms").hint.find("--benchmark_repetitions="), std::string::npos);
}

TEST(GateDecision, SizeAndAccuracyUseTheMinimumChangeInTheirUnits) {
  const Policy p = default_policy();
  // size +1% is a regression (the threshold is met at equality); +0.5% passes; -2% improves.
  EXPECT_EQ(find(compare_jobs(job("m", kBase, 1000), job("m", kBase, 1010), p), "size_bytes").verdict, Verdict::kRegression);
  EXPECT_EQ(find(compare_jobs(job("m", kBase, 1000), job("m", kBase, 1005), p), "size_bytes").verdict, Verdict::kPass);
  EXPECT_EQ(find(compare_jobs(job("m", kBase, 1000), job("m", kBase, 980), p), "size_bytes").verdict, Verdict::kImprovement);
  // top1 is stored as a ratio; the threshold is 0.3 percentage points.
  const Comparison drop = find(compare_jobs(job("m", kBase, 1000, 0.8995), job("m", kBase, 1000, 0.8955), p), "top1");
  EXPECT_EQ(drop.verdict, Verdict::kRegression) << drop.reason;
  EXPECT_NEAR(drop.change_abs, -0.40, 1e-9);
  EXPECT_NEAR(drop.baseline, 89.95, 1e-9);
  EXPECT_EQ(drop.unit, "%");
  EXPECT_NE(drop.reason.find("-0.40 points"), std::string::npos) << drop.reason;
  EXPECT_EQ(find(compare_jobs(job("m", kBase, 1000, 0.8995), job("m", kBase, 1000, 0.8975), p), "top1").verdict,
            Verdict::kPass);  // -0.2 points
  EXPECT_EQ(find(compare_jobs(job("m", kBase, 1000, 0.8995), job("m", kBase, 1000, 0.8965), p), "top1").verdict,
            Verdict::kRegression);  // exactly -0.3 points
  EXPECT_EQ(find(compare_jobs(job("m", kBase, 1000, 0.8995), job("m", kBase, 1000, 0.9035), p), "top1").verdict,
            Verdict::kImprovement);
}

TEST(GateDecision, PerModelPolicyAndDisabledMetrics) {
  const Policy p = parse_policy("metrics: {size_bytes: {enabled: false}}\nmodels: {slowok: {latency_ms: {regression: 0.6}}}\n",
                                "p.yaml");
  const auto a = compare_jobs(job("slowok", kBase), job("slowok", scaled(kBase, 1.5)), p);
  EXPECT_EQ(find(a, "latency_ms").verdict, Verdict::kPass);
  EXPECT_THROW(find(a, "size_bytes"), Error);  // switched off
  EXPECT_EQ(find(compare_jobs(job("other", kBase), job("other", scaled(kBase, 1.5)), p), "latency_ms").verdict,
            Verdict::kRegression);
}

TEST(GateDecision, RunsAreMatchedByJobAndDataErrorsAreReported) {
  const Policy p = default_policy();
  JobData a = job("a", kBase), b = job("b", kBase), c = job("c", kBase);
  JobData a2 = job("a", scaled(kBase, 1.5)), b2 = job("b", kBase), d2 = job("d", kBase);
  a2.job_id = "other-a";
  b2.job_id = "other-b";
  const GateReport r = gate_runs({a, b, c}, {a2, b2, d2}, p);
  EXPECT_EQ(r.count(Verdict::kRegression), 1u);
  EXPECT_EQ(r.exit_code(), 1);
  ASSERT_EQ(r.not_compared.size(), 2u);  // c only in the baseline, d only in the candidate
  EXPECT_EQ(r.errors(), 0u);

  JobData failed = job("a", {});
  failed.job_id = "f";
  failed.status = job_status::kFailed;
  failed.error = "boom";
  const GateReport rf = gate_runs({a, b}, {failed, b2}, p);
  EXPECT_EQ(rf.errors(), 1u);
  EXPECT_EQ(rf.exit_code(), 2);
  EXPECT_NE(rf.not_compared[0].reason.find("boom"), std::string::npos);

  // The same recorded job on both sides (same database): a data error, not a PASS.
  const GateReport rs = gate_runs({a}, {a}, p);
  EXPECT_TRUE(rs.comparisons.empty());
  EXPECT_EQ(rs.exit_code(), 2);
  EXPECT_NE(rs.not_compared[0].reason.find("same recorded job"), std::string::npos);
  EXPECT_EQ(gate_runs({a}, {d2}, p).exit_code(), 2);  // nothing in common
}

// ---------------------------------------------------------------- Google Benchmark JSON

const char* kGbench = R"({
  "context": {
    "date": "2026-12-02T14:15:03+00:00",
    "host_name": "ci-runner",
    "executable": "/b/engine/xnn_kernel_bench",
    "num_cpus": 2,
    "mhz_per_cpu": 2800,
    "cpu_scaling_enabled": false,
    "caches": [
      {"type": "Data", "level": 1, "size": 32768, "num_sharing": 1}
    ],
    "load_avg": [0.5,0.4,0.3],
    "library_build_type": "release"
  },
  "benchmarks": [
    {"name": "BM_f32_gemm/64/64/64", "family_index": 0, "run_name": "BM_f32_gemm/64/64/64", "run_type": "iteration",
     "repetitions": 3, "repetition_index": 1, "threads": 1, "iterations": 100, "real_time": 2.0e+03, "cpu_time": 1.9e+03, "time_unit": "ns"},
    {"name": "BM_f32_gemm/64/64/64", "family_index": 0, "run_name": "BM_f32_gemm/64/64/64", "run_type": "iteration",
     "repetitions": 3, "repetition_index": 0, "threads": 1, "iterations": 100, "real_time": 1.0e+03, "cpu_time": 0.9e+03, "time_unit": "ns"},
    {"name": "BM_f32_gemm/64/64/64", "run_name": "BM_f32_gemm/64/64/64", "run_type": "iteration",
     "repetitions": 3, "repetition_index": 2, "threads": 1, "iterations": 200, "real_time": 3.0e+03, "cpu_time": 2.9e+03, "time_unit": "ns"},
    {"name": "BM_f32_gemm/64/64/64_mean", "run_name": "BM_f32_gemm/64/64/64", "run_type": "aggregate", "aggregate_name": "mean",
     "aggregate_unit": "time", "repetitions": 3, "threads": 1, "iterations": 3, "real_time": 2.0e+03, "cpu_time": 1.9e+03, "time_unit": "ns"},
    {"name": "BM_f32_gemm/64/64/64_cv", "run_name": "BM_f32_gemm/64/64/64", "run_type": "aggregate", "aggregate_name": "cv",
     "aggregate_unit": "percentage", "repetitions": 3, "threads": 1, "iterations": 3, "real_time": 0.5, "cpu_time": 0.5, "time_unit": "ns"},
    {"name": "BM_peak", "run_name": "BM_peak", "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
     "threads": 1, "iterations": 10, "real_time": 1.5, "cpu_time": 1.5, "time_unit": "ms"},
    {"name": "BM_broken/8", "run_name": "BM_broken/8", "run_type": "iteration", "error_occurred": true,
     "error_message": "buffer too small", "repetitions": 1, "threads": 1, "iterations": 0, "real_time": 0, "cpu_time": 0, "time_unit": "ns"}
  ]
})";

TEST(GateGbench, ParsesRepetitionsAggregatesContextAndErrors) {
  const GbenchResult r = parse_gbench_json(kGbench, "g.json");
  EXPECT_EQ(r.host_name, "ci-runner");
  EXPECT_EQ(r.num_cpus, 2);
  EXPECT_DOUBLE_EQ(r.mhz_per_cpu, 2800);
  EXPECT_DOUBLE_EQ(r.load_avg_1m, 0.5);
  EXPECT_EQ(r.library_build_type, "release");
  EXPECT_EQ(r.executable, "/b/engine/xnn_kernel_bench");
  EXPECT_EQ(r.caches, "L1 Data 32 KiB x1");
  EXPECT_NE(r.context_json.find("\"host_name\":\"ci-runner\""), std::string::npos) << r.context_json;
  EXPECT_NE(r.context_json.find("\"num_cpus\":2"), std::string::npos) << r.context_json;
  ASSERT_EQ(r.benchmarks.size(), 3u);

  const GbenchBenchmark& g = r.benchmarks[0];
  EXPECT_EQ(g.model, "BM_f32_gemm");
  EXPECT_EQ(g.variant, "64/64/64");
  EXPECT_EQ(g.time_unit, "ns");
  // In repetition order, ns -> ms; aggregates are not samples.
  ASSERT_EQ(g.real_time_ms.size(), 3u);
  EXPECT_DOUBLE_EQ(g.real_time_ms[0], 0.001);
  EXPECT_DOUBLE_EQ(g.real_time_ms[1], 0.002);
  EXPECT_DOUBLE_EQ(g.real_time_ms[2], 0.003);
  const JobResult jr = gbench_job_result(g);
  EXPECT_EQ(jr.status, job_status::kDone);
  EXPECT_EQ(jr.samples.at("latency_ms").size(), 3u);
  EXPECT_EQ(jr.samples.at("cpu_time_ms").size(), 3u);
  auto metric = [&jr](const std::string& n) {
    for (const MetricValue& m : jr.metrics) {
      if (m.name == n) return m.value;
    }
    return std::nan("");
  };
  EXPECT_DOUBLE_EQ(metric("latency_ms_median"), 0.002);
  EXPECT_DOUBLE_EQ(metric("latency_runs"), 3);
  EXPECT_NEAR(metric("gbench_iterations"), 400.0 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(metric("gbench_mean_ms"), 0.002);
  EXPECT_DOUBLE_EQ(metric("gbench_cv"), 0.5);

  EXPECT_EQ(r.benchmarks[1].model, "BM_peak");
  EXPECT_EQ(r.benchmarks[1].variant, "");
  EXPECT_DOUBLE_EQ(r.benchmarks[1].real_time_ms[0], 1.5);
  const JobResult broken = gbench_job_result(r.benchmarks[2]);
  EXPECT_EQ(broken.status, job_status::kFailed);
  EXPECT_EQ(broken.error, "buffer too small");
}

TEST(GateGbench, RejectsWhatIsNotAGbenchResult) {
  EXPECT_THROW(parse_gbench_json("{\"a\": 1}", "x.json"), Error);
  EXPECT_THROW(parse_gbench_json("{\"benchmarks\": [}", "x.json"), Error);
  try {
    parse_gbench_json(R"({"benchmarks": [{"name": "BM_a", "run_type": "iteration", "real_time": 1, "time_unit": "xs"}]})", "x.json");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x.json:1:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("benchmarks.0.time_unit: expected ns, us, ms or s, got 'xs'"), std::string::npos)
        << e.what();
  }
  // Only aggregates (--benchmark_report_aggregates_only): no raw samples to gate.
  EXPECT_THROW(parse_gbench_json(R"({"benchmarks": [{"name": "BM_a_mean", "run_name": "BM_a", "run_type": "aggregate",
      "aggregate_name": "mean", "real_time": 1, "time_unit": "ns"}]})",
                                 "x.json"),
               Error);
}

// ---------------------------------------------------------------- selectors across databases

class GateSelectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "xnn_gate_test_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string add_run(const std::string& db, const std::string& tag, const std::string& commit, const char* status) {
    Store s(db);
    RunRecord r;
    r.experiment = "exp";
    r.tag = tag;
    r.git_commit = commit;
    const std::string id = s.create_run(r);
    if (std::string(status) != run_status::kRunning) s.finish_run(id, status);
    return id;
  }
  std::string dir_;
};

TEST_F(GateSelectorTest, ResolvesTagCommitAndOtherDatabase) {
  const std::string main_db = dir_ + "/main.db", pr_db = dir_ + "/pr.db";
  const std::string base = add_run(main_db, "base", "abc123", run_status::kFinished);
  add_run(main_db, "base", "abc999", run_status::kFailed);  // newer, but not FINISHED
  const std::string cand = add_run(pr_db, "cand", "def456", run_status::kFinished);

  EXPECT_EQ(resolve_run_side("tag:base", main_db).run.id, base);
  EXPECT_EQ(resolve_run_side("commit:abc1", main_db).run.id, base);
  EXPECT_EQ(resolve_run_side(main_db + ":tag:base", pr_db).run.id, base);
  EXPECT_EQ(resolve_run_side(main_db + ":" + base, pr_db).run.id, base);
  const RunSide c = resolve_run_side("tag:cand", pr_db);
  EXPECT_EQ(c.run.id, cand);
  EXPECT_EQ(c.db, fs::canonical(pr_db).string());

  EXPECT_THROW(resolve_run_side("tag:nope", main_db), Error);
  EXPECT_THROW(resolve_run_side(dir_ + "/missing.db:" + base, pr_db), Error);
  EXPECT_THROW(resolve_run_side("nosuchrun", main_db), Error);
  const std::string running = add_run(main_db, "", "", run_status::kRunning);
  try {
    resolve_run_side(running, main_db);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("still RUNNING"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace xnn::gate
