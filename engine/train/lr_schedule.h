// Learning-rate schedules: the learning rate of optimiser step `step` (counted from 0), as a pure
// function of the step, so a resumed run needs only the step count. Closed forms in double, as
// PyTorch computes them in Python floats:
//
//   constant   base_lr
//   cosine     torch.optim.lr_scheduler.CosineAnnealingLR(T_max=total_steps, eta_min=min_lr),
//              closed form  min_lr + (base_lr - min_lr) * (1 + cos(pi * step / total_steps)) / 2,
//              optionally after a linear warmup: base_lr * step / warmup_steps for
//              step < warmup_steps (0 at step 0), then the cosine over the remaining
//              total_steps - warmup_steps steps (step - warmup_steps in place of step).
//              Beyond total_steps: min_lr (PyTorch's cosine would rise again: it is periodic).
//   onecycle   torch.optim.lr_scheduler.OneCycleLR(max_lr=base_lr, total_steps, pct_start,
//              anneal_strategy='cos', div_factor, final_div_factor, three_phase=False):
//              initial_lr = base_lr / div_factor, min_lr = initial_lr / final_div_factor;
//              phase 1 ends at step pct_start * total_steps - 1 (initial_lr -> base_lr), phase 2
//              at total_steps - 1 (base_lr -> min_lr), cosine interpolation within each.
//              Steps from total_steps - 1 on return the value at total_steps - 1 (min_lr unless
//              pct_start == 1); PyTorch extrapolates the cosine at step total_steps and raises
//              beyond. A zero-length phase (pct_start * total_steps == 1) gives its end value
//              at its end step, where PyTorch divides by zero.
//              Momentum cycling (OneCycleLR's cycle_momentum) is not implemented: the optimiser
//              keeps its configured momentum / beta1 throughout.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace xnn::train {

struct ScheduleConfig {
  std::string type = "constant";  // constant | cosine | onecycle
  double base_lr = 0.01;          // the lr (constant), the peak (cosine), max_lr (onecycle); >= 0
  double min_lr = 0.0;            // cosine only: [0, base_lr]
  int64_t total_steps = 0;        // cosine, onecycle: > 0
  int64_t warmup_steps = 0;       // cosine only: [0, total_steps)
  double pct_start = 0.3;         // onecycle: [0, 1]
  double div_factor = 25.0;       // onecycle: > 0
  double final_div_factor = 1e4;  // onecycle: > 0
};

class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  // The lr of optimiser step `step` (>= 0; a negative step throws xnn::Error).
  virtual double lr_at(int64_t step) const = 0;
  // "cosine(base_lr=0.1,min_lr=0,total_steps=1000,warmup_steps=100)" and the like.
  virtual std::string describe() const = 0;
};

// Validates the config and builds the schedule. Errors (xnn::Error) name the option, its value
// and the expected range: an unknown type (with the allowed ones), total_steps <= 0 for cosine
// and onecycle, warmup_steps outside [0, total_steps), min_lr outside [0, base_lr], options
// that the type does not use set to non-default values (warmup_steps or min_lr for onecycle,
// warmup_steps for constant), non-finite values.
std::unique_ptr<LrSchedule> make_schedule(const ScheduleConfig& config);

}  // namespace xnn::train
