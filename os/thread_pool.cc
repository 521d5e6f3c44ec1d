#include "os/thread_pool.h"

#include "base/check.h"

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
// True while this thread runs a team loop's body: a For from there runs inline.
thread_local bool tls_in_team_body = false;

// An idle member reads this much between two looks for a new loop (about a third of a
// microsecond of one core's memory stream): a loop never waits long for it.
constexpr int64_t kIdlePieceBytes = 4096;

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

bool ThreadPool::InsideJob() { return tls_inside_job; }

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

namespace dv::os {
namespace {

constexpr uint64_t kLoopMask = 0xFFFFFFFFu;

// The home word's fields: (loop << 32) | (front << 16) | back.
constexpr uint64_t HomeWord(uint64_t loop, uint64_t front, uint64_t back) {
  return ((loop & kLoopMask) << 32) | (front << 16) | back;
}
constexpr uint64_t HomeLoop(uint64_t word) { return word >> 32; }
constexpr int64_t HomeFront(uint64_t word) { return static_cast<int64_t>((word >> 16) & 0xFFFF); }
constexpr int64_t HomeBack(uint64_t word) { return static_cast<int64_t>(word & 0xFFFF); }

}  // namespace

Team::Team(int size, ReadFn read, int64_t prefetch_bytes)
    : size_(size < 1 ? 1 : size),
      read_(read),
      prefetch_bytes_(prefetch_bytes),
      homes_(new Home[static_cast<size_t>(size_)]),
      idle_(new IdleSlot[static_cast<size_t>(size_)]) {}

Team::~Team() = default;

void Team::ForErased(int64_t n, BodyFn fn, void* ctx) {
  if (n <= 0) return;
  if (size() == 1 || n == 1 || tls_in_team_body) {
    fn(ctx, 0, n, 0);
    return;
  }
  // Only member 0 posts loops, and only after the previous loop's every unit is done, so no
  // member can still be running a unit of it while the fields below change.
  const uint64_t loop = ++last_loop_;
  n_.store(n, std::memory_order_relaxed);
  fn_.store(fn, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  for (int t = 0; t < size_; ++t) {
    const auto [begin, end] = HomeRange(n, size_, t);
    const int64_t units = end - begin < kUnitsPerMember ? end - begin : kUnitsPerMember;
    homes_[static_cast<size_t>(t)].word.store(HomeWord(loop, 0, static_cast<uint64_t>(units)),
                                              std::memory_order_release);
  }
  loop_.store(loop, std::memory_order_release);
  Participate(loop, 0);
  // The others' last units: meanwhile member 0 reads ahead, as any waiting member does.
  for (int spin = 0; done_.load(std::memory_order_acquire) < n; ++spin) {
    if (!IdleStep(0)) CpuRelax();
  }
}

bool Team::ClaimUnit(int owner, uint64_t loop, bool from_back, int64_t& unit) {
  std::atomic<uint64_t>& word = homes_[static_cast<size_t>(owner)].word;
  uint64_t w = word.load(std::memory_order_acquire);
  for (;;) {
    if (HomeLoop(w) != (loop & kLoopMask)) return false;
    const int64_t front = HomeFront(w), back = HomeBack(w);
    if (front >= back) return false;
    const uint64_t next = from_back ? w - 1 : w + (uint64_t{1} << 16);
    if (word.compare_exchange_weak(w, next, std::memory_order_acq_rel, std::memory_order_acquire)) {
      unit = from_back ? back - 1 : front;
      return true;
    }
  }
}

int64_t Team::RunUnit(int owner, int64_t unit, int member) {
  // The claim (acquire) follows member 0's release of the home word, after it stored these.
  const int64_t n = n_.load(std::memory_order_relaxed);
  const BodyFn fn = fn_.load(std::memory_order_relaxed);
  void* const ctx = ctx_.load(std::memory_order_relaxed);
  const auto [home_begin, home_end] = HomeRange(n, size_, owner);
  const int64_t length = home_end - home_begin;
  const int64_t units = length < kUnitsPerMember ? length : kUnitsPerMember;
  const int64_t begin = home_begin + length * unit / units;
  const int64_t end = home_begin + length * (unit + 1) / units;
  tls_in_team_body = true;
  fn(ctx, begin, end, member);
  tls_in_team_body = false;
  return end - begin;
}

void Team::Participate(uint64_t loop, int member) {
  // The items this member ran, added to done_ once, when it leaves the loop: one atomic add on
  // the shared line a loop and member, where one a unit made every unit wait for that line to
  // come over from the other core (an empty loop of 64 items took 3.2 us on 2 threads of the
  // Intel Xeon host, 1.1 us with this: os_bench, docs/RESULTS.md). member 0 cannot see done_
  // reach n before every member that ran a unit has left: no item is counted by anyone else.
  int64_t ran = 0;
  int64_t unit = 0;
  while (ClaimUnit(member, loop, false, unit)) ran += RunUnit(member, unit, member);
  // Home done: units from the back of the fullest other home, until none is left.
  for (;;) {
    int victim = -1;
    int64_t most = 0;
    bool over = false;
    for (int t = 0; t < size_ && !over; ++t) {
      if (t == member) continue;
      const uint64_t w = homes_[static_cast<size_t>(t)].word.load(std::memory_order_acquire);
      over = HomeLoop(w) != (loop & kLoopMask);  // the loop is over
      if (!over && HomeBack(w) - HomeFront(w) > most) {
        most = HomeBack(w) - HomeFront(w);
        victim = t;
      }
    }
    if (over || victim < 0) break;
    if (ClaimUnit(victim, loop, true, unit)) ran += RunUnit(victim, unit, member);
  }
  if (ran > 0) done_.fetch_add(ran, std::memory_order_release);
}

bool Team::IdleStep(int member) {
  IdleSlot& slot = idle_[static_cast<size_t>(member)];
  const uint64_t generation = idle_generation_.load(std::memory_order_acquire);
  if (generation != slot.seen_generation) {
    if (generation % 2 == 1) return false;  // member 0 is rewriting the slots
    const uint8_t* begin = slot.begin.load(std::memory_order_relaxed);
    const int64_t bytes = slot.bytes.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (idle_generation_.load(std::memory_order_relaxed) != generation) return false;
    slot.seen_generation = generation;
    slot.cursor = begin;
    slot.left = bytes / 64 * 64;
  }
  if (slot.left <= 0 || read_ == nullptr) return false;
  const int64_t piece = slot.left < kIdlePieceBytes ? slot.left : kIdlePieceBytes;
  slot.sink += read_(slot.cursor, piece, prefetch_bytes_);
  slot.cursor += piece;
  slot.left -= piece;
  return true;
}

void Team::PostIdleReads(std::span<const IdleRead> per_member) {
  const uint64_t generation = idle_generation_.load(std::memory_order_relaxed);
  idle_generation_.store(generation + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int t = 0; t < size_; ++t) {
    const IdleRead entry = static_cast<size_t>(t) < per_member.size()
                               ? per_member[static_cast<size_t>(t)]
                               : IdleRead{};
    idle_[static_cast<size_t>(t)].begin.store(entry.begin, std::memory_order_relaxed);
    idle_[static_cast<size_t>(t)].bytes.store(entry.bytes, std::memory_order_relaxed);
  }
  idle_generation_.store(generation + 2, std::memory_order_release);
}

void Team::WorkerLoop(int member) {
  uint64_t seen = 0;
  for (int spin = 0;; ++spin) {
    const uint64_t loop = loop_.load(std::memory_order_acquire);
    if (loop == kEnded) return;
    if (loop != seen) {
      seen = loop;
      Participate(loop, member);
      spin = 0;
    } else if (IdleStep(member)) {
      spin = 0;
    } else {
      Backoff(spin);
    }
  }
}

// A worker that joins reads the last loop first: every unit of it is claimed, so it only
// waits for the next one. No member of the previous region is still inside: its pool job
// closed only once every joined worker had left.
void Team::Begin(bool alone) {
  alone_ = alone;
  PostIdleReads({});
  loop_.store(last_loop_, std::memory_order_release);
}

void Team::End() {
  loop_.store(kEnded, std::memory_order_release);
  alone_ = false;
}

void TeamRunner::RunErased(ThreadPool& pool, Team& team, RegionFn fn, void* ctx) {
  DV_CHECK(team.size_ == pool.size())
      << "a team for " << team.size_ << " threads in a pool of " << pool.size();
  const bool alone = pool.size() == 1 || ThreadPool::InsideJob();
  team.Begin(alone);
  if (alone) {
    struct Ender {
      Team& team;
      ~Ender() { team.End(); }
    } ender{team};
    fn(ctx, team);
    return;
  }
  struct Job {
    Team* team;
    RegionFn fn;
    void* ctx;
    std::exception_ptr error;
  } job{&team, fn, ctx, nullptr};
  pool.Run(
      [](void* c, int thread) {
        Job& j = *static_cast<Job*>(c);
        if (thread != 0) {
          j.team->WorkerLoop(thread);
          return;
        }
        try {
          j.fn(j.ctx, *j.team);
        } catch (...) {
          j.error = std::current_exception();
        }
        j.team->End();
      },
      &job);
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace dv::os
