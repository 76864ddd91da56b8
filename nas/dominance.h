// Does the searched front dominate a baseline? A front point dominates a baseline when it is at
// least as accurate at no more latency, one of the two strictly (the issue's "higher accuracy at
// equal or lower measured latency").
//
// Latency on a shared machine drifts by tens of percent over minutes, so a verdict from two
// measurements taken at different times can flip with the machine's phase. confirm_dominance
// measures each candidate and its baseline back to back for several rounds, alternating which
// goes first, and judges the latency side by the median of the per-round ratios: the drift
// between two adjacent measurements is small, and the median discards a round hit by a burst.
#pragma once
#include <string>
#include <vector>

#include "nas/blackbox_search.h"

namespace xnn::nas {

// a dominates b on (top1, latency_ms) as recorded.
bool dominates(const CandidateResult& a, const CandidateResult& b);

// Names of the baselines some point of `front` dominates (dominates() above), in baseline order.
std::vector<std::string> dominated_baselines(const std::vector<CandidateResult>& front,
                                             const std::vector<CandidateResult>& baselines);

// Two models measured back to back for `rounds` rounds (even rounds the baseline first, odd
// rounds the candidate first): per-round figures, ratios candidate / baseline, and their median.
struct PairedLatency {
  std::vector<double> candidate_ms, baseline_ms;  // per round
  std::vector<double> ratios;                     // candidate / baseline, per round
  double median_ratio = 0;
};
PairedLatency paired_latency(const std::string& candidate_model, const std::string& baseline_model,
                             const LatencyFn& latency, int rounds);

struct DominanceCheck {
  std::string baseline, candidate;
  double candidate_top1 = 0, baseline_top1 = 0;
  std::vector<double> candidate_ms, baseline_ms;  // per round
  std::vector<double> ratios;                     // candidate / baseline, per round
  double median_ratio = 0;
  bool dominates = false;  // top1 >= the baseline's, median ratio <= 1, one strictly
};

// For every baseline, every front point at least as accurate as it is measured with `latency`
// back to back with the baseline for `rounds` rounds (even rounds the baseline first, odd rounds
// the candidate first). rounds >= 1; models are the CandidateResults' xnn_path.
std::vector<DominanceCheck> confirm_dominance(const std::vector<CandidateResult>& front,
                                              const std::vector<CandidateResult>& baselines, const LatencyFn& latency,
                                              int rounds);

// Names of the baselines with a check that dominates, in baseline order.
std::vector<std::string> dominated_baselines(const std::vector<DominanceCheck>& checks,
                                             const std::vector<CandidateResult>& baselines);

}  // namespace xnn::nas
