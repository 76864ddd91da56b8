// ThreadPool: persistent workers for data-parallel kernels. `threads` is honoured exactly: the
// calling thread plus threads-1 workers run the tasks. Workers are created once, in the
// constructor; parallel_for neither allocates nor creates threads, so a session's steady-state
// run loop does neither.
//
// Kernels split work over output tiles: parallel_for(n, fn) calls fn(i) once for every i in
// [0, n). Thread t (the caller is thread 0) owns the contiguous block [n·t/T, n·(t+1)/T) and
// claims its indices front to front; a thread whose block is empty takes the next unclaimed
// index of the others' blocks, so uneven tiles still balance. Why blocks rather than one shared
// counter: kernels number their tiles in output order, so consecutive layers give a thread the
// same part of the image, and it reads back mostly what it wrote itself, from its own L2 (with
// one shared counter the caller and the worker swapped halves at random: 2-11% slower at 2
// threads on the torchvision models).
// Calls are not re-entrant: a task must not call parallel_for on the same pool (nested calls
// run serially on the calling thread instead).
//
// Latency: kernels call parallel_for hundreds of times per inference, so waking workers through
// a condition variable alone (tens of microseconds each) would cost milliseconds. Idle workers
// first spin on the generation counter for a short while (~0.1 ms), and only then sleep; the
// caller spins for completion the same way.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace xnn {

class ThreadPool {
 public:
  explicit ThreadPool(int threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }

  // Runs fn(i) for i in [0, n); returns when all are done. Exceptions thrown by fn are
  // rethrown on the caller (the first one; remaining tasks still run to completion).
  template <typename F>
  void parallel_for(int64_t n, F&& fn) {
    if (n <= 0) return;
    if (n == 1 || threads_ == 1 || in_task()) {
      for (int64_t i = 0; i < n; ++i) fn(i);
      return;
    }
    run(n, [](void* ctx, int64_t i) { (*static_cast<std::remove_reference_t<F>*>(ctx))(i); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }

 private:
  using TaskFn = void (*)(void*, int64_t);
  void run(int64_t n, TaskFn fn, void* ctx);
  void worker_loop(int worker_index);
  void drain(int self);  // takes tasks until none are left: its own block first, then the others'
  static bool in_task();

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};  // bumped per parallel_for; workers wait for a new one
  std::atomic<int> sleepers_{0};         // workers blocked on wake_
  std::atomic<bool> stop_{false};
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;
  // Thread t's block of task indices [next, end): claimed front to front, by t first and then,
  // once t's own block is empty, by any thread that has finished its own.
  struct alignas(64) Block {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::unique_ptr<Block[]> blocks_;
  std::atomic<int> active_workers_{0};   // workers still inside the current generation
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// Serial when pool is null.
template <typename F>
void parallel_for(ThreadPool* pool, int64_t n, F&& fn) {
  if (pool) {
    pool->parallel_for(n, std::forward<F>(fn));
  } else {
    for (int64_t i = 0; i < n; ++i) fn(i);
  }
}

}  // namespace xnn
