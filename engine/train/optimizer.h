// Optimisers for on-device training: SGD and AdamW with the update rules of PyTorch 1.13
// (torch.optim.SGD with dampening 0, torch.optim.AdamW with amsgrad false; maximize, dampening,
// amsgrad are not offered), and gradient clipping as torch.nn.utils.clip_grad_norm_.
//
// Numerics follow PyTorch's single-tensor (foreach=False) CPU path: scalar coefficients
// (bias corrections, 1 - lr*wd, ...) are computed in double and rounded to float once, the
// elementwise updates run in float in the same order of operations as ATen. That is why the
// hyperparameters and the learning rate are doubles (PyTorch's are Python floats); passing a
// float works unchanged. Results agree with PyTorch to float rounding (~1 ulp per operation:
// ATen may fuse a multiply-add where we do not), not bit for bit.
//
// Weight decay applies only to parameters with Parameter::weight_decay == true; the others are
// updated as if weight_decay were 0 (PyTorch: a second param group with weight_decay 0).
//
// Parameters whose grad is undefined are skipped, as PyTorch skips `p.grad is None`: their state
// is neither created nor advanced (AdamW keeps one step count per parameter, as PyTorch does).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/train/parameter.h"

namespace xnn::train {

struct OptimizerConfig {
  std::string type = "sgd";        // "sgd" | "adamw"
  // sgd
  double momentum = 0.9;           // >= 0; 0 = plain SGD (no momentum buffer)
  bool nesterov = false;           // needs momentum > 0
  // both; unset: the PyTorch default of the type (sgd 0, adamw 0.01). >= 0.
  std::optional<double> weight_decay;
  // adamw
  double beta1 = 0.9;              // [0, 1)
  double beta2 = 0.999;            // [0, 1)
  double eps = 1e-8;               // >= 0
};

// Optimiser state for checkpoints: (key, tensor) pairs, sorted by key. Keys:
//   "steps_taken"                  i64 scalar, calls of step() so far (both types)
//   "<param>/momentum_buffer"      f32, param's shape (sgd with momentum > 0)
//   "<param>/exp_avg"              f32, param's shape (adamw)
//   "<param>/exp_avg_sq"           f32, param's shape (adamw)
//   "<param>/step"                 i64 scalar, steps this parameter took (adamw)
// A parameter has entries once it has been updated at least once.
using OptimizerState = std::vector<std::pair<std::string, Tensor>>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // One update of every parameter with a defined grad, at learning rate `lr` (finite, >= 0).
  // State is created lazily per parameter name. Throws xnn::Error (naming the parameter) for a
  // value that is not f32, a grad whose dtype/shape differs from the value, two parameters with
  // the same name, or state whose shape no longer matches its parameter (e.g. after load_state:
  // the message names the state key and the expected shape). Parameters are validated before
  // anything is updated, so a throwing step changes nothing.
  virtual void step(std::span<Parameter> params, double lr) = 0;

  // "sgd(momentum=0.9,nesterov=1,weight_decay=0.0005)", "adamw(beta1=0.9,beta2=0.999,eps=1e-08,weight_decay=0.01)"
  virtual std::string describe() const = 0;

  // Deep copies of all state (see OptimizerState). Restoring it into an optimiser made from the
  // same config continues bit-exactly.
  virtual OptimizerState state() const = 0;
  // Replaces all state with `state` (deep-copied). Throws xnn::Error naming the key for a key
  // this optimiser does not use (with the expected keys), a wrong dtype or shape (with the
  // expected one), a missing "steps_taken", or an exp_avg without its exp_avg_sq and step (or
  // the other way round). On error the previous state is kept. Shapes against the parameters
  // are checked by the next step().
  virtual void load_state(const OptimizerState& state) = 0;

  virtual int64_t steps_taken() const = 0;
};

// Validates the config (names the option and its range) and builds the optimiser.
// Unknown type -> xnn::Error naming the allowed values.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config);

// torch.nn.utils.clip_grad_norm_ (L2): total = sqrt(sum over parameters of ||grad||^2) over the
// parameters with a defined grad; scale = max_norm / (total + 1e-6); when scale < 1 every grad
// is multiplied by it. Returns the total norm before clipping (0 when no parameter has a grad).
// As in PyTorch, a non-finite total norm is not an error: the grads are scaled by the resulting
// NaN (total NaN) or 0 (total +inf) scale; check the returned norm with std::isfinite before
// stepping. max_norm must be finite and > 0. Grads must be f32.
float clip_grad_norm(std::span<Parameter> params, double max_norm);

}  // namespace xnn::train
