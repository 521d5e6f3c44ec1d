# dv_add_test(NAME name SOURCES ... [LIBS ...] [LABELS ...] [CROSS])
# One GoogleTest executable whose cases are registered with ctest under the given labels
# (unit golden determinism compat e2e cuda cross slow). Tests run from the build tree with
# DETVERIFY_SOURCE_DIR / DETVERIFY_SHARED_DIR / DETVERIFY_BINARY_DIR in their environment.
# CROSS: the test also belongs to the cross-ISA build (DETVERIFY_ENGINE_ONLY); only such tests
# are built there, and a cross-compiled build adds the label cross. ctest runs them through the
# toolchain's CMAKE_CROSSCOMPILING_EMULATOR (qemu-user), which passes the environment on.
set(DETVERIFY_SHARED_DIR "${CMAKE_SOURCE_DIR}/../shared" CACHE PATH "The shared/ folder with DetLLM fixtures")
function(dv_add_test)
  cmake_parse_arguments(T "CROSS" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  if(DETVERIFY_ENGINE_ONLY AND NOT T_CROSS)
    return()
  endif()
  if(CMAKE_CROSSCOMPILING)
    list(APPEND T_LABELS cross)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  if(CMAKE_CROSSCOMPILING)
    # Tests that probe the host's process limits skip themselves under qemu-user.
    target_compile_definitions(${T_NAME} PRIVATE DV_TEST_UNDER_EMULATOR=1)
  endif()
  # tests/ headers (support, fixtures) as "tests/..."; a module's headers come with its LIBS.
  dv_module_headers(${T_NAME} tests PRIVATE)
  dv_set_warnings(${T_NAME})
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60)
  # gtest_discover_tests (CMake 3.25) writes a list-valued PROPERTIES entry as separate arguments
  # of set_tests_properties, which shifts every property after it. Labels and environment are
  # set instead by a script ctest includes after the discovered tests (${T_NAME}_TESTS).
  # A case that calls GTEST_SKIP (no GPU, an ISA level this CPU lacks, a model not installed) is
  # reported by ctest as skipped, not passed.
  set(_env "DETVERIFY_SOURCE_DIR=${CMAKE_SOURCE_DIR}" "DETVERIFY_SHARED_DIR=${DETVERIFY_SHARED_DIR}"
    "DETVERIFY_BINARY_DIR=${CMAKE_BINARY_DIR}")
  set(_script "${CMAKE_CURRENT_BINARY_DIR}/${T_NAME}_properties.cmake")
  file(WRITE "${_script}"
    "if(${T_NAME}_TESTS)\n"
    "  set_tests_properties(\${${T_NAME}_TESTS} PROPERTIES\n"
    "    LABELS [==[${T_LABELS}]==]\n"
    "    ENVIRONMENT [==[${_env}]==]\n"
    "    SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==])\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${_script}")
endfunction()
