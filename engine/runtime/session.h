// Session: runs a Model. Load once, run many times.
//
// Construction optimises a copy of the graph (engine/passes, --opt-level) and creates the
// thread pool. Preparation (MNN's onResize) happens once per set of input shapes: shapes of
// every tensor are inferred, shape-only computations (Shape -> Gather -> Concat chains) are
// evaluated, a kernel is chosen for every node (CPU backend kernels, else the reference
// kernel), weights are packed, and all intermediate tensors get offsets in one arena from the
// static memory planner. Running (onExecute) then only calls kernels: no shape inference, no
// allocation, no thread creation. Reshape/Flatten/Squeeze/Unsqueeze become views (no copy),
// elementwise ops write in place where their input dies.
//
// Graphs whose shapes depend on tensor values (NonZero, a Reshape fed by computed data) run
// without a static plan: every node is inferred and allocated at run time
// (memory_stats().planned is false).
//
// Control flow (If, Loop, Scan): each subgraph runs in a body session of its own (created by
// the node's SessionSubgraphHost, engine/runtime/subgraph_host.h), optimised and planned like
// the main graph, once per signature of its inputs and outer-scope values, then reused: a Loop
// body is prepared once, not once per iteration. A control-flow node whose output shapes
// inference can tell (If branches that agree, a Loop that keeps its carried shapes, any Scan) is
// one more step of the static plan, and the values its subgraphs read by name stay alive in the
// arena until it has run; otherwise the graph around it runs without a static plan. Not
// planned: outputs a body returns to the kernel (fresh buffers whenever the kernel still holds
// the previous ones), and what If/Loop/Scan stack or copy (their own buffers). Profiles and
// plan summaries show a control-flow node as one step (its subgraphs' nodes are not listed).
//
// Returned output tensors are owned by the caller: the session never overwrites a buffer the
// caller still holds.
#pragma once
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/core/op_registry.h"
#include "engine/core/thread_pool.h"
#include "engine/runtime/value_scope.h"

namespace xnn {

class SessionSubgraphHost;

// Numeric emulation of a narrower float format (a simulated GPU or NPU's arithmetic): float
// weights are rounded to the format when the session is created, graph inputs when a run
// starts, and every float tensor an op produces right after the op. Inside an op the math stays
// fp32 (like GPUs that accumulate in fp32 but store tensors in fp16). Costs a pass over each
// output; meant for accuracy evaluation, not for speed.
enum class FloatEmulation { kNone, kF16, kBF16 };

struct SessionOptions {
  int threads = 1;
  // Time every node of every run (per-op profile); costs two clock reads per node.
  bool profile = false;
  // Graph optimisation level (engine/passes/optimize.h): 0 none, 1 folding and cleanup,
  // 2 also fusion. Levels only change speed, never results beyond float rounding.
  int opt_level = 2;
  // Optimised CPU kernels where they apply (false: every node runs its reference kernel).
  bool cpu_kernels = true;
  // Choose among applicable conv algorithms by timing them at preparation.
  bool tune = false;
  // Plan intermediate tensors into one arena (false: each tensor gets its own buffer, as
  // the reference runtime did; for debugging the planner).
  bool memory_planning = true;
  FloatEmulation float_emulation = FloatEmulation::kNone;
};

// One node's share of the last profiled run.
struct NodeProfile {
  size_t node_index = 0;
  std::string name, op_type, kernel;
  std::vector<Shape> input_shapes, output_shapes;
  double macs = 0, bytes = 0;  // the op's cost model
  double time_ms = 0;
};

struct MemoryStats {
  bool planned = false;            // a static plan exists for the last input shapes
  int64_t arena_bytes = 0;         // planned arena for intermediate tensors
  int64_t lower_bound_bytes = 0;   // liveness lower bound of the same tensors
  int64_t output_bytes = 0;        // graph outputs (owned buffers, outside the arena)
  int64_t weight_bytes = 0;        // constants of the optimised graph
  int planned_tensors = 0;
  int aliased_tensors = 0;   // views (Reshape, Flatten, ...) sharing their input's buffer
  int in_place_tensors = 0;  // elementwise outputs written over a dying input
  int sliced_concats = 0;    // Concats whose inputs were planned as slices of their output...
  int sliced_tensors = 0;    // ...and those inputs, written there by their producers
};

struct IoInfo {
  std::string name;
  DType dtype = DType::kUnknown;
  bool has_shape = false;
  std::vector<Dim> shape;
};

class Session {
 public:
  explicit Session(std::shared_ptr<const Model> model, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::vector<IoInfo>& inputs() const { return inputs_; }
  const std::vector<IoInfo>& outputs() const { return outputs_; }
  // The model as given (before optimisation).
  const Model& model() const { return *model_; }
  // The graph the session runs (after the optimisation passes).
  const Graph& optimized_graph() const { return optimized_->graph; }
  const SessionOptions& options() const { return options_; }

  // Checks inputs against the declared signature: every input present, no unknown names,
  // dtypes equal, known dims equal, a symbolic dim bound to one size across inputs. Throws an
  // Error naming the input and what was expected.
  void check_inputs(const std::map<std::string, Tensor>& inputs) const;

  // Prepares for these input shapes without running (inspect uses it to report the plan).
  // Inputs not listed use their declared shape (which must then be fully known).
  void prepare(const std::map<std::string, Shape>& input_shapes = {});

  // Runs the graph; returns the graph outputs in declaration order.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);
  // Same, keyed by output name.
  std::map<std::string, Tensor> run_named(const std::map<std::string, Tensor>& inputs);

  // What the prepared plan will execute, without running it: one entry per executed node of the
  // optimised graph (views and shape-time nodes left out, as in the profile) with its kernel,
  // shapes and cost; time_ms is 0. Latency predictors featurise models from it. Empty before
  // prepare() and for graphs without a static plan (data-dependent shapes).
  std::vector<NodeProfile> plan_summary() const;

  // dtype and shape of each output for the prepared input shapes (after prepare() or run());
  // empty when there is no static plan (output shapes that depend on values).
  std::vector<TensorInfo> output_infos() const;

  // Per-node timings of the last run (empty unless options.profile).
  const std::vector<NodeProfile>& last_profile() const { return profile_; }
  // The kernel chosen for each node of the optimised graph at the last preparation
  // ("reference" where no CPU kernel applies, "view" for no-copy reshapes, "shape-time" for
  // nodes evaluated at preparation).
  std::vector<std::string> kernel_names() const;
  MemoryStats memory_stats() const;
  // Bytes of intermediate tensors the session holds (the arena when planned).
  int64_t activation_bytes() const;

 private:
  struct Plan;
  void fuse_consumers(Plan& plan) const;
  // Body sessions (subgraphs of a control-flow node) are made by SessionSubgraphHost only.
  friend class SessionSubgraphHost;
  // A body session: `body`'s graph is a subgraph; it shares its parent's thread pool.
  Session(std::shared_ptr<const Model> body, SessionOptions options, ThreadPool* shared_pool);
  void init();
  // Prepares for inputs of these dtypes/shapes and outer-scope values described by `outer`
  // (one per outer_values_; a body session only). Returns the outputs' dtypes and shapes, or
  // throws ValueNeededError when no static plan exists (they depend on run-time values).
  std::vector<TensorInfo> prepare_body(std::span<const TensorInfo> inputs, const ValueScope& outer);
  // Runs a body session: inputs in graph order, outer-scope values found in `outer`.
  std::vector<Tensor> run_body(std::span<const Tensor> inputs, const ValueScope& outer);
  // dtype/shape of each outer-scope value (outer_values_) as `outer` knows it.
  std::vector<TensorInfo> outer_infos(const ValueScope& outer) const;
  void prepare_plan(std::span<const TensorInfo> inputs, std::span<const TensorInfo> outer_infos,
                    const ValueScope* outer);
  // Runs the prepared plan on the inputs (and outer-scope values) bound in its slots, then
  // unbinds them.
  std::vector<Tensor> execute(const ValueScope* outer);
  void run_unplanned(std::vector<Tensor>& slots, const ValueScope* outer);
  // The host running node `node_index`'s subgraphs (created on first use).
  SessionSubgraphHost& host_for(size_t node_index);

  std::shared_ptr<const Model> model_;
  std::shared_ptr<Model> optimized_;
  SessionOptions options_;
  const OpRegistry& registry_;
  std::unique_ptr<ThreadPool> own_pool_;
  ThreadPool* pool_ = nullptr;
  std::vector<IoInfo> inputs_, outputs_;
  std::unique_ptr<Plan> plan_;
  std::vector<NodeProfile> profile_;
  // Control flow: the optimised graph's value index, its outer-scope values (a body session's
  // reads from enclosing graphs), each node's implicit inputs, and one host per control-flow node.
  ValueIndex value_index_;
  std::vector<int> outer_values_;
  std::vector<std::vector<int>> implicit_inputs_;
  std::vector<std::unique_ptr<SessionSubgraphHost>> hosts_;
};

}  // namespace xnn
