# aarch64 (little-endian, NEON) with Debian's g++-aarch64-linux-gnu; tests run under qemu-aarch64.
# Usage: cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#        -DDETVERIFY_ENGINE_ONLY=ON ...  (scripts/cross_test.sh aarch64 does this)
set(DETVERIFY_CROSS_TRIPLET aarch64-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(DETVERIFY_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/DebianCross.cmake)
