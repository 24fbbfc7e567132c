# Small helpers so that every target is declared the same way.
#
#   rill_cc_library(rill_mem SRCS a.cc b.cc DEPS rill_base PUBLIC_DEPS ...)
#   rill_cc_test(buffer_test SRCS buffer_test.cc DEPS rill_mem LABELS unit)
#   rill_cc_binary(benchmain SRCS main.cc DEPS rill)

include_guard(GLOBAL)

set(RILL_WARNINGS -Wall -Wextra -Wpedantic -Wno-unused-parameter -Wnon-virtual-dtor
    -Woverloaded-virtual $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>)

function(_rill_common_target_setup target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_compile_options(${target} PRIVATE ${RILL_WARNINGS})
  if(RILL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# A library of one layer. NAME is rill_<layer>; it gets the alias rill::<layer>. Layers are
# static archives in every configuration: RILL_BUILD_SHARED links them all into librill.so.
function(rill_cc_library NAME)
  cmake_parse_arguments(R "HEADER_ONLY" "" "SRCS;DEPS;PUBLIC_DEPS;DEFINES" ${ARGN})
  string(REGEX REPLACE "^rill_" "" short ${NAME})
  if(R_HEADER_ONLY)
    add_library(${NAME} INTERFACE)
    target_include_directories(${NAME} INTERFACE
      $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
    target_link_libraries(${NAME} INTERFACE ${R_PUBLIC_DEPS})
    target_compile_features(${NAME} INTERFACE cxx_std_20)
  else()
    add_library(${NAME} STATIC ${R_SRCS})
    target_include_directories(${NAME}
      PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
      PRIVATE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${NAME} PUBLIC ${R_PUBLIC_DEPS} PRIVATE ${R_DEPS})
    target_compile_definitions(${NAME} PRIVATE ${R_DEFINES})
    _rill_common_target_setup(${NAME})
    set_target_properties(${NAME} PROPERTIES EXPORT_NAME ${short})
  endif()
  if(NOT NAME STREQUAL "rill")
    add_library(rill::${short} ALIAS ${NAME})
  endif()
endfunction()

# A test binary linked with the common test main (leak-checking pool installed).
# LABELS: unit | integration | interop | stress, and threads for a test that starts threads or
# reactors (./dev.sh tsan runs exactly those). An integration test runs a server or a channel
# over real sockets, which start reactor threads, so it always gets threads too. Tests run with
# ctest.
function(rill_cc_test NAME)
  cmake_parse_arguments(R "" "TIMEOUT" "SRCS;DEPS;LABELS;ARGS;ENV" ${ARGN})
  add_executable(${NAME} ${R_SRCS})
  target_include_directories(${NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${NAME} PRIVATE ${R_DEPS} rill_testing)
  _rill_common_target_setup(${NAME})
  # Exported symbols let the leak-checking pool print function names in its reports.
  set_target_properties(${NAME} PROPERTIES ENABLE_EXPORTS ON)
  add_test(NAME ${NAME} COMMAND ${NAME} ${R_ARGS})
  if(NOT R_LABELS)
    set(R_LABELS unit)
  endif()
  if("integration" IN_LIST R_LABELS AND NOT "threads" IN_LIST R_LABELS)
    list(APPEND R_LABELS threads)
  endif()
  if(NOT R_TIMEOUT)
    set(R_TIMEOUT 300)
  endif()
  set_tests_properties(${NAME} PROPERTIES LABELS "${R_LABELS}" TIMEOUT ${R_TIMEOUT})
  if(R_ENV)
    set_tests_properties(${NAME} PROPERTIES ENVIRONMENT "${R_ENV}")
  endif()
endfunction()

function(rill_cc_binary NAME)
  cmake_parse_arguments(R "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${NAME} ${R_SRCS})
  target_include_directories(${NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${NAME} PRIVATE ${R_DEPS})
  _rill_common_target_setup(${NAME})
endfunction()
