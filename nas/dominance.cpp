#include "nas/dominance.h"

#include <algorithm>

#include "engine/core/error.h"

namespace xnn::nas {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

PairedLatency paired_latency(const std::string& candidate_model, const std::string& baseline_model,
                             const LatencyFn& latency, int rounds) {
  if (rounds < 1) throw Error("paired_latency: rounds must be >= 1, got " + std::to_string(rounds));
  PairedLatency m;
  for (int r = 0; r < rounds; ++r) {
    double bl = 0, cl = 0;
    if (r % 2 == 0) {
      bl = latency(baseline_model);
      cl = latency(candidate_model);
    } else {
      cl = latency(candidate_model);
      bl = latency(baseline_model);
    }
    m.baseline_ms.push_back(bl);
    m.candidate_ms.push_back(cl);
    m.ratios.push_back(cl / bl);
  }
  m.median_ratio = median(m.ratios);
  return m;
}

bool dominates(const CandidateResult& a, const CandidateResult& b) {
  return a.top1 >= b.top1 && a.latency_ms <= b.latency_ms && (a.top1 > b.top1 || a.latency_ms < b.latency_ms);
}

std::vector<std::string> dominated_baselines(const std::vector<CandidateResult>& front,
                                             const std::vector<CandidateResult>& baselines) {
  std::vector<std::string> out;
  for (const CandidateResult& b : baselines) {
    if (std::any_of(front.begin(), front.end(), [&](const CandidateResult& p) { return dominates(p, b); })) {
      out.push_back(b.name);
    }
  }
  return out;
}

std::vector<DominanceCheck> confirm_dominance(const std::vector<CandidateResult>& front,
                                              const std::vector<CandidateResult>& baselines, const LatencyFn& latency,
                                              int rounds) {
  if (rounds < 1) throw Error("confirm_dominance: rounds must be >= 1, got " + std::to_string(rounds));
  std::vector<DominanceCheck> out;
  for (const CandidateResult& b : baselines) {
    for (const CandidateResult& p : front) {
      if (p.top1 < b.top1) continue;  // cannot dominate, whatever its latency
      DominanceCheck c;
      c.baseline = b.name;
      c.candidate = p.name;
      c.candidate_top1 = p.top1;
      c.baseline_top1 = b.top1;
      const PairedLatency m = paired_latency(p.xnn_path, b.xnn_path, latency, rounds);
      c.candidate_ms = m.candidate_ms;
      c.baseline_ms = m.baseline_ms;
      c.ratios = m.ratios;
      c.median_ratio = m.median_ratio;
      c.dominates = c.median_ratio <= 1.0 && (p.top1 > b.top1 || c.median_ratio < 1.0);
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<std::string> dominated_baselines(const std::vector<DominanceCheck>& checks,
                                             const std::vector<CandidateResult>& baselines) {
  std::vector<std::string> out;
  for (const CandidateResult& b : baselines) {
    if (std::any_of(checks.begin(), checks.end(),
                    [&](const DominanceCheck& c) { return c.baseline == b.name && c.dominates; })) {
      out.push_back(b.name);
    }
  }
  return out;
}

}  // namespace xnn::nas
