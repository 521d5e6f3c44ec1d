// The declaration of macOS's sysctlbyname (<sys/sysctl.h>, same signature), so that
// os/os_facts_macos.cc compiles on Linux; tests/os/fake_macos.cc defines it over a table.
#pragma once

#include <stddef.h>

extern "C" int sysctlbyname(const char* name, void* oldp, size_t* oldlenp, void* newp,
                            size_t newlen);
