// Differentiable architecture search (`method: darts`): DARTS (Liu et al. 2019, first order)
// over the MobileNet-like space with FBNet's / ProxylessNAS's latency term.
//
//   1. The target's per-op latency table (nas/latency_table.h) at the config's width,
//      resolution and activation, cached in <output_dir>/latency_table/.
//   2. The supernet (nas/darts/supernet.h), trained by alternating steps: the network weights
//      on a batch of the weight split (the recipe's optimiser and schedule), then — after the
//      warm-up epochs — the architecture weights on a batch of the alpha split (Adam(W), as
//      DARTS) with loss CE + λ·Σ_positions E_p[latency ms]. First order: the alpha gradient is
//      taken at the current weights. The latency term's gradient is added analytically to the
//      alphas' gradient after the cross-entropy backward. Gumbel-softmax draws new noise at every
//      step (weights and alphas) with a temperature annealed from tau_start to tau_end.
//   3. Derive: per position the op with the largest alpha; skipped optional blocks make the
//      stage shallower (when that depth is not a choice of the stage, the depth d maximising
//      Σ_{b<d} P(not skip) + Σ_{b≥d} P(skip) is taken, with each kept block's best candidate).
//   4. Retrain the derived architecture from scratch with the recipe (train_and_measure) and
//      measure it; one search and one derived model per λ of darts.lambda.
//
// Every derived architecture is a trial of the study <name> (params: its decisions; values:
// top1[, latency_ms]; intermediate values: the alpha split's accuracy per search epoch after
// the warm-up; user attributes: arch, latency_ms, params, size_bytes, lambda, table_latency_ms,
// search_seconds and alpha_history — per epoch the softmax(alpha) of every position). A rerun
// re-uses the COMPLETE trial of each λ.
#pragma once
#include <string>
#include <vector>

#include "harness/data/fashion_mnist.h"
#include "nas/blackbox_search.h"
#include "nas/darts/darts_config.h"
#include "nas/darts/supernet.h"

namespace xnn::nas {

struct DartsTrace {
  std::vector<size_t> ops;                              // the argmax op per position
  std::vector<std::vector<std::vector<double>>> probs;  // [epoch][position][op]: softmax(alpha) after the epoch
  std::vector<double> expected_latency_ms;              // [epoch]: stem + head + Σ_p E_p[latency]
  std::vector<double> train_accuracy, alpha_accuracy;   // [epoch], training-mode batch accuracy (alpha: 0 in warm-up)
  double seconds = 0;
};

// Trains `net` (its alphas start uniform) on the two splits. `table` must hold net's positions.
DartsTrace search_supernet(Supernet& net, const LatencyTable& table, const DartsOptions& options, double lambda,
                           const train::TrainConfig& recipe, const data::Dataset& weight_split,
                           const data::Dataset& alpha_split, const train::ProgressFn& progress);

// The architecture `probs` (softmax(alpha) per position) selects (see the header comment), and
// the op used at every position (for LatencyTable::predict_ms). The result is in the space.
arch::Arch derive_arch(const arch::SearchSpace& space, const DartsOptions& options,
                       const std::vector<BlockPosition>& positions, const std::vector<std::vector<double>>& probs,
                       std::vector<size_t>* ops);

// Runs the search for every λ, retrains and measures the derived architectures and the
// baselines, and exports the front (as run_blackbox_search does).
SearchResult run_darts_search(const NasConfig& config, Store& store, const LatencyFn& latency,
                              const train::ProgressFn& progress);

}  // namespace xnn::nas
