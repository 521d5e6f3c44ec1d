# Build provenance recorded in every run row and fingerprint: git commit, compiler and flags.
# The commit is refreshed at every build (generated/git_commit.h, target dv_git_commit), not only
# when CMake configures, so an incremental rebuild never reports the commit of an older checkout.
set(_dv_commit_args -DSRC=${CMAKE_SOURCE_DIR} -DOUT=${CMAKE_BINARY_DIR}/generated/git_commit.h
  -P ${CMAKE_SOURCE_DIR}/cmake/DetverifyGitCommit.cmake)
execute_process(COMMAND ${CMAKE_COMMAND} ${_dv_commit_args})
add_custom_target(dv_git_commit
  COMMAND ${CMAKE_COMMAND} ${_dv_commit_args}
  BYPRODUCTS ${CMAKE_BINARY_DIR}/generated/git_commit.h
  VERBATIM)
# Targets that include build_info.h link dv_build_info (cmake/DetverifyModules.cmake), which
# depends on dv_git_commit.
string(TOUPPER "${CMAKE_BUILD_TYPE}" _dv_bt)
set(DETVERIFY_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_dv_bt}}")
string(STRIP "${DETVERIFY_CXX_FLAGS}" DETVERIFY_CXX_FLAGS)
configure_file(${CMAKE_SOURCE_DIR}/cmake/build_info.h.in ${CMAKE_BINARY_DIR}/generated/build_info.h @ONLY)
