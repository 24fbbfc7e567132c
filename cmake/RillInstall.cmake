# Installs headers, libraries, protoc-gen-rill, a CMake package and rill.pc, so that users write
#   find_package(rill REQUIRED)
#   rill_add_proto_library(app_proto app.proto)   # messages + services (RillProtobuf.cmake)
#   target_link_libraries(app PRIVATE app_proto)  # or rill::rill
# or compile with `pkg-config --cflags --libs rill`.
#
# Layout under the prefix: include/rill/ (include/rill/proto/: generated grpc.health.v1 and
# grpc.reflection code), lib/ (librill_<layer>.a, or librill.so with RILL_BUILD_SHARED; and the
# optional librill_services.a, librill_ext.a), bin/ (protoc-gen-rill, rill_cli, rill_binlog),
# lib/cmake/rill/, lib/pkgconfig/rill.pc. Both the CMake
# package and rill.pc find everything relative to where they were installed, so the prefix given
# to `cmake --install --prefix` need not be the one configured.
include_guard(GLOBAL)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(NOT RILL_INSTALL_TARGETS)
  message(FATAL_ERROR "RillInstall: src/CMakeLists.txt names no targets in RILL_INSTALL_TARGETS")
endif()

set(RILL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rill)

# Beside rill::rill, the optional libraries built on its public API: rill::services (health,
# reflection, the admin bundle; with the code generated from grpc-proto's health and reflection
# protos, whose headers go to include/rill/proto/) and rill::ext (binary log, metrics, tracing).
# They are static archives in every configuration.
set(RILL_OPTIONAL_TARGETS rill_services rill_services_protos rill_ext rill_binlog_proto)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rill DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${RILL_INSTALL_TARGETS} ${RILL_OPTIONAL_TARGETS} EXPORT rillTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The protoc plugin, exported as the imported executable rill::protoc-gen-rill that
# rill_add_proto_library() runs.
install(TARGETS protoc-gen-rill EXPORT rillTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The command-line tools: rill_cli (any server with reflection) and rill_binlog (reads binary
# logs). rill_cli needs CLI11, which a build without tests may lack.
if(RILL_BUILD_SHARED)
  # Installed programs find the installed librill.so beside them.
  set_target_properties(rill_binlog PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  if(TARGET rill_cli)
    set_target_properties(rill_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  endif()
endif()
install(TARGETS rill_binlog RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET rill_cli)
  install(TARGETS rill_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT rillTargets NAMESPACE rill:: DESTINATION ${RILL_CMAKE_DIR})

# rillConfig.cmake finds the dependencies the exported targets name. A static rill's users link
# nghttp2, zlib and zstd themselves; librill.so carries them.
get_target_property(RILL_LIBRARY_TYPE rill TYPE)
if(RILL_LIBRARY_TYPE STREQUAL "SHARED_LIBRARY")
  set(RILL_CONFIG_SHARED ON)
else()
  set(RILL_CONFIG_SHARED OFF)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rillConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rillConfig.cmake INSTALL_DESTINATION ${RILL_CMAKE_DIR}
  NO_SET_AND_CHECK_MACRO)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rillConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rillConfig.cmake ${PROJECT_BINARY_DIR}/rillConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/RillProtobuf.cmake
        DESTINATION ${RILL_CMAKE_DIR})

# rill.pc. Its prefix is found from the file's own place (${pcfiledir}).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(RILL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH RILL_PC_PREFIX "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
  string(REGEX REPLACE "/$" "" RILL_PC_PREFIX "${RILL_PC_PREFIX}")
  set(RILL_PC_PREFIX "\${pcfiledir}/${RILL_PC_PREFIX}")
endif()
# The compile flags rill::rill gives its users: Asio's switches (those for clang too, since a .pc
# does not know the compiler) and the ABI switches of rill_base.
get_target_property(asio_defines rill_asio INTERFACE_COMPILE_DEFINITIONS)
get_target_property(base_defines rill_base INTERFACE_COMPILE_DEFINITIONS)
set(RILL_PC_CFLAGS "")
foreach(define IN LISTS asio_defines base_defines ITEMS ASIO_HAS_CO_AWAIT=1 ASIO_HAS_STD_COROUTINE=1)
  if(define AND NOT define MATCHES "^\\$<")
    string(APPEND RILL_PC_CFLAGS " -D${define}")
  endif()
endforeach()
if(NOT ASIO_INCLUDE_DIR IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
  string(APPEND RILL_PC_CFLAGS " -isystem ${ASIO_INCLUDE_DIR}")
endif()
if(RILL_CONFIG_SHARED)
  set(RILL_PC_LIBS "-lrill")
  set(RILL_PC_REQUIRES "protobuf")
  set(RILL_PC_REQUIRES_PRIVATE "libnghttp2 >= 1.52, libzstd, zlib, libssl, libcrypto")
else()
  list(TRANSFORM RILL_LAYERS REPLACE "^rill_" "-lrill_" OUTPUT_VARIABLE RILL_PC_LIBS)
  list(JOIN RILL_PC_LIBS " " RILL_PC_LIBS)
  set(RILL_PC_REQUIRES "protobuf, libnghttp2 >= 1.52, libzstd, zlib, libssl, libcrypto")
  set(RILL_PC_REQUIRES_PRIVATE "")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/rill.pc.in ${PROJECT_BINARY_DIR}/rill.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rill.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
