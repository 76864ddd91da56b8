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

 private:
  std::shared_ptr<const Model> model_;
  SessionOptions options_;
  const OpRegistry& registry_;
  std::vector<IoInfo> inputs_, outputs_;
  std::vector<Tensor> slots_;  // one per graph value; constants bound once
};

}  // namespace xnn
