// Linux: /sys/kernel/mm/transparent_hugepage/enabled and /proc/self/smaps_rollup.
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "os/huge_pages.h"

namespace dv::os {

const char* HugePageMode() {
  std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (f == nullptr) return "unknown";
  char buf[256] = {};
  const size_t got = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[got] = '\0';
  for (const char* mode : {"always", "madvise", "never"}) {
    char bracketed[16];
    std::snprintf(bracketed, sizeof(bracketed), "[%s]", mode);
    if (std::strstr(buf, bracketed) != nullptr) return mode;
  }
  return "unknown";
}

int64_t AnonHugePageBytes() {
  std::FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    long long v = 0;
    if (std::sscanf(line, "AnonHugePages: %lld kB", &v) == 1) {
      kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib < 0 ? -1 : kib * 1024;
}

}  // namespace dv::os
