# dv_set_warnings(target): the project's warning set; -Werror when DETVERIFY_WERROR is on (CI).
function(dv_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow>)
  # GCC 12 reports false -Wrestrict positives inside libstdc++'s std::string concatenation at -O2+
  # (GCC bug 105329); they say nothing about our code, so that one warning stays off.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
  endif()
  # CUDA sources (the cuda backend's kernels): nvcc's own warnings and the host compiler's.
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(DETVERIFY_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
      $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
  if(DETVERIFY_UBSAN)
    # Host C++ only: nvcc does not take the sanitizer flags.
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=undefined -fno-sanitize-recover=all>)
    target_link_options(${target} PRIVATE -fsanitize=undefined)
  endif()
endfunction()
