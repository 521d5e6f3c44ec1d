// Test-suite names of the core tests: DV_CORE_SUITE(IntMathWrap) is CoreIntMathWrap, so
// `ctest -R Core` selects them. test_core_ubsan compiles the same sources with
// DV_CORE_SUITE_SUFFIX=Ubsan, which keeps its ctest names (CoreIntMathWrapUbsan.Edges, ...)
// apart from test_core's (CoreIntMathWrap.Edges, ...).
#pragma once

#ifndef DV_CORE_SUITE_SUFFIX
#define DV_CORE_SUITE_SUFFIX
#endif
#define DV_CORE_SUITE_CAT_(a, b, c) a##b##c
#define DV_CORE_SUITE_CAT(a, b, c) DV_CORE_SUITE_CAT_(a, b, c)
#define DV_CORE_SUITE(name) DV_CORE_SUITE_CAT(Core, name, DV_CORE_SUITE_SUFFIX)
