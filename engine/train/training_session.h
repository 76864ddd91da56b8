// TrainingSession: forward, softmax cross-entropy loss and backward over a model's graph, with
// the model's float initialisers as trainable parameters (updated in place, so the graph is the
// trained model afterwards: saving or exporting it needs no copy-back).
//
// Like the inference Session, preparation is split from execution: prepare() for one input
// shape infers every shape, allocates every activation, gradient and saved tensor once, and
// decides which values need gradients; a step then only runs kernels. Batches of a new shape
// (the last, partial batch of an epoch; an evaluation batch) get their own plan, kept for reuse.
//
// Training keeps every activation alive until the backward pass, so it does not use the
// inference memory planner; the models trained on-device are small.
#pragma once
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/core/thread_pool.h"
#include "engine/train/autograd.h"
#include "engine/train/parameter.h"

namespace xnn::train {

struct TrainingOptions {
  int threads = 1;
  uint64_t seed = 0;             // dropout masks; with the same threads a run is reproducible
  float label_smoothing = 0.0f;  // as torch.nn.CrossEntropyLoss(label_smoothing=...)
};

// One node's accumulated training time (profiling on): forward in training mode and backward,
// summed over the steps since profiling was switched on.
struct TrainNodeProfile {
  std::string name, op_type;
  double forward_ms = 0, backward_ms = 0;
};

struct StepResult {
  float loss = 0;        // mean softmax cross-entropy over the batch
  int64_t correct = 0;   // top-1 hits in the batch (from the training-mode logits)
  int64_t count = 0;
};

// Mean softmax cross-entropy of logits [N, K] against labels (i64 [N]); writes d(loss)/d(logits)
// into `grad` (shaped like logits) when it is non-null. `correct` receives the top-1 hits.
float softmax_cross_entropy(const Tensor& logits, const Tensor& labels, float label_smoothing, Tensor* grad,
                            int64_t* correct);

class TrainingSession {
 public:
  // Float initialisers of rank >= 1 that feed a differentiable input become parameters (so a
  // BatchNorm's running statistics, shape tensors and indices do not). The graph must have one
  // runtime input; its first output gives the logits (if that output is a Softmax or LogSoftmax,
  // the loss is taken on its input, which is what the model was trained to produce).
  TrainingSession(std::shared_ptr<Model> model, TrainingOptions options = {});
  ~TrainingSession();

  std::span<Parameter> parameters() { return params_; }
  const Model& model() const { return *model_; }
  ThreadPool* pool() { return pool_.get(); }
  int64_t parameter_count() const;

  // Forward in training mode, loss, backward: every Parameter::grad holds d(loss)/d(param).
  StepResult train_step(const Tensor& input, const Tensor& labels);
  // The training-mode loss alone (no backward, the step counter unchanged, so Dropout draws the
  // same mask as the next train_step would): what gradient checks difference.
  float training_loss(const Tensor& input, const Tensor& labels);
  // Inference-mode forward (running statistics, no dropout) up to the logits (a trailing Softmax
  // is not run). The returned logits stay valid until the next call.
  const Tensor& predict(const Tensor& input);
  // Per-node timing of train_step (two clock reads per node and pass). Switching it on clears
  // what was accumulated; loss_ms is the softmax cross-entropy's share.
  void set_profiling(bool on);
  bool profiling() const { return profiling_; }
  const std::vector<TrainNodeProfile>& profile() const { return profile_; }
  double profile_loss_ms() const { return profile_loss_ms_; }
  int64_t profiled_steps() const { return profiled_steps_; }

  int64_t steps_taken() const { return steps_; }
  void set_steps_taken(int64_t steps) { steps_ = steps; }  // for resumed runs (dropout draws)

  // The value the loss is taken on (the first graph output, or the input of a trailing Softmax).
  const std::string& logits_value_name() const;

 private:
  struct Plan;
  Plan& plan_for(const Shape& input_shape);
  void forward(Plan& plan, const Tensor& input, bool training, bool timed = false);
  void backward(Plan& plan);

  std::shared_ptr<Model> model_;
  TrainingOptions options_;
  std::unique_ptr<ThreadPool> pool_;
  std::vector<Parameter> params_;
  std::map<int, size_t> param_of_value_;  // value index -> params_ index
  int input_value_ = -1;
  int logits_value_ = -1;
  int last_node_ = -1;  // nodes after this one (a trailing Softmax) are skipped in training
  std::map<Shape, std::unique_ptr<Plan>> plans_;
  std::vector<NodeState> node_state_;
  // Activation fusion (GradOp::fuses_activation): per node, the activation node that runs inside
  // it (-1: none) and what it computes, the 2×2 MaxPool after that activation that runs inside it
  // too (-1: none), and whether a node is such an activation or MaxPool (then it is skipped in
  // both passes). Decided once per graph.
  std::vector<int> fused_act_node_;
  std::vector<kernels::Activation> fused_act_;
  std::vector<int> fused_pool_of_;
  std::vector<char> unmaterialised_;  // per value: inside a fused chain, no tensor of its own
  std::vector<int> consumers_;        // per value: nodes reading it (+1 for a graph output)
  std::vector<int> stats_consumer_;   // per node: the node its output-0 statistics go to (-1: none)
  std::vector<int> stats_producer_;   // per node: the node handing it its input statistics (-1: none)
  std::vector<char> fused_away_;
  void plan_relu_fusion();
  int output_value(int node, size_t output) const;  // the value a node's output writes to
  int64_t steps_ = 0;
  bool profiling_ = false;
  std::vector<TrainNodeProfile> profile_;  // per node (empty unless profiling)
  double profile_loss_ms_ = 0;
  int64_t profiled_steps_ = 0;
};

}  // namespace xnn::train
