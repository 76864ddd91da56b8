// The runtime side of control flow: runs the subgraphs of one control-flow node (If, Loop, Scan)
// for the session that runs the node.
//
// Every subgraph gets a body session (engine/runtime/session.h) on first use, kept for the life
// of the host: optimised like the main graph, prepared for one signature (its inputs' and
// outer-scope values' dtypes and shapes) with a static memory plan and the optimised CPU
// kernels when its shapes are static, and re-prepared only when that signature changes. So a
// Loop body is inferred and planned once, and each iteration only runs kernels; a body whose
// shapes depend on values runs unplanned, like any such graph.
//
// Outer-scope names resolve through the scope chain the host is given (engine/runtime/value_scope.h):
// the running graph's values, then its enclosing graphs'.
#pragma once
#include <map>
#include <memory>

#include "engine/runtime/session.h"
#include "engine/runtime/value_scope.h"

namespace xnn {

class SessionSubgraphHost final : public SubgraphHost {
 public:
  // `opset`: the model's op set version; `options`: the parent session's, which its body
  // sessions share; `pool`: the parent's thread pool (shared, may be null).
  SessionSubgraphHost(int64_t opset, SessionOptions options, ThreadPool* pool);
  ~SessionSubgraphHost() override;

  // The enclosing scope for the next infer/run calls; borrowed, so set it before each use.
  void set_scope(const ValueScope* scope) { scope_ = scope; }

  std::vector<TensorInfo> infer(const Graph& body, std::span<const TensorInfo> inputs) override;
  std::vector<Tensor> run(const Graph& body, std::span<const Tensor> inputs) override;

  // The session running `body`, or null before its first use (tests inspect its plan).
  const Session* body_session(const Graph& body) const;

 private:
  Session& session_for(const Graph& body);
  const ValueScope& scope() const;

  int64_t opset_;
  SessionOptions options_;
  ThreadPool* pool_;
  const ValueScope* scope_ = nullptr;
  std::map<const Graph*, std::unique_ptr<Session>> bodies_;
};

}  // namespace xnn
