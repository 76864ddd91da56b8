// Session: runs a Model. Load once, run many times; input shapes may change between runs
// (symbolic dims are fixed by the inputs given), and intermediate buffers are reused between
// runs of the same shapes.
//
// Returned output tensors are owned by the caller: the session never overwrites a buffer the
// caller still holds.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/core/op_registry.h"

namespace xnn {

struct SessionOptions {
  int threads = 1;
  // Time every node of every run (per-op profile); costs two clock reads per node.
  bool profile = false;
};

// One node's share of the last profiled run.
struct NodeProfile {
  size_t node_index = 0;
  std::string name, op_type, kernel;
  std::vector<Shape> input_shapes, output_shapes;
  double time_ms = 0;
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

  const std::vector<IoInfo>& inputs() const { return inputs_; }
  const std::vector<IoInfo>& outputs() const { return outputs_; }
  const Model& model() const { return *model_; }

  // Checks inputs against the declared signature: every input present, no unknown names,
  // dtypes equal, known dims equal, a symbolic dim bound to one size across inputs. Throws an
  // Error naming the input and what was expected.
  void check_inputs(const std::map<std::string, Tensor>& inputs) const;

  // Runs the graph; returns the graph outputs in declaration order.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);
  // Same, keyed by output name.
  std::map<std::string, Tensor> run_named(const std::map<std::string, Tensor>& inputs);

  // Per-node timings of the last run (empty unless options.profile).
  const std::vector<NodeProfile>& last_profile() const { return profile_; }
  // Bytes of all non-constant tensors the session holds after a run (the reference runtime
  // keeps every intermediate; the memory planner replaces this with an arena).
  int64_t activation_bytes() const;

 private:
  std::shared_ptr<const Model> model_;
  SessionOptions options_;
  const OpRegistry& registry_;
  std::vector<IoInfo> inputs_, outputs_;
  std::vector<Tensor> slots_;  // one per graph value; constants bound once
  std::vector<NodeProfile> profile_;
};

}  // namespace xnn
