// A trainable tensor and its gradient: what autograd fills and optimisers update. The value
// aliases the graph's initialiser storage (training updates the model in place), so exporting
// the graph after training needs no copy-back.
#pragma once
#include <string>

#include "engine/core/tensor.h"

namespace xnn::train {

struct Parameter {
  std::string name;            // the graph value's name (checkpoints and optimiser state key on it)
  Tensor value;                // f32, updated in place by the optimiser
  Tensor grad;                 // f32, same shape; autograd overwrites it every step
  bool weight_decay = true;    // false for biases and normalisation scales/shifts (rank <= 1)
};

}  // namespace xnn::train
