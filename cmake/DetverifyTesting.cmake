# dv_add_test(NAME name SOURCES ... [LIBS ...] [LABELS ...])
# One GoogleTest executable whose cases are registered with ctest under the given labels
# (unit golden determinism compat e2e cuda cross slow). Tests run from the build tree with
# DETVERIFY_SOURCE_DIR / DETVERIFY_SHARED_DIR in their environment.
set(DETVERIFY_SHARED_DIR "${CMAKE_SOURCE_DIR}/../shared" CACHE PATH "The shared/ folder with DetLLM fixtures")
function(dv_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${T_NAME} PRIVATE ${CMAKE_SOURCE_DIR})
  dv_set_warnings(${T_NAME})
  gtest_discover_tests(${T_NAME}
    PROPERTIES LABELS "${T_LABELS}"
      ENVIRONMENT "DETVERIFY_SOURCE_DIR=${CMAKE_SOURCE_DIR};DETVERIFY_SHARED_DIR=${DETVERIFY_SHARED_DIR};DETVERIFY_BINARY_DIR=${CMAKE_BINARY_DIR}"
    DISCOVERY_TIMEOUT 60)
endfunction()
