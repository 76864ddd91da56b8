// Pattern pruning of 3×3 convolutions (PatDNN, Niu et al., ASPLOS'20): every 3×3 kernel keeps
// `taps` of its 9 weights (e.g. 4) laid out in one of a small library of patterns learned from
// the weights, and connectivity pruning removes whole kernels (input-channel connections).
// The model stays a dense Conv with zeros; the CPU backend finds the structure in the constant
// weights and runs the pattern-sparse kernel where it pays (engine/kernels/pattern_conv.h,
// engine/backends/cpu/pattern_conv_cpu.cpp). Masks are the ones of magnitude pruning
// (PruneMasks, apply_masks in magnitude_prune.h), so fine-tuning keeps them the same way.
//
//   1. library: over all (nonzero) 3×3 kernels of the layers, the pattern of each kernel's
//      `taps` largest |w| (ties: lower position first); the `library_size` most frequent
//      patterns (ties: smaller 9-bit mask first) form the library, shared by all layers;
//   2. projection: each kernel keeps the library pattern that holds most of its L2 energy
//      (sum of w² over the pattern; ties: the more frequent pattern); the rest is zeroed;
//   3. connectivity: in each layer, the round(connectivity × C_out·C_in) kernels with the
//      smallest remaining L2 norm are zeroed entirely (already-zero kernels count first).
//
// Sparsity mapping (--target-sparsity X for --method pattern): X is the share of zero weights
// of the pattern-pruned 3×3 layers; with k-tap patterns, 1 - k/9 comes from the patterns alone
// and connectivity c adds the rest: X = 1 - (1 - c)·k/9, so c = 1 - 9(1 - X)/k. X below
// 1 - k/9 (0.556 for k = 4) is not reachable with k taps (an error says so).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compress/prune/magnitude_prune.h"
#include "compress/prune/prune_schedule.h"

namespace xnn::prune {

struct PatternOptions {
  int taps = 4;           // k weights kept per 3×3 kernel, in [1, 8]
  int library_size = 8;   // P patterns
};

// The prunable weights (prunable_weights) that are 3×3 convolutions with group 1 (OIHW).
std::vector<PrunableWeight> pattern_prunable_weights(const Model& model, const PruneOptions& options);

// 9-bit mask (bit 3·ky + kx) of the `taps` largest |w| of one 3×3 kernel; 0 for an all-zero kernel.
uint16_t top_k_pattern(const float* kernel, int taps);
// The index in `library` of the pattern keeping the most L2 energy of `kernel` (first on ties).
int best_pattern(const float* kernel, const std::vector<uint16_t>& library);
// Library learning over layers of 3×3 kernels (each span: whole kernels of 9 floats).
std::vector<uint16_t> learn_pattern_library(const std::vector<std::span<const float>>& layers, const PatternOptions& options);

// c = 1 - 9(1 - sparsity)/taps; throws an Error naming the reachable range when sparsity < 1 - taps/9
// or sparsity >= 1.
double connectivity_for_sparsity(double sparsity, int taps);

struct PatternPruneResult {
  PruneMasks masks;                // keep = 1 per weight, by value name
  std::vector<uint16_t> library;   // the patterns used
  int64_t kernels = 0;             // 3×3 kernels in the pruned layers
  int64_t removed_kernels = 0;     // all-zero kernels afterwards
};

// Projects every kernel of the listed weights onto `library` (learned from these weights when
// empty) and removes round(connectivity × kernels) kernels per layer. In place; returns the masks.
PatternPruneResult pattern_prune(Model& model, const std::vector<PrunableWeight>& weights, const PatternOptions& options,
                                 double connectivity, std::vector<uint16_t> library = {});
PatternPruneResult pattern_prune(std::span<train::Parameter> params, const std::vector<PrunableWeight>& weights,
                                 const PatternOptions& options, double connectivity, std::vector<uint16_t> library = {});

// Gradual pattern pruning during fine-tuning (the trainer's step hook, like GradualPruner): the
// library is learned and every kernel projected at the first call; connectivity then rises
// along the Zhu & Gupta cubic from schedule.initial_sparsity to schedule.final_sparsity (both
// connectivity shares here) with mask updates every schedule.every steps; the masks are
// re-applied after every optimiser step.
class GradualPatternPruner {
 public:
  GradualPatternPruner(std::vector<PrunableWeight> weights, PatternOptions options, GradualSchedule schedule);

  void on_step(int64_t step, int64_t total_steps, std::span<train::Parameter> params);

  const PruneMasks& masks() const { return result_.masks; }
  const std::vector<uint16_t>& library() const { return result_.library; }
  double current_connectivity() const { return current_; }
  int64_t updates() const { return updates_; }

 private:
  std::vector<PrunableWeight> weights_;
  PatternOptions options_;
  GradualSchedule schedule_;
  PatternPruneResult result_;
  double current_ = -1;
  int64_t updates_ = 0, end_ = -1, every_ = 1;
};

}  // namespace xnn::prune
