#include "engine/train/lr_schedule.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

#include "engine/core/error.h"

namespace xnn::train {
namespace {

std::string num(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general);
  return std::string(buf, r.ptr);
}

void check_step(int64_t step) {
  if (step < 0) throw Error("lr schedule: step must be >= 0, got " + std::to_string(step));
}

class ConstantSchedule final : public LrSchedule {
 public:
  explicit ConstantSchedule(double lr) : lr_(lr) {}
  double lr_at(int64_t step) const override {
    check_step(step);
    return lr_;
  }
  std::string describe() const override { return "constant(lr=" + num(lr_) + ")"; }

 private:
  double lr_;
};

class CosineSchedule final : public LrSchedule {
 public:
  CosineSchedule(double base_lr, double min_lr, int64_t total_steps, int64_t warmup_steps)
      : base_lr_(base_lr), min_lr_(min_lr), total_steps_(total_steps), warmup_steps_(warmup_steps) {}

  double lr_at(int64_t step) const override {
    check_step(step);
    if (step < warmup_steps_) return base_lr_ * static_cast<double>(step) / static_cast<double>(warmup_steps_);
    // CosineAnnealingLR's closed form, in its order of operations; clamped at total_steps.
    const double t = static_cast<double>(std::min(step, total_steps_) - warmup_steps_);
    const double t_max = static_cast<double>(total_steps_ - warmup_steps_);
    return min_lr_ + (base_lr_ - min_lr_) * (1.0 + std::cos(std::numbers::pi * t / t_max)) / 2.0;
  }

  std::string describe() const override {
    return "cosine(base_lr=" + num(base_lr_) + ",min_lr=" + num(min_lr_) + ",total_steps=" +
           std::to_string(total_steps_) + ",warmup_steps=" + std::to_string(warmup_steps_) + ")";
  }

 private:
  double base_lr_, min_lr_;
  int64_t total_steps_, warmup_steps_;
};

// OneCycleLR's learning rate only (cycle_momentum is out of scope: the optimiser's momentum / beta1
// stays as configured).
class OneCycleSchedule final : public LrSchedule {
 public:
  OneCycleSchedule(double max_lr, int64_t total_steps, double pct_start, double div_factor, double final_div_factor)
      : max_lr_(max_lr),
        total_steps_(total_steps),
        pct_start_(pct_start),
        div_factor_(div_factor),
        final_div_factor_(final_div_factor),
        initial_lr_(max_lr / div_factor),
        min_lr_(initial_lr_ / final_div_factor),
        phase1_end_(pct_start * static_cast<double>(total_steps) - 1.0),
        phase2_end_(static_cast<double>(total_steps - 1)) {}

  double lr_at(int64_t step) const override {
    check_step(step);
    const double s = static_cast<double>(std::min(step, total_steps_ - 1));
    double start_step, end_step, start_lr, end_lr;
    if (s <= phase1_end_) {
      start_step = 0.0, end_step = phase1_end_, start_lr = initial_lr_, end_lr = max_lr_;
    } else {
      start_step = phase1_end_, end_step = phase2_end_, start_lr = max_lr_, end_lr = min_lr_;
    }
    // A zero-length phase is reached only at its end step: its end value (PyTorch divides by 0).
    const double pct = end_step == start_step ? 1.0 : (s - start_step) / (end_step - start_step);
    // OneCycleLR._annealing_cos
    const double cos_out = std::cos(std::numbers::pi * pct) + 1.0;
    return end_lr + (start_lr - end_lr) / 2.0 * cos_out;
  }

  std::string describe() const override {
    return "onecycle(max_lr=" + num(max_lr_) + ",total_steps=" + std::to_string(total_steps_) +
           ",pct_start=" + num(pct_start_) + ",div_factor=" + num(div_factor_) +
           ",final_div_factor=" + num(final_div_factor_) + ")";
  }

 private:
  double max_lr_;
  int64_t total_steps_;
  double pct_start_, div_factor_, final_div_factor_;
  double initial_lr_, min_lr_, phase1_end_, phase2_end_;
};

void require(bool ok, const std::string& msg) {
  if (!ok) throw Error("lr schedule " + msg);
}

}  // namespace

std::unique_ptr<LrSchedule> make_schedule(const ScheduleConfig& c) {
  const std::string& type = c.type;
  if (type != "constant" && type != "cosine" && type != "onecycle")
    throw Error("unknown lr schedule type '" + type + "' (expected one of: constant, cosine, onecycle)");
  require(std::isfinite(c.base_lr) && c.base_lr >= 0.0,
          "base_lr must be a finite number >= 0, got " + num(c.base_lr));
  if (type == "constant") {
    require(c.warmup_steps == 0, "warmup_steps is only used by type cosine, got " + std::to_string(c.warmup_steps) +
                                     " with type constant");
    return std::make_unique<ConstantSchedule>(c.base_lr);
  }
  require(c.total_steps > 0, "total_steps must be > 0 for type " + type + ", got " + std::to_string(c.total_steps));
  if (type == "cosine") {
    require(c.warmup_steps >= 0 && c.warmup_steps < c.total_steps,
            "warmup_steps must be in [0, total_steps) = [0, " + std::to_string(c.total_steps) + "), got " +
                std::to_string(c.warmup_steps));
    require(std::isfinite(c.min_lr) && c.min_lr >= 0.0 && c.min_lr <= c.base_lr,
            "min_lr must be in [0, base_lr] = [0, " + num(c.base_lr) + "], got " + num(c.min_lr));
    return std::make_unique<CosineSchedule>(c.base_lr, c.min_lr, c.total_steps, c.warmup_steps);
  }
  // onecycle
  require(c.warmup_steps == 0, "warmup_steps is only used by type cosine (onecycle warms up over pct_start), got " +
                                   std::to_string(c.warmup_steps) + " with type onecycle");
  require(c.min_lr == 0.0, "min_lr is not used by type onecycle (its minimum is base_lr / div_factor / "
                           "final_div_factor), got " + num(c.min_lr));
  require(c.pct_start >= 0.0 && c.pct_start <= 1.0, "pct_start must be in [0, 1], got " + num(c.pct_start));
  require(std::isfinite(c.div_factor) && c.div_factor > 0.0,
          "div_factor must be a finite number > 0, got " + num(c.div_factor));
  require(std::isfinite(c.final_div_factor) && c.final_div_factor > 0.0,
          "final_div_factor must be a finite number > 0, got " + num(c.final_div_factor));
  return std::make_unique<OneCycleSchedule>(c.base_lr, c.total_steps, c.pct_start, c.div_factor,
                                            c.final_div_factor);
}

}  // namespace xnn::train
