# Shared part of the cross toolchain files (aarch64-linux-gnu.cmake, s390x-linux-gnu.cmake):
# Debian's cross compiler g++-<triplet>, static linking, and qemu-user as the emulator that ctest
# and gtest_discover_tests run the test binaries with. The including file sets
# DETVERIFY_CROSS_TRIPLET, CMAKE_SYSTEM_PROCESSOR and DETVERIFY_CROSS_QEMU first.
#
# Libraries come from a private root, not from multiarch: scripts/install_deps.sh --with-cross
# unpacks Debian's libssl-dev, libgtest-dev, nlohmann-json3-dev and libcli11-dev of the target
# architecture into /opt/detverify-cross/<triplet> (or $DETVERIFY_CROSS_ROOT/<triplet>).
# Multiarch co-installation cannot work on Debian 12: libssl-dev is Multi-Arch: same, so every
# architecture needs the same version, and bookworm-security carries no s390x builds.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_CXX_COMPILER ${DETVERIFY_CROSS_TRIPLET}-g++)
set(CMAKE_C_COMPILER ${DETVERIFY_CROSS_TRIPLET}-gcc)

if(DEFINED ENV{DETVERIFY_CROSS_ROOT} AND NOT "$ENV{DETVERIFY_CROSS_ROOT}" STREQUAL "")
  set(DETVERIFY_CROSS_SYSROOT "$ENV{DETVERIFY_CROSS_ROOT}/${DETVERIFY_CROSS_TRIPLET}")
else()
  set(DETVERIFY_CROSS_SYSROOT "/opt/detverify-cross/${DETVERIFY_CROSS_TRIPLET}")
endif()
if(NOT EXISTS "${DETVERIFY_CROSS_SYSROOT}/usr/include/openssl/evp.h")
  message(FATAL_ERROR "no target libraries in ${DETVERIFY_CROSS_SYSROOT}: run "
                      "scripts/install_deps.sh --with-cross (or set DETVERIFY_CROSS_ROOT)")
endif()

# Target libraries and packages only from the private root (and the compiler's own
# /usr/<triplet>); programs (pkg-config, git) from the host.
set(CMAKE_FIND_ROOT_PATH "${DETVERIFY_CROSS_SYSROOT}" "/usr/${DETVERIFY_CROSS_TRIPLET}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Debian keeps OpenSSL's configuration.h under include/<triplet>, which the cross compiler does
# not search by itself.
set(CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES
  "${DETVERIFY_CROSS_SYSROOT}/usr/include/${DETVERIFY_CROSS_TRIPLET}"
  "${DETVERIFY_CROSS_SYSROOT}/usr/include")

# Static executables run under qemu-user without a target root file system.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(OPENSSL_USE_STATIC_LIBS TRUE)

find_program(DETVERIFY_CROSS_QEMU_PATH ${DETVERIFY_CROSS_QEMU})
if(DETVERIFY_CROSS_QEMU_PATH)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${DETVERIFY_CROSS_QEMU_PATH}")
endif()
