#include "engine/runtime/subgraph_host.h"

namespace xnn {

SessionSubgraphHost::SessionSubgraphHost(int64_t opset, SessionOptions options, ThreadPool* pool)
    : opset_(opset), options_(options), pool_(pool) {
  options_.profile = false;  // profiles list the control-flow node as one step
}

SessionSubgraphHost::~SessionSubgraphHost() = default;

const ValueScope& SessionSubgraphHost::scope() const {
  static const ValueScope kEmpty;
  return scope_ ? *scope_ : kEmpty;
}

Session& SessionSubgraphHost::session_for(const Graph& body) {
  auto it = bodies_.find(&body);
  if (it != bodies_.end()) return *it->second;
  auto model = std::make_shared<Model>();
  model->graph = body;
  model->opset = opset_;
  std::unique_ptr<Session> s(new Session(std::move(model), options_, pool_));
  return *bodies_.emplace(&body, std::move(s)).first->second;
}

std::vector<TensorInfo> SessionSubgraphHost::infer(const Graph& body, std::span<const TensorInfo> inputs) {
  return session_for(body).prepare_body(inputs, scope());
}

std::vector<Tensor> SessionSubgraphHost::run(const Graph& body, std::span<const Tensor> inputs) {
  return session_for(body).run_body(inputs, scope());
}

const Session* SessionSubgraphHost::body_session(const Graph& body) const {
  auto it = bodies_.find(&body);
  return it == bodies_.end() ? nullptr : it->second.get();
}

}  // namespace xnn
