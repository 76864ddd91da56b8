// fold_batchnorm: folds an inference-mode BatchNormalization into the Conv or Gemm before it.
#pragma once
#include "engine/core/graph.h"

namespace xnn {

// BatchNormalization(X, scale, B, mean, var) in inference form (training_mode 0, one output,
// all four parameters constant, [C]) whose X is the output of
//   - a Conv, or a FusedConv without Z and without activation, with constant W (and B, if any),
//     W [C, ...]: per output channel s = scale / sqrt(var + eps),
//       W' = W * s,  B' = (B - mean) * s + beta_bn;
//   - a Gemm, or a FusedGemm without activation (transB 0 or 1; constant B; C absent or
//     constant), whose output [M, C] the BN normalises per feature:
//       B' = B scaled per output column, C' = beta * C * s + (beta_bn - mean * s), beta' = 1;
// where that output has no other reader, is no graph output and no subgraph names it. The
// producer then writes the BN's output value directly (its name, e.g. a graph output, survives)
// and the BN node goes. New weights are new constants: the old ones may be shared, or mmap'ed
// read-only from a .xnn file; dead-code elimination drops them when unused. f32 and f64;
// arithmetic in double. Returns the number of BatchNormalization nodes folded.
int fold_batchnorm(Graph& g);

}  // namespace xnn
