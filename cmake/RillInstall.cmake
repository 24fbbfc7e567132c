# Installs headers, libraries and a CMake package so that users write:
#   find_package(rill REQUIRED)
#   target_link_libraries(app PRIVATE rill::rill)
#   rill_add_proto_library(app_proto app.proto)   # messages + services (RillProtobuf.cmake)
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Nothing to export until the libraries name themselves in RILL_INSTALL_TARGETS (an empty export
# set is a generate-time error).
if(NOT RILL_INSTALL_TARGETS)
  return()
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rill DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${RILL_INSTALL_TARGETS} EXPORT rillTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The protoc plugin, exported as the imported executable rill::protoc-gen-rill that
# rill_add_proto_library() runs.
if(TARGET protoc-gen-rill)
  install(TARGETS protoc-gen-rill EXPORT rillTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT rillTargets NAMESPACE rill:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rill)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rillConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rillConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rill)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rillConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rillConfig.cmake ${PROJECT_BINARY_DIR}/rillConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/RillProtobuf.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/rill)
