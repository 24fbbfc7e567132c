# rill_add_proto_library(): C++ messages (protoc --cpp_out) and rill service classes
# (protoc-gen-rill) from .proto files, built into a static library.
#
# Two lines give a program the messages and the typed service base and stub:
#
#   find_package(rill REQUIRED)
#   rill_add_proto_library(greeter_proto helloworld.proto)
#
#   add_executable(greeter_server greeter_server.cc)
#   target_link_libraries(greeter_server PRIVATE greeter_proto)
#
#   // greeter_server.cc
#   #include "helloworld.rill.h"  // helloworld::Greeter::Service and ::Stub, and the messages
#
# Full signature:
#
#   rill_add_proto_library(<name> [PROTOS] <file.proto>...
#                          [PROTO_ROOT <dir>]
#                          [IMPORT_DIRS <dir>...]
#                          [DEPS <target>...])
#
#   PROTO_ROOT   The directory the .proto files' names (and their imports) are relative to;
#                default: the current source directory. Every file must be under it. Generated
#                files mirror those names: PROTO_ROOT/foo/bar.proto gives foo/bar.pb.h and
#                foo/bar.rill.h, included as "foo/bar.rill.h".
#   IMPORT_DIRS  More directories that imports are resolved from. protobuf's well-known types
#                (google/protobuf/*.proto) are always found.
#   DEPS         Proto libraries made earlier by rill_add_proto_library() whose .proto files these
#                import: their roots are searched for imports and they are linked publicly.
#
# <name> links rill::rill and protobuf::libprotobuf publicly, so linking <name> is all a program
# needs. Relative paths are relative to the current source directory. The generated files are
# rebuilt when a .proto, anything it imports, protoc or protoc-gen-rill changes.
#
# protoc is protobuf::protoc (from find_package(Protobuf)); the plugin is the executable target
# rill::protoc-gen-rill: the installed plugin under find_package(rill), the one built alongside
# when rill is part of the same build.
include_guard(GLOBAL)

function(rill_add_proto_library name)
  cmake_parse_arguments(PARSE_ARGV 1 R "" "PROTO_ROOT" "PROTOS;IMPORT_DIRS;DEPS")
  set(protos ${R_PROTOS} ${R_UNPARSED_ARGUMENTS})
  if(NOT protos)
    message(FATAL_ERROR "rill_add_proto_library(${name}): no .proto files given")
  endif()
  if(NOT TARGET protobuf::protoc)
    find_package(Protobuf REQUIRED)
  endif()
  if(NOT TARGET rill::rill)
    message(FATAL_ERROR "rill_add_proto_library(${name}): the target rill::rill does not exist; "
                        "call find_package(rill) first")
  endif()
  if(NOT TARGET rill::protoc-gen-rill)
    message(FATAL_ERROR "rill_add_proto_library(${name}): the target rill::protoc-gen-rill does "
                        "not exist; call find_package(rill) first")
  endif()

  if(NOT R_PROTO_ROOT)
    set(R_PROTO_ROOT ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  get_filename_component(root "${R_PROTO_ROOT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")

  # Import search path: this library's root first (protoc names each input by the first
  # directory that holds it), then the given directories, then the roots of the DEPS.
  set(import_dirs "${root}")
  foreach(dir IN LISTS R_IMPORT_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND import_dirs "${dir}")
  endforeach()
  foreach(dep IN LISTS R_DEPS)
    if(NOT TARGET ${dep})
      message(FATAL_ERROR "rill_add_proto_library(${name}): DEPS names ${dep}, which is not a "
                          "target (make it with rill_add_proto_library() before this call)")
    endif()
    get_target_property(dep_dirs ${dep} RILL_PROTO_IMPORT_DIRS)
    if(dep_dirs)
      list(APPEND import_dirs ${dep_dirs})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES import_dirs)
  set(import_args "")
  foreach(dir IN LISTS import_dirs)
    list(APPEND import_args "-I${dir}")
  endforeach()

  # Rebuild when the plugin is rebuilt: depend on the real target behind the alias.
  get_target_property(plugin_target rill::protoc-gen-rill ALIASED_TARGET)
  if(NOT plugin_target)
    set(plugin_target rill::protoc-gen-rill)
  endif()

  set(out_root "${CMAKE_CURRENT_BINARY_DIR}/rill_protos/${name}")
  set(sources "")
  set(headers "")
  foreach(proto IN LISTS protos)
    get_filename_component(abs "${proto}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    file(RELATIVE_PATH rel "${root}" "${abs}")
    if(rel MATCHES "^\\.\\./" OR IS_ABSOLUTE "${rel}")
      message(FATAL_ERROR "rill_add_proto_library(${name}): ${abs} is not under PROTO_ROOT "
                          "${root}")
    endif()
    if(NOT rel MATCHES "\\.proto$")
      message(FATAL_ERROR "rill_add_proto_library(${name}): ${proto} does not end in .proto")
    endif()
    string(REGEX REPLACE "\\.proto$" "" stem "${rel}")
    # In the order protoc lists them in the dependency file: Ninja wants the first to match.
    set(outputs "${out_root}/${stem}.pb.cc" "${out_root}/${stem}.pb.h"
                "${out_root}/${stem}.rill.cc" "${out_root}/${stem}.rill.h")
    add_custom_command(
      OUTPUT ${outputs}
      COMMAND ${CMAKE_COMMAND} -E make_directory "${out_root}"
      COMMAND protobuf::protoc ${import_args}
              "--cpp_out=${out_root}"
              "--rill_out=${out_root}"
              "--plugin=protoc-gen-rill=$<TARGET_FILE:rill::protoc-gen-rill>"
              "--dependency_out=${out_root}/${stem}.proto.d"
              "${abs}"
      DEPENDS "${abs}" protobuf::protoc ${plugin_target}
      DEPFILE "${out_root}/${stem}.proto.d"
      COMMENT "Generating C++ messages and rill services from ${rel}"
      VERBATIM)
    list(APPEND sources "${out_root}/${stem}.pb.cc" "${out_root}/${stem}.rill.cc")
    list(APPEND headers "${out_root}/${stem}.pb.h" "${out_root}/${stem}.rill.h")
  endforeach()

  add_library(${name} STATIC ${sources} ${headers})
  target_include_directories(${name} PUBLIC "$<BUILD_INTERFACE:${out_root}>")
  target_compile_features(${name} PUBLIC cxx_std_20)
  target_link_libraries(${name} PUBLIC rill::rill protobuf::libprotobuf ${R_DEPS})
  set_target_properties(${name} PROPERTIES RILL_PROTO_IMPORT_DIRS "${import_dirs}")
endfunction()
