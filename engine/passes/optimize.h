// The graph optimisation pipeline: a fixed sequence of passes chosen by an optimisation level.
//
//   level 0  nothing
//   level 1  constant folding -> remove_identity -> fold_batchnorm -> dead-code elimination
//   level 2  level 1's passes, then fuse_residual_add -> fuse_activation before the final
//            dead-code elimination
//
// Why this order:
//   - constant folding first: it turns computed parameters (Constant nodes, Shape chains,
//     Identity of initialisers) into constants, which fold_batchnorm needs, and records static
//     shapes and dtypes on intermediate values, which fuse_residual_add (same-shape check) and
//     the f32 checks of the fusions rely on;
//   - remove_identity before the pattern passes: an Identity or inference Dropout between a Conv
//     and its BatchNormalization / activation would hide the pattern;
//   - fold_batchnorm before any fusion: it folds only into a producer without activation or Z,
//     and a BN between conv and Add/Relu blocks both fusions;
//   - fuse_residual_add before fuse_activation: the residual fusion wants a conv without
//     activation, and conv -> Add -> Relu only becomes conv(+Z) -> Relu once the Add is fused,
//     after which fuse_activation takes the Relu as well;
//   - dead-code elimination last: it drops the old weights and bypassed values left behind.
// Every pass keeps the graph valid and topologically sorted (optimize_graph checks with
// validate() after each one) and keeps node names (fused nodes take the producer's name).
#pragma once
#include <string>

#include "engine/core/graph.h"

namespace xnn {

struct OptimizeStats {
  int level = 0;
  int nodes_before = 0, nodes_after = 0;
  int constant_folded = 0;       // nodes evaluated into constants
  int constant_removed = 0;      // nodes constant folding removed (folded + dead)
  int identities_removed = 0;    // remove_identity
  int batchnorms_folded = 0;     // fold_batchnorm
  int residual_adds_fused = 0;   // fuse_residual_add
  int activations_fused = 0;     // fuse_activation
  int dead_nodes_removed = 0;    // eliminate_dead_code (all its runs)
  int dead_values_removed = 0;
};

// Runs the passes of `level` (0, 1 or 2; higher levels mean 2) on the main graph. Throws an Error
// for a negative level, or naming the pass after which the graph no longer validates.
OptimizeStats optimize_graph(Graph& g, int level);

// One line for the CLI, e.g. "optimize -O2: 174 -> 62 nodes (constant folding 0, identity 1,
// batchnorm 20, residual add 8, activation 33, dead code 0 nodes / 41 values)".
std::string describe(const OptimizeStats& s);

}  // namespace xnn
