# Build provenance recorded in every run row and fingerprint: git commit, compiler and flags.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR} OUTPUT_VARIABLE DETVERIFY_GIT_COMMIT
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT DETVERIFY_GIT_COMMIT)
  set(DETVERIFY_GIT_COMMIT "unknown")
endif()
string(TOUPPER "${CMAKE_BUILD_TYPE}" _dv_bt)
set(DETVERIFY_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_dv_bt}}")
string(STRIP "${DETVERIFY_CXX_FLAGS}" DETVERIFY_CXX_FLAGS)
configure_file(${CMAKE_SOURCE_DIR}/cmake/build_info.h.in ${CMAKE_BINARY_DIR}/generated/build_info.h @ONLY)
