// The statistics behind `xnn-lab gate`: the two-sided Mann-Whitney U test (Wilcoxon rank-sum)
// on two independent samples of raw measurements, plus the median and coefficient of variation
// the gate reports.
//
// Method (what `MwuMethod::kAuto` picks, and why):
//  * exact   — no ties and n1 * n2 <= kExactMaxCells (2,500: e.g. 50 x 50). The null
//              distribution of U is counted exactly (every arrangement of the pooled ranks is
//              equally likely) and p = min(1, 2 * P(U >= max(U1, U2))). This is what small
//              samples need: the normal approximation is poor below ~10 per side, and the exact
//              p-value is what tells whether alpha is reachable at all (see min_two_sided_p).
//  * asymptotic — otherwise (ties, or larger samples): the normal approximation with the tie
//              correction of the variance, sigma^2 = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1))),
//              and a continuity correction of 0.5: z = (max(U1, U2) - n1 n2 / 2 - 0.5) / sigma,
//              p = min(1, 2 * (1 - Phi(z))). When every value is tied (sigma = 0), p = 1.
// Both match scipy.stats.mannwhitneyu(x, y, alternative='two-sided', method='exact' /
// 'asymptotic', use_continuity=True); tests/harness/gate_stats_test.cpp checks values computed
// with scipy. Timings on a computer tie rarely (they are doubles), so in practice the gate uses
// the exact test up to 50 samples a side and the approximation beyond, where it is accurate.
#pragma once
#include <cstddef>
#include <vector>

namespace xnn::gate {

enum class MwuMethod { kAuto, kExact, kAsymptotic };

// kAuto uses the exact distribution when there are no ties and n1 * n2 is at most this.
inline constexpr size_t kExactMaxCells = 2500;

struct MannWhitneyResult {
  double u1 = 0;       // U of the first sample: pairs (x_i, y_j) with x_i > y_j, ties counting 1/2
  double u2 = 0;       // n1 * n2 - u1
  double p_value = 1;  // two-sided
  bool exact = false;  // the exact null distribution was used
  bool ties = false;   // the pooled sample has tied values
};

// Two-sided test of "x and y come from the same distribution". Throws xnn::Error when a sample
// is empty, when kExact is asked for with ties, or when a value is not finite.
MannWhitneyResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y,
                                 MwuMethod method = MwuMethod::kAuto);

// The smallest two-sided p-value the exact test can give for these sizes (complete separation):
// 2 / C(n1 + n2, n1), capped at 1. With 5 + 5 samples it is 0.0079; with 4 + 4 it is 0.029, so
// alpha = 0.01 cannot be reached below 5 samples a side, whatever the data.
double min_two_sided_p(size_t n1, size_t n2);

// Median (mean of the two middle values for an even count); NaN for an empty sample.
double median(const std::vector<double>& v);
// Sample standard deviation (n - 1) over the mean, as `xnn-lab run` records latency_cv;
// 0 for fewer than 2 values or a mean <= 0.
double coefficient_of_variation(const std::vector<double>& v);

}  // namespace xnn::gate
