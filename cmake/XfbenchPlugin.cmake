# xfbench_add_plugin(<name> SOURCES <files...> [LIBRARIES <targets...>] [OUTPUT_DIRECTORY <dir>]
#                    [NO_INSTALL])
#
# Builds an xfbench plugin: a MODULE library `xfbench_<name>.so` with hidden visibility (only the
# XFBENCH_PLUGIN entry point is exported), linked to the SDK and so to the one shared libbenchmark,
# stamped with the SDK ABI and Google Benchmark version through xfbench::sdk's compile definitions.
# Used in-tree and, installed, by third-party plugin projects (find_package(xfbench)).
function(xfbench_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "xfbench_add_plugin(${name}): no SOURCES")
  endif()
  set(target xfbench_plugin_${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE xfbench::sdk ${ARG_LIBRARIES})
  if(NOT ARG_OUTPUT_DIRECTORY)
    if(DEFINED XFBENCH_PLUGIN_OUTPUT_DIRECTORY)
      set(ARG_OUTPUT_DIRECTORY ${XFBENCH_PLUGIN_OUTPUT_DIRECTORY})
    else()
      set(ARG_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    endif()
  endif()
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME xfbench_${name}
    PREFIX ""
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON
    CUDA_RUNTIME_LIBRARY Shared
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY}
    # Plugins live in <prefix>/lib/xfbench/plugins; the SDK and kernels in <prefix>/lib.
    BUILD_RPATH "\$ORIGIN/../..;\$ORIGIN"
    INSTALL_RPATH "\$ORIGIN/../..;\$ORIGIN")
  if(DEFINED XFBENCH_LIBRARY_DIR)  # out of tree: the installed SDK's lib folder
    set_property(TARGET ${target} APPEND PROPERTY BUILD_RPATH "${XFBENCH_LIBRARY_DIR}")
  endif()
  if(CMAKE_CUDA_COMPILER)
    set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
  if(COMMAND xfbench_install_plugin AND NOT ARG_NO_INSTALL)
    xfbench_install_plugin(${target})
  endif()
endfunction()
