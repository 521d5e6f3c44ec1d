// The cpu backend's ParallelFor: every index of [0, n) exactly once, thread indices in range,
// nested calls run inline, and many short regions in a row (a decode step's pattern) complete.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <vector>

#include "engine/backends/cpu_backend.h"
#include "os/thread_pool.h"

namespace dv {
namespace {

TEST(CpuParallelFor, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 4}) {
    auto backend = MakeCpuBackend({threads, CpuIsa::kScalar, false, std::nullopt});
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
  auto backend = MakeCpuBackend({3, CpuIsa::kScalar, false, std::nullopt});
  std::atomic<int64_t> total{0};
  backend->ParallelFor(6, [&](int64_t begin, int64_t end, int) {
    for (int64_t i = begin; i < end; ++i) {
      backend->ParallelFor(10, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
    }
  });
  EXPECT_EQ(total.load(), 60);
}

TEST(CpuParallelFor, ManyShortRegions) {
  auto backend = MakeCpuBackend({2, CpuIsa::kScalar, false, std::nullopt});
  int64_t expected = 0;
  std::atomic<int64_t> total{0};
  for (int r = 0; r < 20000; ++r) {
    const int64_t n = 1 + r % 17;
    expected += n;
    backend->ParallelFor(n, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
    ASSERT_EQ(total.load(), expected) << "region " << r;
  }
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
