// Composes the models of a pipeline (harness/chain/pipeline_spec.h) into one graph, the bundle
// `xnn-lab chain` writes as one .xnn file:
//   run:  the model's nodes go into the main graph; its outputs are named <as>.<output>;
//   if:   glue ops turn `VALUE OP NUMBER` into a bool scalar (Greater/Less/... then Reshape to
//         []); an If runs the then-model in its then-branch, and in its else-branch zeros of the
//         same types, another model, or values of the pipeline;
//   loop: a Scan runs the model on each slice of a tensor along `axis` (the slice keeps the axis
//         as size 1, so the model sees its usual input); each output whose `axis` dim is 1 is
//         concatenated along it (N crops of [1,10] give [N,10]), any other is stacked along a
//         new axis 0.
// Model internals are renamed <as>/... so nothing clashes; weights are copied into every place a
// model is used (a model used twice is stored twice). Every seam is checked: a model input must
// get its declared dtype and known dims, If branches must agree, and each error names the
// pipeline file's line, the step and the two mismatching types.
#pragma once
#include "engine/core/graph.h"
#include "harness/chain/pipeline_spec.h"

namespace xnn::chain {

// Loads the pipeline's models and builds the bundle. Throws xnn::Error naming FILE:LINE.
Model compose_pipeline(const PipelineSpec& spec);

}  // namespace xnn::chain
