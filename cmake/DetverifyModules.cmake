# Layers CMake enforces (docs/architecture.md). Every header is included as "<module>/<file>.h",
# but no target puts the whole source tree on an include path: each module target exports an
# include root of its own, ${CMAKE_BINARY_DIR}/include/<module>, which holds one symbolic link,
# <module> -> the module's source folder. A target therefore sees the headers of itself and of
# the modules it links, and an include of any other module fails to compile. The finer rules
# within a module and the direction of every edge are checked by tests/layering.

# The include root that exposes `module` alone; created (or re-pointed) at configure time.
function(dv_module_include_root module out_var)
  set(root "${CMAKE_BINARY_DIR}/include/${module}")
  set(link "${root}/${module}")
  set(source "${CMAKE_SOURCE_DIR}/${module}")
  if(IS_SYMLINK "${link}")
    file(READ_SYMLINK "${link}" current)
    if(NOT current STREQUAL source)
      file(REMOVE "${link}")
    endif()
  endif()
  if(NOT EXISTS "${link}")
    file(MAKE_DIRECTORY "${root}")
    file(CREATE_LINK "${source}" "${link}" SYMBOLIC)
  endif()
  set(${out_var} "${root}" PARENT_SCOPE)
endfunction()

# dv_module_headers(target module [PRIVATE]): `target` compiles against "<module>/..." headers and,
# unless PRIVATE, passes that include root on to whatever links it.
function(dv_module_headers target module)
  cmake_parse_arguments(M "PRIVATE" "" "" ${ARGN})
  dv_module_include_root(${module} root)
  if(M_PRIVATE)
    target_include_directories(${target} PRIVATE "${root}")
  else()
    target_include_directories(${target} PUBLIC "${root}")
  endif()
endfunction()

# The generated build provenance (build_info.h, git_commit.h) as a target of its own, so that only
# what links it can include it, and it is regenerated before them.
add_library(dv_build_info INTERFACE)
target_include_directories(dv_build_info INTERFACE "${CMAKE_BINARY_DIR}/generated")
add_dependencies(dv_build_info dv_git_commit)

# dv_check_module_links(dir...): every dv_* library a target in these folders (and below) links
# must exist in this build. Without the check, a DETVERIFY_MODULES list that leaves out a module
# something still links (scripts/libcxx_test.sh) fails only at compile time, on a missing header
# far from the cause; with it, configure names the target, the missing module and the fix.
function(dv_check_module_links)
  foreach(dir ${ARGN})
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
    foreach(target ${targets})
      get_target_property(type ${target} TYPE)
      set(libs "")
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(libs ${target} LINK_LIBRARIES)
      endif()
      get_target_property(interface_libs ${target} INTERFACE_LINK_LIBRARIES)
      foreach(lib ${libs} ${interface_libs})
        if(lib MATCHES "^dv_" AND NOT TARGET ${lib})
          message(FATAL_ERROR "${target} links ${lib}, which this build leaves out; add its "
                              "module to DETVERIFY_MODULES (now: ${DETVERIFY_MODULES})")
        endif()
      endforeach()
    endforeach()
    if(subdirs)
      dv_check_module_links(${subdirs})
    endif()
  endforeach()
endfunction()
