// The DARTS supernet (Liu et al. 2019) over the MobileNet-like space: stem, then at every
// block position a mixed op — every candidate block of the position (and the identity "skip"
// where the position is optional) applied to the same input and summed with weights
//     w = Softmax((alpha + noise) * scale),   mixed = Σ_i w_i · op_i(x)
// — then the head. alpha [n] are the architecture weights; noise and scale [n] are what the
// relaxation writes before each step: 0 and 1 for a plain softmax, Gumbel draws and 1/τ for
// Gumbel-softmax (FBNet). All three are graph initialisers, so the engine's training session
// computes d(loss)/d(alpha) through Softmax, Gather and Mul like any other gradient; the search
// steps only alpha with its own optimiser and never noise or scale.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "harness/arch/mobilenet_space.h"
#include "nas/latency_table.h"

namespace xnn::nas {

// The value names of one position's mixed op.
struct MixedOp {
  std::string alpha, noise, scale;  // initialisers [op_count]
  std::string weights;              // the Softmax output [op_count]
  std::vector<int> branches;        // value index of each op's output (skip: the input)
  int output = -1;                  // value index of the weighted sum
};

// Adds the mixed op of `position` (name "<position.name()>") on value `x` to `b`.
MixedOp add_mixed_op(arch::GraphBuilder& b, const arch::SearchSpace& space, const BlockPosition& position, int x);

struct Supernet {
  std::shared_ptr<Model> model;  // input "input" [batch, C, r, r], output "logits"
  std::vector<BlockPosition> positions;
  std::vector<MixedOp> ops;  // one per position
};

// The supernet at `resolution` and `width` over `positions` (block_positions of the same
// space, resolution and width). Weights from `seed`; every alpha starts at 0 (uniform).
Supernet build_supernet(const arch::SearchSpace& space, const std::vector<BlockPosition>& positions, int64_t resolution,
                        double width, uint64_t seed);

// softmax((alpha + noise) * scale) in double.
std::vector<double> mixing_weights(const float* alpha, const float* noise, const float* scale, size_t n);

// The expected latency of one position, E = Σ_i p_i·lat_i with p = softmax((alpha + noise)·s),
// and its gradient on alpha, dE/dalpha_j = s_j·p_j·(lat_j − E), added times `lambda` to `grad`
// (when non-null). That is the latency term of the loss CE + λ·Σ_positions E, added after the
// cross-entropy backward (its gradient is analytic: the table is not part of the graph).
double expected_latency(const float* alpha, const float* noise, const float* scale,
                        const std::vector<double>& latency_ms, double lambda, float* grad);

}  // namespace xnn::nas
