# s390x (big-endian) with Debian's g++-s390x-linux-gnu; tests run under qemu-s390x.
# Usage: cmake -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/s390x-linux-gnu.cmake
#        -DDETVERIFY_ENGINE_ONLY=ON ...  (scripts/cross_test.sh s390x does this)
set(DETVERIFY_CROSS_TRIPLET s390x-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR s390x)
set(DETVERIFY_CROSS_QEMU qemu-s390x)
include(${CMAKE_CURRENT_LIST_DIR}/DebianCross.cmake)
