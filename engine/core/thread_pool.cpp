#include "engine/core/thread_pool.h"

#include <exception>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define XNN_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define XNN_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define XNN_CPU_RELAX() ((void)0)
#endif

namespace xnn {
namespace {
thread_local bool t_in_task = false;
// About 0.1 ms of pause instructions before a worker goes to sleep.
constexpr int kSpinIterations = 4000;
}  // namespace

bool ThreadPool::in_task() { return t_in_task; }

ThreadPool::ThreadPool(int threads)
    : threads_(threads < 1 ? 1 : threads), blocks_(std::make_unique<Block[]>(static_cast<size_t>(threads_))) {
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::drain(int self) {
  t_in_task = true;
  for (int b = 0; b < threads_; ++b) {
    Block& block = blocks_[static_cast<size_t>((self + b) % threads_)];
    for (;;) {
      const int64_t i = block.next.fetch_add(1, std::memory_order_relaxed);
      if (i >= block.end) break;
      try {
        fn_(ctx_, i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
    }
  }
  t_in_task = false;
}

void ThreadPool::run(int64_t n, TaskFn fn, void* ctx) {
  fn_ = fn;
  ctx_ = ctx;
  error_ = nullptr;
  for (int t = 0; t < threads_; ++t) {
    Block& block = blocks_[static_cast<size_t>(t)];
    block.next.store(n * t / threads_, std::memory_order_relaxed);
    block.end = n * (t + 1) / threads_;
  }
  active_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);  // publishes the fields above
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }  // a sleeper is either waiting or sees the new generation
    wake_.notify_all();
  }
  drain(0);
  // Wait until every worker has left this generation, so fn_/ctx_ are not used after return.
  for (int spin = 0; active_workers_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kSpinIterations) {
      XNN_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void ThreadPool::worker_loop(int worker_index) {
  uint64_t seen = 0;
  for (;;) {
    bool fresh = false;
    for (int spin = 0; spin < kSpinIterations; ++spin) {
      if (generation_.load(std::memory_order_acquire) != seen || stop_.load(std::memory_order_relaxed)) {
        fresh = true;
        break;
      }
      XNN_CPU_RELAX();
    }
    if (!fresh) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] { return stop_.load() || generation_.load(std::memory_order_seq_cst) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    drain(worker_index);
    active_workers_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace xnn
