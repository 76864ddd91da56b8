// The op registry: every op is declared exactly once, with
//   - its schema (input/output arity),
//   - shape and dtype inference (on concrete shapes; input values are visible where known,
//     which is how Reshape/Expand/Slice/... learn their output shapes),
//   - a cost model (MACs, bytes read, bytes written) used by inspect and the latency model,
//   - a readable reference kernel (the oracle every optimised kernel is tested against).
// Optimised backends add kernels beside an op; they never redeclare it.
//
// One semantics per op: kernels implement the current ONNX definition (opset 13 and later;
// where opset 18 moved an attribute to an input, e.g. Reduce* `axes`, both forms are
// accepted). The ONNX importer rewrites older forms (Softmax's 2-D coercion before opset 13,
// Upsample, Pad/Slice/Clip attributes before opsets 10/11, Resize-10) into that one form.
#pragma once
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/core/thread_pool.h"

namespace xnn {

// What inference knows about one tensor: dtype, concrete shape, and its value when known
// (a constant at import time; always at run time).
struct TensorInfo {
  DType dtype = DType::kUnknown;
  Shape shape;
  const Tensor* value = nullptr;
};

class InferContext {
 public:
  InferContext(const Node& node, std::span<const TensorInfo> inputs, std::vector<TensorInfo>& outputs)
      : node_(node), inputs_(inputs), outputs_(outputs) {}

  const Node& node() const { return node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // An optional input may be absent (left out, or beyond the inputs given).
  bool has_input(int i) const {
    return i >= 0 && i < num_inputs() && inputs_[static_cast<size_t>(i)].dtype != DType::kUnknown;
  }
  const TensorInfo& input(int i) const;  // throws naming the node if absent
  // The input's value, or throws "needs a constant/known value for input i".
  const Tensor& input_value(int i) const;
  void set_output(int i, DType dtype, Shape shape);

  // Throws Error("<node>: <msg>").
  [[noreturn]] void fail(const std::string& msg) const;
  // Throws UnsupportedError("<node>: <msg>") — for a legal ONNX case we have no kernel for.
  [[noreturn]] void unsupported(const std::string& msg) const;

 private:
  const Node& node_;
  std::span<const TensorInfo> inputs_;
  std::vector<TensorInfo>& outputs_;
};

struct OpCost {
  double macs = 0;           // multiply-accumulates (elementwise ops count one op per output)
  double bytes_read = 0;
  double bytes_written = 0;
};

class KernelContext {
 public:
  KernelContext(const Node& node, std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
                ThreadPool* pool = nullptr)
      : node_(node), inputs_(inputs), outputs_(outputs), pool_(pool) {}

  const Node& node() const { return node_; }
  // The session's thread pool (null: run serially). Reference kernels ignore it.
  ThreadPool* pool() const { return pool_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  bool has_input(int i) const {
    return i >= 0 && i < num_inputs() && inputs_[static_cast<size_t>(i)] != nullptr &&
           inputs_[static_cast<size_t>(i)]->defined();
  }
  const Tensor& input(int i) const;
  bool has_output(int i) const {
    return i >= 0 && i < num_outputs() && outputs_[static_cast<size_t>(i)] != nullptr;
  }
  // Outputs arrive allocated with the inferred dtype and shape.
  Tensor& output(int i) const;
  [[noreturn]] void fail(const std::string& msg) const;
  [[noreturn]] void unsupported(const std::string& msg) const;

 private:
  const Node& node_;
  std::span<const Tensor* const> inputs_;
  std::span<Tensor* const> outputs_;
  ThreadPool* pool_ = nullptr;
};

using InferFn = std::function<void(InferContext&)>;
using CostFn = std::function<OpCost(const Node&, std::span<const TensorInfo> inputs,
                                    std::span<const TensorInfo> outputs)>;
using KernelFn = std::function<void(KernelContext&)>;

struct OpSchema {
  std::string type;          // ONNX op type, e.g. "Conv"
  std::string domain;        // "" for the default ONNX domain
  int min_inputs = 1;
  int max_inputs = 1;        // kVariadic: any number
  int min_outputs = 1;
  int max_outputs = 1;
  InferFn infer;
  CostFn cost;               // empty: default_cost
  KernelFn reference;
  // Control-flow ops (If/Loop) run subgraphs and are executed by the runtime itself.
  bool has_subgraphs = false;
  std::string doc;

  static constexpr int kVariadic = 1 << 20;
};

// Default cost: one op per output element, all inputs read once, all outputs written once.
OpCost default_cost(const Node& node, std::span<const TensorInfo> inputs, std::span<const TensorInfo> outputs);

class OpRegistry {
 public:
  // The registry with every built-in op (registered on first use).
  static const OpRegistry& builtin();

  void add(OpSchema schema);  // throws on a duplicate
  const OpSchema* find(const std::string& type, const std::string& domain = "") const;
  std::vector<std::string> op_types() const;

 private:
  std::map<std::string, OpSchema> ops_;  // key: domain + ":" + type
};

// Each op family file provides one of these; builtin() calls them all (explicit, so no op
// silently disappears at link time as static registrars in a static library would).
void register_elementwise_ops(OpRegistry& r);
void register_nn_ops(OpRegistry& r);
void register_tensor_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_fused_ops(OpRegistry& r);  // ai.xnn FusedConv/FusedGemm; after Conv and Gemm

// Runs `schema.infer` for `node`; checks the arity first. Throws naming the node.
std::vector<TensorInfo> infer_node(const OpSchema& schema, const Node& node,
                                   std::span<const TensorInfo> inputs, int num_outputs);

}  // namespace xnn
