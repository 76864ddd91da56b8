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

// What a control-flow op (If, Loop, Scan) needs from whoever runs it: its subgraphs inferred
// and executed with the values of the enclosing graphs visible by name (a subgraph's
// outer-scope values). The runtime implements it (engine/runtime/subgraph_host.h) and hands one
// to the op's inference and kernel through their contexts; ops without subgraphs never see it.
class SubgraphHost {
 public:
  virtual ~SubgraphHost() = default;
  // dtype and shape of `body`'s outputs when its graph inputs have these dtypes and shapes.
  // Throws ValueNeededError when they depend on values only known at run time.
  virtual std::vector<TensorInfo> infer(const Graph& body, std::span<const TensorInfo> inputs) = 0;
  // Runs `body` with its graph inputs bound to `inputs` in order; returns its outputs in order.
  virtual std::vector<Tensor> run(const Graph& body, std::span<const Tensor> inputs) = 0;
};

class InferContext {
 public:
  InferContext(const Node& node, std::span<const TensorInfo> inputs, std::vector<TensorInfo>& outputs)
      : node_(node), inputs_(inputs), outputs_(outputs) {}

  const Node& node() const { return node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // Control-flow ops only: infers their subgraphs (null where nobody can, e.g. constant folding).
  SubgraphHost* subgraphs() const { return subgraphs_; }
  void set_subgraphs(SubgraphHost* host) { subgraphs_ = host; }
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
  SubgraphHost* subgraphs_ = nullptr;
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
  // Control-flow ops only: runs their subgraphs (see SubgraphHost).
  SubgraphHost* subgraphs() const { return subgraphs_; }
  void set_subgraphs(SubgraphHost* host) { subgraphs_ = host; }
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
  // Outputs arrive allocated with the inferred dtype and shape. Control-flow ops are the
  // exception: an output may arrive undefined (its shape was not known before running the
  // subgraph), and the kernel then assigns it.
  Tensor& output(int i) const;
  [[noreturn]] void fail(const std::string& msg) const;
  [[noreturn]] void unsupported(const std::string& msg) const;

 private:
  const Node& node_;
  std::span<const Tensor* const> inputs_;
  std::span<Tensor* const> outputs_;
  ThreadPool* pool_ = nullptr;
  SubgraphHost* subgraphs_ = nullptr;
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
  // Control-flow ops (If/Loop/Scan) run subgraphs: their inference and kernel get a
  // SubgraphHost, their kernel may find outputs undefined (see KernelContext::output), and
  // passes that evaluate nodes on their own (constant folding) leave them alone.
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
void register_control_flow_ops(OpRegistry& r);  // If, Loop, Scan (engine/ops/control_flow.cpp)

// Runs `schema.infer` for `node`; checks the arity first. Throws naming the node. `subgraphs`
// is what a control-flow node's inference uses to infer its subgraphs.
std::vector<TensorInfo> infer_node(const OpSchema& schema, const Node& node,
                                   std::span<const TensorInfo> inputs, int num_outputs,
                                   SubgraphHost* subgraphs = nullptr);

}  // namespace xnn
