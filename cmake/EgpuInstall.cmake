# Installs the library, its headers and a package config so that
# find_package(egpu) gives the targets egpu::egpu and egpu::transparent.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS egpu egpu_transparent EXPORT egpuTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/egpu DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT egpuTargets NAMESPACE egpu:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/egpu)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/egpuConfig.cmake.in
  ${PROJECT_BINARY_DIR}/egpuConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/egpu)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/egpuConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/egpuConfig.cmake ${PROJECT_BINARY_DIR}/egpuConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/egpu)
