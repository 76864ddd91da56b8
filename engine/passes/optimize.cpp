#include "engine/passes/optimize.h"

#include "engine/core/error.h"
#include "engine/passes/eliminate_dead_code.h"
#include "engine/passes/fold_batchnorm.h"
#include "engine/passes/fuse_activation.h"
#include "engine/passes/fuse_residual_add.h"
#include "engine/passes/remove_identity.h"
#include "engine/runtime/fold_constants.h"

namespace xnn {

OptimizeStats optimize_graph(Graph& g, int level) {
  if (level < 0) throw Error("optimisation level must be 0, 1 or 2, got " + std::to_string(level));
  OptimizeStats s;
  s.level = level > 2 ? 2 : level;
  s.nodes_before = s.nodes_after = static_cast<int>(g.nodes.size());
  if (s.level == 0) return s;
  g.validate("before optimisation");
  const auto check = [&](const char* pass) { g.validate("graph optimisation, after " + std::string(pass)); };

  const FoldStats folded = fold_constants(g);  // also sorts the nodes topologically
  s.constant_folded = folded.folded_nodes;
  s.constant_removed = folded.removed_nodes;
  check("constant folding");
  s.identities_removed = remove_identity(g);
  check("remove_identity");
  s.batchnorms_folded = fold_batchnorm(g);
  check("fold_batchnorm");
  if (s.level >= 2) {
    s.residual_adds_fused = fuse_residual_add(g);
    check("fuse_residual_add");
    s.activations_fused = fuse_activation(g);
    check("fuse_activation");
  }
  const DeadCodeStats dead = eliminate_dead_code(g);
  s.dead_nodes_removed = dead.nodes;
  s.dead_values_removed = dead.values;
  check("eliminate_dead_code");
  s.nodes_after = static_cast<int>(g.nodes.size());
  return s;
}

std::string describe(const OptimizeStats& s) {
  std::string out = "optimize -O" + std::to_string(s.level) + ": " + std::to_string(s.nodes_before) + " -> " +
                    std::to_string(s.nodes_after) + " nodes";
  if (s.level == 0) return out;
  out += " (constant folding " + std::to_string(s.constant_removed) + ", identity " +
         std::to_string(s.identities_removed) + ", batchnorm " + std::to_string(s.batchnorms_folded);
  if (s.level >= 2) {
    out += ", residual add " + std::to_string(s.residual_adds_fused) + ", activation " +
           std::to_string(s.activations_fused);
  }
  out += ", dead code " + std::to_string(s.dead_nodes_removed) + " nodes / " + std::to_string(s.dead_values_removed) +
         " values)";
  return out;
}

}  // namespace xnn
