// The float graph the quantiser calibrates and rewrites: a copy of the model optimised at level 1
// (constants folded, BatchNormalization folded into the convolutions before it, Identity/Dropout
// and dead code removed) but without activation fusion, so Relu/Clip stay separate nodes whose
// output ranges calibration can observe. Every node gets a unique, non-empty name, the handle
// --exclude, the sensitivity table and mixed precision use.
#pragma once
#include <memory>

#include "engine/core/graph.h"

namespace xnn::quantize {

std::shared_ptr<Model> prepare_float_model(const Model& model);

}  // namespace xnn::quantize
