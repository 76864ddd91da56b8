// Reverse-mode autodiff over the engine IR: the backward half of each op, declared beside the
// op's forward declaration in the op registry (which stays the single source of schema, shape
// inference, cost and reference kernel).
//
// A GradOp says which inputs are differentiable, optionally replaces the forward kernel in
// training (BatchNormalization uses batch statistics, Dropout draws a mask, Conv and Gemm use
// the fast GEMM), and gives the backward kernel: from the forward inputs, outputs and the
// gradients of the outputs it writes the gradients of the inputs. Backward kernels OVERWRITE
// their grad_inputs; the training session accumulates where a value feeds several nodes.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/core/thread_pool.h"
#include "engine/kernels/activation.h"

namespace xnn::train {

// Tensors an op keeps from its forward pass for its backward pass (BatchNorm's batch mean and
// inverse std, Dropout's mask, per-thread partial weight gradients ...). Owned by the session,
// one per node, reused across steps: kernels (re)allocate only when a shape changes.
struct NodeState {
  std::deque<Tensor> saved;  // a deque: growing it keeps references to earlier slots valid
  Tensor& slot(size_t i, DType dtype, const Shape& shape);  // allocated on first use / shape change
};

struct ForwardContext {
  const Node& node;
  std::span<const Tensor* const> inputs;  // null: optional input left out
  std::span<Tensor* const> outputs;       // allocated with the inferred dtype and shape
  bool training;                          // false: inference semantics (running statistics, no dropout)
  uint64_t step_seed;                     // differs per step; random ops derive their draws from it
  NodeState& state;
  ThreadPool* pool;
  // The op's GradOp fuses_activation and the session fused the activation node that alone
  // consumes output 0 (null: none): outputs[0] is that node's output, to be written as
  // act(op(x)).
  const kernels::Activation* fused_act = nullptr;
  // Also fused (GradOp::fuses_activation_maxpool): a 2×2 stride-2 MaxPool (no padding, floor
  // mode) that alone consumes the activation's output. outputs[0] is then the pool's output; the
  // op records each window's winning tap (as the MaxPool's training forward does) for its backward.
  bool fused_maxpool = false;
  // Batch statistics handed from a producer to its consumer (GradOp::emits_output_stats /
  // takes_input_stats), training mode only. The producer writes, for every image n and channel
  // c of output 0, the shifted sums Σ (y − s) and Σ (y − s)² of that plane, s its first value,
  // at output_stats[(n·C + c)·3 + {0, 1, 2}] = {sum, sum of squares, s}, while the plane is
  // still in its cache; the consumer (BatchNormalization) reads them from input_stats instead
  // of sweeping its input once more.
  float* output_stats = nullptr;
  const float* input_stats = nullptr;
};

struct BackwardContext {
  const Node& node;
  std::span<const Tensor* const> inputs;
  std::span<const Tensor* const> outputs;
  std::span<const Tensor* const> grad_outputs;  // null where no gradient flows back from that output
  std::span<Tensor* const> grad_inputs;         // null where none is needed; else shaped like the input
  NodeState& state;
  ThreadPool* pool;
  // Fused activation (see ForwardContext): outputs[0] is its output and grad_outputs[0] that
  // output's gradient; the op's own output gradient is grad_outputs[0]·act'(its output).
  const kernels::Activation* fused_act = nullptr;
  // Fused activation + 2×2 MaxPool: outputs[0] and grad_outputs[0] are the pool's.
  bool fused_maxpool = false;

  bool wants(int i) const {
    return i >= 0 && i < static_cast<int>(grad_inputs.size()) && grad_inputs[static_cast<size_t>(i)] != nullptr;
  }
  Tensor& grad_input(int i) const { return *grad_inputs[static_cast<size_t>(i)]; }
  const Tensor& input(int i) const { return *inputs[static_cast<size_t>(i)]; }
  bool has_input(int i) const {
    return i >= 0 && i < static_cast<int>(inputs.size()) && inputs[static_cast<size_t>(i)] != nullptr &&
           inputs[static_cast<size_t>(i)]->defined();
  }
  const Tensor& output(int i) const { return *outputs[static_cast<size_t>(i)]; }
  const Tensor& grad_output(int i) const { return *grad_outputs[static_cast<size_t>(i)]; }
  [[noreturn]] void unsupported(const std::string& msg) const;
};

using ForwardFn = std::function<void(ForwardContext&)>;
using BackwardFn = std::function<void(BackwardContext&)>;

struct GradOp {
  std::string type;                        // default ONNX domain op type
  std::vector<int> differentiable_inputs;  // inputs that receive gradients (others: indices, shapes, stats)
  ForwardFn forward;                       // empty: the op's reference kernel in training too
  BackwardFn backward;
  // forward and backward implement a fused trailing activation (ForwardContext::fused_act; the
  // kinds kernels::training_fusable accepts): the session then runs an activation node (Relu,
  // Clip, LeakyRelu, HardSwish, HardSigmoid) that alone consumes this op's output 0 inside it,
  // saving a pass over the activations each way and the intermediate tensor.
  bool fuses_activation = false;
  // ... and a 2×2 stride-2 MaxPool that alone consumes that activation's output (the conv-block
  // tail Conv → BatchNorm → Relu → MaxPool): neither the activation's output nor its gradient is
  // then materialised.
  bool fuses_activation_maxpool = false;
  // Output statistics (ForwardContext::output_stats): the forward can write them; the session
  // asks for them when the output feeds only an op that takes_input_stats.
  bool emits_output_stats = false;
  bool takes_input_stats = false;
};

class GradRegistry {
 public:
  static const GradRegistry& builtin();
  void add(GradOp op);  // throws on a duplicate
  void add(GradOp op, const std::string& domain);  // an op of another domain (ai.xnn FakeQuantize)
  const GradOp* find(const std::string& type) const;  // default domain
  const GradOp* find(const Node& node) const;          // by the node's domain and op type
  std::vector<std::string> op_types() const;

 private:
  std::map<std::string, GradOp> ops_;
};

// One per file (grad_*.cpp); builtin() calls them all.
void register_activation_grads(GradRegistry& r);
void register_elementwise_grads(GradRegistry& r);
void register_conv_grads(GradRegistry& r);
void register_gemm_grads(GradRegistry& r);
void register_normalization_grads(GradRegistry& r);
void register_pool_grads(GradRegistry& r);
void register_shape_grads(GradRegistry& r);
void register_quantize_grads(GradRegistry& r);

// Sums `grad` (shaped like a broadcast result) over the broadcast dims into `out`, whose shape
// is the operand's (numpy broadcasting: leading dims and size-1 dims are summed).
void reduce_to_shape(const Tensor& grad, Tensor& out);

}  // namespace xnn::train
