#include "engine/bundle/session_pool.h"

#include "engine/core/error.h"

namespace xnn {

SessionPool::SessionPool(std::vector<std::unique_ptr<Session>> sessions) : sessions_(std::move(sessions)) {
  XNN_CHECK(!sessions_.empty(), "SessionPool needs at least one session");
  for (const auto& s : sessions_) idle_.push_back(s.get());
}

SessionPool::Lease::~Lease() {
  if (pool_) pool_->release(session_);
}

SessionPool::Lease SessionPool::acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  available_.wait(lock, [this] { return !idle_.empty(); });
  Session* s = idle_.back();
  idle_.pop_back();
  return Lease(this, s);
}

void SessionPool::release(Session* session) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(session);
  }
  available_.notify_one();
}

}  // namespace xnn
