#include "harness/gate/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/core/error.h"

namespace xnn::gate {
namespace {

// P(U >= u) under the null hypothesis for sample sizes m and n, counted exactly.
// c(m, n, u), the number of orderings of m x's and n y's in which u (x, y) pairs have x > y,
// follows from where the largest value is: an x above all n y's adds n, a y adds nothing:
//   c(m, n, u) = c(m - 1, n, u - n) + c(m, n - 1, u),   c(0, n, 0) = c(m, 0, 0) = 1.
// Only additions of non-negative counts, so the tail keeps full relative precision (a product
// of q-binomial factors would subtract and lose the small tails we care about).
double exact_upper_tail(size_t m, size_t n, size_t u) {
  if (m > n) std::swap(m, n);  // the distribution is symmetric in (m, n); fewer rows
  const size_t cells = m * n;
  if (u > cells) return 0;
  std::vector<std::vector<double>> f(m + 1, std::vector<double>(cells + 1, 0.0));
  for (size_t i = 0; i <= m; ++i) f[i][0] = 1;  // n = 0: one ordering, U = 0
  for (size_t j = 1; j <= n; ++j) {
    for (size_t i = 1; i <= m; ++i) {
      // f[i - 1] already holds the counts for j y's; f[i] still holds those for j - 1.
      const std::vector<double>& prev = f[i - 1];
      std::vector<double>& cur = f[i];
      for (size_t k = i * j; k >= j; --k) cur[k] += prev[k - j];
    }
  }
  const std::vector<double>& dist = f[m];
  double total = 0, tail = 0;
  for (size_t k = 0; k <= cells; ++k) {
    total += dist[k];
    if (k >= u) tail += dist[k];
  }
  return tail / total;
}

void check_sample(const std::vector<double>& v, const char* which) {
  XNN_CHECK(!v.empty(), std::string("Mann-Whitney U test: the ") + which + " sample is empty");
  for (double x : v) XNN_CHECK(std::isfinite(x), std::string("Mann-Whitney U test: the ") + which + " sample has a value that is not finite");
}

}  // namespace

MannWhitneyResult mann_whitney_u(const std::vector<double>& x, const std::vector<double>& y, MwuMethod method) {
  check_sample(x, "first");
  check_sample(y, "second");
  const size_t n1 = x.size(), n2 = y.size(), n = n1 + n2;

  // Midranks of the pooled sample; tie groups for the variance correction.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(n);
  for (double v : x) pooled.push_back({v, 0});
  for (double v : y) pooled.push_back({v, 1});
  std::sort(pooled.begin(), pooled.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_x = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double midrank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // ranks i+1 .. j
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second == 0) rank_sum_x += midrank;
    }
    if (j - i > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }

  MannWhitneyResult r;
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2), dn = static_cast<double>(n);
  r.u1 = rank_sum_x - dn1 * (dn1 + 1) / 2;
  r.u2 = dn1 * dn2 - r.u1;
  r.ties = ties;
  const double u_max = std::max(r.u1, r.u2);

  bool exact = false;
  if (method == MwuMethod::kExact) {
    XNN_CHECK(!ties, "Mann-Whitney U test: the exact distribution needs samples without ties");
    exact = true;
  } else if (method == MwuMethod::kAuto) {
    exact = !ties && n1 * n2 <= kExactMaxCells;
  }
  r.exact = exact;
  if (exact) {
    // Without ties U is an integer.
    r.p_value = std::min(1.0, 2 * exact_upper_tail(n1, n2, static_cast<size_t>(std::llround(u_max))));
    return r;
  }
  const double variance = dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (!(variance > 0)) {  // every value tied: no evidence of a difference
    r.p_value = 1;
    return r;
  }
  const double z = (u_max - dn1 * dn2 / 2 - 0.5) / std::sqrt(variance);
  r.p_value = std::clamp(std::erfc(z / std::sqrt(2.0)), 0.0, 1.0);  // 2 * (1 - Phi(z))
  return r;
}

double min_two_sided_p(size_t n1, size_t n2) {
  if (n1 == 0 || n2 == 0) return 1;
  const double log_choose = std::lgamma(static_cast<double>(n1 + n2) + 1) - std::lgamma(static_cast<double>(n1) + 1) -
                            std::lgamma(static_cast<double>(n2) + 1);
  return std::min(1.0, 2 * std::exp(-log_choose));
}

double median(const std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  std::vector<double> s = v;
  const size_t mid = s.size() / 2;
  std::nth_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(mid), s.end());
  const double upper = s[mid];
  if (s.size() % 2 == 1) return upper;
  const double lower = *std::max_element(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

double coefficient_of_variation(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  if (!(mean > 0)) return 0;
  double sq = 0;
  for (double x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / static_cast<double>(v.size() - 1)) / mean;
}

}  // namespace xnn::gate
