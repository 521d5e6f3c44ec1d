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
#include <exception>
#include <memory>
#include <span>
#include <thread>
#include <type_traits>
#include <utility>
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
  // True on a thread that is running a job's function (any pool's), where a Run runs inline.
  static bool InsideJob();

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

// A team region: one pool job that lasts across many parallel loops (a decode step's GEMMs and
// row loops), so that a loop starts without opening a job, and a member with nothing to do can
// prepare the next loop's data (PostIdleReads) while member 0 works alone.
//
// Member 0 is the caller of RunTeam; it runs the region's function and is the only member that
// posts loops. Every other member is a pool worker that joined the region's job; it waits inside
// for loops and takes part in each one that is still open when it arrives. Loops are handed out
// as ParallelFor's are, never assuming a member arrives: member t's "home" is the t-th of
// size() equal slices of [0, n), cut into at most kUnitsPerMember units that t claims from the
// front; a member whose home is done takes units from the back of the fullest other home. So a
// member streams its home in address order, its first units are the ones it may have read ahead
// (HomeRange), and a member that is not scheduled leaves its home to the others.
class Team {
 public:
  // Units a home is cut into at most: the finish is balanced to about 1/32 of a home.
  static constexpr int64_t kUnitsPerMember = 32;

  // Reads [p, p + bytes) (bytes a multiple of 64) so that it lands in this CPU's caches, with a
  // software prefetch `prefetch_bytes` ahead (0: none); the sum makes the reads observable. A
  // member waiting for work reads its idle range with it (PostIdleReads); a null ReadFn reads
  // nothing.
  using ReadFn = uint64_t (*)(const uint8_t* p, int64_t bytes, int64_t prefetch_bytes);

  struct IdleRead {
    const uint8_t* begin = nullptr;
    int64_t bytes = 0;
  };

  // A team for regions of a pool of `size` threads (TeamRunner::Run), made once and reused:
  // a region allocates nothing.
  Team(int size, ReadFn read, int64_t prefetch_bytes);
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  // Members that may take part in the running region (1 when it runs nested or on one thread).
  int size() const { return alone_ ? 1 : size_; }

  // Member t's home slice of a loop over n items, [first, second): the items t claims first,
  // front to back.
  static std::pair<int64_t, int64_t> HomeRange(int64_t n, int members, int member) {
    return {n * member / members, n * (member + 1) / members};
  }

  // body(begin, end, member) over disjoint ranges covering [0, n), each index once; returns when
  // every index is done. From member 0 (a call from inside a loop body runs the whole range
  // inline, as a nested ParallelFor does). body must not throw.
  template <typename Body>
  void For(int64_t n, Body&& body) {
    using B = std::remove_reference_t<Body>;
    ForErased(
        n,
        [](void* ctx, int64_t begin, int64_t end, int member) {
          (*static_cast<B*>(ctx))(begin, end, member);
        },
        std::addressof(body));
  }

  // Replaces the idle reads: member t, while it waits for a loop (or for the others to finish
  // one), reads per_member[t] front to back in small pieces, once. Entries past size() are
  // ignored; a shorter span leaves the other members idle. From member 0.
  void PostIdleReads(std::span<const IdleRead> per_member);

 private:
  using BodyFn = void (*)(void* ctx, int64_t begin, int64_t end, int member);
  friend class TeamRunner;

  void ForErased(int64_t n, BodyFn fn, void* ctx);
  void Participate(uint64_t loop, int member);
  bool ClaimUnit(int owner, uint64_t loop, bool from_back, int64_t& unit);
  // Runs the unit; returns its item count.
  int64_t RunUnit(int owner, int64_t unit, int member);
  void WorkerLoop(int member);
  // One piece of member's idle reads; false when it has none left.
  bool IdleStep(int member);
  void Begin(bool alone);
  void End();

  struct alignas(64) Home {
    // (loop << 32) | (front << 16) | back: the units [front, back) of this home not yet claimed
    // in loop `loop`; a member from an older loop fails every claim.
    std::atomic<uint64_t> word{0};
  };
  struct alignas(64) IdleSlot {
    std::atomic<const uint8_t*> begin{nullptr};
    std::atomic<int64_t> bytes{0};
    // The member's own progress (only it touches these).
    uint64_t seen_generation = 0;
    const uint8_t* cursor = nullptr;
    int64_t left = 0;
    uint64_t sink = 0;
  };

  int size_;
  ReadFn read_;
  int64_t prefetch_bytes_;
  bool alone_ = false;      // this region runs on member 0 alone
  uint64_t last_loop_ = 0;  // member 0's count of loops posted, across regions
  std::unique_ptr<Home[]> homes_;
  std::unique_ptr<IdleSlot[]> idle_;
  // The current loop's number (0: none yet; kEnded: the region is over), its size and body.
  static constexpr uint64_t kEnded = ~uint64_t{0};
  alignas(64) std::atomic<uint64_t> loop_{0};
  std::atomic<int64_t> n_{0};
  std::atomic<BodyFn> fn_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  alignas(64) std::atomic<int64_t> done_{0};              // items of the current loop finished
  alignas(64) std::atomic<uint64_t> idle_generation_{0};  // odd while member 0 rewrites the slots
};

// Runs fn(team) on the calling thread (member 0) in one job of `pool`, whose joining workers
// serve the team's loops until fn returns; then returns, or rethrows what fn threw, once no
// member is inside any more. `team` was made for a pool of this size and runs one region at a
// time. Inside another job (nested) or on a pool of one, fn runs with a team of one.
class TeamRunner {
 public:
  template <typename Fn>
  static void Run(ThreadPool& pool, Team& team, Fn&& fn) {
    using F = std::remove_reference_t<Fn>;
    RunErased(
        pool, team, [](void* ctx, Team& t) { (*static_cast<F*>(ctx))(t); }, std::addressof(fn));
  }

 private:
  using RegionFn = void (*)(void* ctx, Team& team);
  static void RunErased(ThreadPool& pool, Team& team, RegionFn fn, void* ctx);
};

}  // namespace dv::os
