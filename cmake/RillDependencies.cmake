# Every dependency comes from a Debian 12 package; nothing is downloaded at build time.
include_guard(GLOBAL)

find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(Protobuf REQUIRED)
find_package(ZLIB REQUIRED)
find_package(OpenSSL 3 REQUIRED)
pkg_check_modules(NGHTTP2 REQUIRED IMPORTED_TARGET libnghttp2>=1.52)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)

# Standalone Asio (libasio-dev) is header-only.
find_path(ASIO_INCLUDE_DIR asio.hpp REQUIRED)
if(NOT TARGET rill_asio)
  # Exported as rill::asio; the installed rillConfig.cmake finds Asio's headers again.
  add_library(rill_asio INTERFACE)
  set_target_properties(rill_asio PROPERTIES EXPORT_NAME asio)
  target_include_directories(rill_asio SYSTEM INTERFACE $<BUILD_INTERFACE:${ASIO_INCLUDE_DIR}>)
  target_compile_definitions(rill_asio INTERFACE ASIO_STANDALONE ASIO_NO_DEPRECATED)
  # Asio 1.22 decides between aligned_alloc/free and operator new/delete from a libstdc++ macro
  # that is only defined once some standard header was included; a file that includes Asio first
  # got the other pair, an ODR violation AddressSanitizer reports as alloc-dealloc-mismatch.
  # Decide once for every file (glibc has aligned_alloc).
  target_compile_definitions(rill_asio INTERFACE ASIO_HAS_STD_ALIGNED_ALLOC=1)
  # Asio 1.22 only detects clang's experimental coroutines; C++20 ones are there. Decided by the
  # compiler of whoever compiles against rill::asio (also an installed rill's users).
  target_compile_definitions(rill_asio INTERFACE
    $<$<COMPILE_LANG_AND_ID:CXX,Clang,AppleClang>:ASIO_HAS_CO_AWAIT=1>
    $<$<COMPILE_LANG_AND_ID:CXX,Clang,AppleClang>:ASIO_HAS_STD_COROUTINE=1>)
  target_link_libraries(rill_asio INTERFACE Threads::Threads)
endif()

if(RILL_BUILD_TESTS OR RILL_BUILD_BENCHMARKS)
  find_package(GTest REQUIRED)
  find_package(benchmark REQUIRED)
endif()
if(RILL_BUILD_TESTS OR RILL_BUILD_BENCHMARKS OR RILL_BUILD_EXAMPLES)
  find_package(CLI11 CONFIG REQUIRED)
endif()
