#include "os/thread_pool.h"

#include <string>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dv::os {
namespace {

// A waiting worker spins (cheap wake-up), then spins yielding its core to any other runnable
// thread, then sleeps on a futex. The spin phases bridge the serial stretches between the
// parallel regions of a decode step (tens of microseconds) without burning a core for long once
// generation has ended.
constexpr int kSpinsBeforeYield = 1 << 11;
constexpr int kSpinsBeforeSleep = 1 << 14;

thread_local bool tls_inside_job = false;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

inline void Backoff(int spin) {
  if (spin < kSpinsBeforeYield) {
    CpuRelax();
  } else {
    std::this_thread::yield();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(threads < 1 ? 1 : threads) {
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  try {
    for (int t = 1; t < threads_; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
  } catch (const std::system_error& e) {
    // Out of threads or memory for their stacks: an error the caller reports, not the
    // std::terminate that destroying the started (joinable) workers would be.
    const size_t started = workers_.size();
    StopWorkers();
    throw ThreadStartError("cannot start " + std::to_string(threads_ - 1) +
                           " worker threads (started " + std::to_string(started) +
                           "): " + e.what() + "; use fewer threads");
  }
}

ThreadPool::~ThreadPool() { StopWorkers(); }

void ThreadPool::StopWorkers() {
  stop_.store(true, std::memory_order_seq_cst);
  state_.fetch_add(uint64_t{1} << 32, std::memory_order_seq_cst);  // a new (closed) epoch wakes all
  state_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::Run(JobFn fn, void* ctx) {
  if (threads_ == 1 || tls_inside_job) {
    fn(ctx, 0);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  // Open the next epoch (no worker inside yet) and wake sleepers.
  const uint64_t epoch = (state_.load(std::memory_order_relaxed) >> 32) + 1;
  state_.store(epoch << 32, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) state_.notify_all();
  tls_inside_job = true;
  fn(ctx, 0);
  tls_inside_job = false;
  // Close the job once no joined worker is inside; a worker arriving later sees it closed.
  uint64_t open = epoch << 32;
  for (int spin = 0; !state_.compare_exchange_weak(open, open | kClosed, std::memory_order_acq_rel,
                                                   std::memory_order_relaxed);
       ++spin) {
    open = epoch << 32;
    Backoff(spin);
  }
}

void ThreadPool::WorkerLoop(int thread) {
  tls_inside_job = true;  // a worker never starts a nested parallel region
  uint64_t seen = 0;      // the last epoch this worker looked at
  for (;;) {
    uint64_t s = state_.load(std::memory_order_acquire);
    for (int spin = 0; (s >> 32) == seen && spin < kSpinsBeforeSleep; ++spin) {
      Backoff(spin);
      s = state_.load(std::memory_order_acquire);
    }
    while ((s >> 32) == seen) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      // Run reads sleepers_ after opening an epoch, so either it sees this sleeper and
      // notifies, or this load sees the new epoch.
      s = state_.load(std::memory_order_seq_cst);
      if ((s >> 32) == seen) state_.wait(s, std::memory_order_acquire);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      s = state_.load(std::memory_order_acquire);
    }
    seen = s >> 32;
    if (stop_.load(std::memory_order_acquire)) return;
    // Join the epoch while it is open: one more worker inside.
    bool joined = false;
    while ((s >> 32) == seen && (s & kClosed) == 0) {
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
        joined = true;
        break;
      }
    }
    if (!joined) continue;
    fn_(ctx_, thread);
    state_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace dv::os
