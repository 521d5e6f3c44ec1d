// A persistent thread pool (the cpu backend's and the float engine's): threads are created once,
// spin briefly between jobs (a decode step issues a few hundred short parallel regions) and then
// sleep on a futex. The caller of Run is thread 0 and takes part in the work.
//
// Workers join a job when they arrive, not before it may start: on a shared machine a worker
// that is not scheduled must not stall the caller. So a job's function runs on the caller and on
// every worker that arrives while the job is open, and must hand out its work itself (the cpu
// ParallelFor below claims chunks from an atomic counter); Run closes the job once the
// caller's call has returned and no joined worker is still inside.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "base/expected_error.h"

namespace dv::os {

// The system refused a thread (EAGAIN: process limit or no memory for its stack): a condition
// of the machine, so an expected failure (exit 2 with one line), not a crash.
class ThreadStartError : public ExpectedError {
 public:
  using ExpectedError::ExpectedError;
};

class ThreadPool {
 public:
  // threads >= 1; threads - 1 workers are started. Throws ThreadStartError (with every worker
  // started so far stopped again) when the system refuses one.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Runs fn(ctx, thread) on the calling thread (thread 0) and on each worker (thread 1 ..
  // size()-1) that joins before the job closes; returns when every call has returned. fn must
  // not throw. A Run from inside a job runs fn(ctx, 0) inline.
  using JobFn = void (*)(void* ctx, int thread);
  void Run(JobFn fn, void* ctx);

 private:
  void WorkerLoop(int thread);
  void StopWorkers();

  // state_: epoch in the high 32 bits, kClosed, and the number of workers inside the job.
  static constexpr uint64_t kClosed = uint64_t{1} << 31;
  static constexpr uint64_t kActiveMask = kClosed - 1;

  int threads_;
  std::vector<std::thread> workers_;
  // Written by Run before it opens an epoch; read by workers after they joined it.
  JobFn fn_ = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<uint64_t> state_{kClosed};  // epoch 0, closed
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

// body(begin, end, thread) over [0, n), every index exactly once, on the caller and whichever
// workers join. The range is cut into chunks claimed in order from an atomic counter: the first
// size() chunks share 7/8 of the range, so each thread streams one long contiguous piece (a
// GEMM's weights: hardware prefetchers like long streams), and the last eighth comes in
// 2 * size() small chunks that balance the finish. A thread that is descheduled (a shared
// machine) or slower leaves its chunks to the others; the caller alone takes every chunk when
// no worker joins in time. body must not throw.
template <typename Body>
void ParallelFor(ThreadPool& pool, int64_t n, Body&& body) {
  if (n <= 0) return;
  const int64_t threads = pool.size();
  if (threads == 1 || n == 1) {
    body(int64_t{0}, n, 0);
    return;
  }
  struct Job {
    std::remove_reference_t<Body>* body;
    int64_t n, threads, small_chunks, long_part;
    alignas(64) std::atomic<int64_t> next{0};
    // Start of chunk c: long chunks [0, threads), then small ones.
    int64_t Bound(int64_t c) const {
      return c <= threads ? long_part * c / threads
                          : long_part + (n - long_part) * (c - threads) / small_chunks;
    }
  } job;
  job.body = std::addressof(body);
  job.n = n;
  job.threads = threads;
  job.small_chunks = 2 * threads;
  job.long_part = n * 7 / 8;
  pool.Run(
      [](void* ctx, int thread) {
        Job& j = *static_cast<Job*>(ctx);
        const int64_t chunks = j.threads + j.small_chunks;
        for (int64_t i = j.next.fetch_add(1, std::memory_order_relaxed); i < chunks;
             i = j.next.fetch_add(1, std::memory_order_relaxed)) {
          const int64_t begin = j.Bound(i), end = j.Bound(i + 1);
          if (begin < end) (*j.body)(begin, end, thread);
        }
      },
      &job);
}

}  // namespace dv::os
