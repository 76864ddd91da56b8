// A fixed set of prepared Sessions over one model, shared by concurrent requests. Session::run
// is not thread-safe (it reuses its arena and thread pool), so each request leases a Session
// for the length of one run and gives it back; when every Session is busy, acquire() waits for
// one. The sessions are created up front (engine/bundle/bundle_variant.h), so no request pays
// for loading or preparing.
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/runtime/session.h"

namespace xnn {

class SessionPool {
 public:
  // `sessions` must not be empty.
  explicit SessionPool(std::vector<std::unique_ptr<Session>> sessions);
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // Exclusive use of one Session until the lease is destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), session_(other.session_) { other.pool_ = nullptr; }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Session& operator*() const { return *session_; }
    Session* operator->() const { return session_; }

   private:
    friend class SessionPool;
    Lease(SessionPool* pool, Session* session) : pool_(pool), session_(session) {}
    SessionPool* pool_;
    Session* session_;
  };

  Lease acquire();
  size_t size() const { return sessions_.size(); }
  // Any session, for read-only questions (inputs(), outputs()) that do not race with run().
  const Session& front() const { return *sessions_.front(); }

 private:
  void release(Session* session);

  std::vector<std::unique_ptr<Session>> sessions_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<Session*> idle_;
};

}  // namespace xnn
