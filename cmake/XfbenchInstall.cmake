# Installs the host, the SDK (headers, library), the bundled plugins and a CMake package so that
# third parties can write find_package(xfbench) and xfbench_add_plugin(...).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS xfbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS xfbench_sdk EXPORT xfbenchTargets LIBRARY DESTINATION lib)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/harness/include/xfbench DESTINATION include)
install(EXPORT xfbenchTargets NAMESPACE xfbench:: DESTINATION lib/cmake/xfbench)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/xfbenchConfig.cmake.in
  ${CMAKE_BINARY_DIR}/xfbenchConfig.cmake INSTALL_DESTINATION lib/cmake/xfbench)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/xfbenchConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/xfbenchConfig.cmake ${CMAKE_BINARY_DIR}/xfbenchConfigVersion.cmake
              ${CMAKE_SOURCE_DIR}/cmake/XfbenchPlugin.cmake
        DESTINATION lib/cmake/xfbench)
