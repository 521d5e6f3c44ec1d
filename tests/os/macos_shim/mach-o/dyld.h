// The declaration of macOS's _NSGetExecutablePath (<mach-o/dyld.h>, same signature), so that
// os/os_facts_macos.cc compiles on Linux; tests/os/fake_macos.cc defines it.
#pragma once

#include <stdint.h>

extern "C" int _NSGetExecutablePath(char* buf, uint32_t* bufsize);
