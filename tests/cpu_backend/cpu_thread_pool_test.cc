// The cpu backend's ParallelFor: every index of [0, n) exactly once, thread indices in range,
// nested calls run inline, and many short regions in a row (a decode step's pattern) complete;
// the same for the loops of a team region (os::Team, the cpu backend's RunRegion), with more
// threads than CPUs so that members join late and take each other's homes, plus its idle reads
// and its exceptions.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/backends/cpu_backend.h"
#include "os/thread_pool.h"

namespace dv {
namespace {

TEST(CpuParallelFor, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 4}) {
    auto backend = MakeCpuBackend({threads, CpuIsa::kScalar, false, std::nullopt, true});
    ASSERT_EQ(backend->NumThreads(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 8, 9, 100, 1000, 4097}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<bool> bad_thread{false};
      backend->ParallelFor(n, [&](int64_t begin, int64_t end, int thread) {
        if (thread < 0 || thread >= threads) bad_thread = true;
        for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      EXPECT_FALSE(bad_thread.load());
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
            << "n " << n << " threads " << threads << " i " << i;
      }
    }
  }
}

TEST(CpuParallelFor, NestedCallsRunInline) {
  auto backend = MakeCpuBackend({3, CpuIsa::kScalar, false, std::nullopt, true});
  std::atomic<int64_t> total{0};
  backend->ParallelFor(6, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) {
      backend->ParallelFor(10, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
    }
  });
  EXPECT_EQ(total.load(), 60);
}

TEST(CpuParallelFor, ManyShortRegions) {
  auto backend = MakeCpuBackend({2, CpuIsa::kScalar, false, std::nullopt, true});
  int64_t expected = 0;
  std::atomic<int64_t> total{0};
  for (int r = 0; r < 20000; ++r) {
    const int64_t n = 1 + r % 17;
    expected += n;
    backend->ParallelFor(n, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
    ASSERT_EQ(total.load(), expected) << "region " << r;
  }
}

// Inside RunRegion (with regions on and off) ParallelFor covers every index once, and
// WillMultiply's hint is harmless inside and outside a region.
TEST(CpuParallelFor, InsideARegion) {
  for (const bool regions : {true, false}) {
    for (int threads : {1, 2, 4}) {
      auto backend = MakeCpuBackend({threads, CpuIsa::kScalar, false, std::nullopt, regions});
      std::vector<int8_t> w(64 * 96, 1);
      auto packed = backend->PackWeight(w.data(), 64, 96);
      const PackedWeight* const next[] = {packed.get()};
      backend->WillMultiply(next);
      backend->RunRegion([&] {
        for (int64_t n : {1, 5, 100, 4097}) {
          backend->WillMultiply(next);
          std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
          backend->ParallelFor(n, [&](int64_t begin, int64_t end, int thread) {
            EXPECT_LT(thread, threads);
            for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
          });
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1);
        }
      });
    }
  }
}

uint64_t NoRead(const uint8_t*, int64_t, int64_t) { return 0; }

// Every index of every loop exactly once, members in range, for pools of 1 to 8 threads (8 on a
// 2-CPU machine: members are descheduled and their homes taken by others), loops of 1 to 5,000
// items, and many loops per region as a forward pass has.
TEST(Team, EveryIndexOnceInEveryLoop) {
  for (int threads : {1, 2, 3, 8}) {
    os::ThreadPool pool(threads);
    os::Team team(threads, &NoRead, 0);
    for (int region = 0; region < 20; ++region) {
      os::TeamRunner::Run(pool, team, [&](os::Team& t) {
        EXPECT_EQ(t.size(), threads);
        for (int64_t n : {1, 2, 3, 7, 31, 32, 33, 64, 65, 100, 1000, 5000}) {
          std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
          std::atomic<bool> bad_member{false};
          t.For(n, [&](int64_t begin, int64_t end, int member) {
            if (member < 0 || member >= threads || begin >= end) bad_member = true;
            for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
          });
          EXPECT_FALSE(bad_member.load());
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
                << "threads " << threads << " n " << n << " i " << i;
          }
        }
      });
    }
  }
}

TEST(Team, ManyShortLoopsAndNestedLoopsInline) {
  os::ThreadPool pool(3);
  os::Team team(3, &NoRead, 0);
  os::TeamRunner::Run(pool, team, [&](os::Team& t) {
    int64_t expected = 0;
    std::atomic<int64_t> total{0};
    for (int r = 0; r < 20000; ++r) {
      const int64_t n = 1 + r % 17;
      expected += n;
      t.For(n, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
      ASSERT_EQ(total.load(), expected) << "loop " << r;
    }
    std::atomic<int64_t> nested{0};
    t.For(6, [&](int64_t begin, int64_t end, int) {
      for (int64_t i = begin; i < end; ++i) {
        t.For(10, [&](int64_t b, int64_t e, int member) {
          EXPECT_EQ(member, 0) << "a nested loop runs inline";
          nested.fetch_add(e - b);
        });
      }
    });
    EXPECT_EQ(nested.load(), 60);
  });
}

// A region inside another pool's job, or on a pool of one thread, is a team of one.
TEST(Team, NestedOrSingleThreadRegionsRunAlone) {
  os::ThreadPool one(1);
  os::Team team_one(1, &NoRead, 0);
  os::TeamRunner::Run(one, team_one, [](os::Team& t) { EXPECT_EQ(t.size(), 1); });
  os::ThreadPool outer(2), inner(2);
  os::Team team(2, &NoRead, 0);
  struct Ctx {
    os::ThreadPool* inner;
    os::Team* team;
    std::atomic<int> alone{0};
  } ctx{&inner, &team};
  outer.Run(
      [](void* c, int thread) {
        if (thread != 0) return;  // the region once, on the caller, inside the outer job
        Ctx& x = *static_cast<Ctx*>(c);
        os::TeamRunner::Run(*x.inner, *x.team, [&](os::Team& t) {
          if (t.size() == 1) x.alone.fetch_add(1);
          std::atomic<int64_t> total{0};
          t.For(100, [&](int64_t b, int64_t e, int member) {
            EXPECT_EQ(member, 0);
            total.fetch_add(e - b);
          });
          EXPECT_EQ(total.load(), 100);
        });
      },
      &ctx);
  EXPECT_EQ(ctx.alone.load(), 1);
}

TEST(Team, AnExceptionEndsTheRegionAndPropagates) {
  os::ThreadPool pool(2);
  os::Team team(2, &NoRead, 0);
  EXPECT_THROW(os::TeamRunner::Run(pool, team,
                                   [](os::Team& t) {
                                     t.For(100, [](int64_t, int64_t, int) {});
                                     throw std::runtime_error("out");
                                   }),
               std::runtime_error);
  // The pool and the team serve the next region.
  std::atomic<int64_t> total{0};
  os::TeamRunner::Run(pool, team, [&](os::Team& t) {
    t.For(1000, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
  });
  EXPECT_EQ(total.load(), 1000);
}

// Idle reads: a member reads its own posted range, front to back in pieces, once, and only
// while it waits (here: while member 0 works alone); a later post replaces the plan.
std::mutex g_reads_mutex;
std::vector<std::pair<const uint8_t*, int64_t>> g_reads;
uint64_t RecordRead(const uint8_t* p, int64_t bytes, int64_t prefetch) {
  EXPECT_EQ(prefetch, 128);
  const std::lock_guard<std::mutex> lock(g_reads_mutex);
  g_reads.emplace_back(p, bytes);
  return 0;
}

TEST(Team, IdleMembersReadTheirPostedRanges) {
  std::vector<uint8_t> buffer(1 << 20);
  os::ThreadPool pool(2);
  os::Team team(2, &RecordRead, 128);
  g_reads.clear();
  os::TeamRunner::Run(pool, team, [&](os::Team& t) {
    // The worker joins (it has a loop to take part in), then member 0 posts and works alone.
    std::atomic<int> worker_items{0};
    for (int tries = 0; tries < 2000 && worker_items.load() == 0; ++tries) {
      t.For(64, [&](int64_t b, int64_t e, int member) {
        if (member == 1) worker_items.fetch_add(static_cast<int>(e - b));
        std::this_thread::sleep_for(std::chrono::microseconds(10));
      });
    }
    ASSERT_GT(worker_items.load(), 0) << "the worker never joined";
    const os::Team::IdleRead plan[] = {{buffer.data(), 4096}, {buffer.data() + 8192, 100000}};
    t.PostIdleReads(plan);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
      int64_t read = 0;
      {
        const std::lock_guard<std::mutex> lock(g_reads_mutex);
        for (const auto& [p, bytes] : g_reads) read += bytes;
      }
      if (read >= 99968 || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  // Member 1's range (rounded down to whole 64-byte lines), in order, contiguous, in pieces of
  // at most 4 KiB; member 0 never waited inside a loop after the post, so it read nothing.
  const std::lock_guard<std::mutex> lock(g_reads_mutex);
  const uint8_t* expected = buffer.data() + 8192;
  for (const auto& [p, bytes] : g_reads) {
    EXPECT_EQ(p, expected);
    EXPECT_GT(bytes, 0);
    EXPECT_LE(bytes, 4096);
    expected += bytes;
  }
  EXPECT_EQ(expected, buffer.data() + 8192 + 99968);
}

TEST(ThreadPool, RefusedThreadIsAnErrorNotAnAbort) {
  // In a child whose address space is capped a little above what it uses, thread stacks (8 MiB
  // of address space each) run out after a few workers: the pool must throw, not std::terminate.
#if defined(DV_TEST_UNDER_EMULATOR)
  GTEST_SKIP() << "under qemu-user the address-space cap does not bound the guest's thread stacks";
#endif
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                       (rlim_t{48} << 20);
    const rlimit limit{cap, cap};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(3);
    try {
      os::ThreadPool pool(64);
      ::_exit(4);  // every thread started: the cap did not bind
    } catch (const os::ThreadStartError& e) {
      std::fprintf(stderr, "%s\n", e.what());
      ::_exit(0);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the pool killed the process (signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace dv
