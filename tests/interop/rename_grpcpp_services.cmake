# Renames the service classes in grpc_cpp_plugin's output, for a binary that also links
# protoc-gen-rill's code for the same .proto.
#
#   cmake -DSERVICES="UnaryChecks" -DSUFFIX=Grpcpp -DINPUTS="a.grpc.pb.h;a.grpc.pb.cc"
#         -DOUTPUT_DIR=<dir> -P rename_grpcpp_services.cmake
#
# Both plugins name the class of `service S` in package p `p::S` (with nested Service and Stub),
# so one program cannot hold both as generated. The messages (.pb.cc) stay shared; only the
# C++ name of libgrpc++'s service class changes (S -> S<SUFFIX>). Method paths on the wire
# ("/p.S/Method") and the service's full name are untouched: they follow a '.' and are skipped.
# Each INPUT is written to OUTPUT_DIR/<its file name>.
foreach(input IN LISTS INPUTS)
  file(READ "${input}" text)
  foreach(service IN LISTS SERVICES)
    # Twice: a match consumes the character after the name, which may precede the next one.
    foreach(pass 1 2)
      string(REGEX REPLACE "(^|[^.A-Za-z0-9_])${service}([^A-Za-z0-9_])"
             "\\1${service}${SUFFIX}\\2" text "${text}")
    endforeach()
  endforeach()
  get_filename_component(name "${input}" NAME)
  file(WRITE "${OUTPUT_DIR}/${name}.tmp" "${text}")
  file(RENAME "${OUTPUT_DIR}/${name}.tmp" "${OUTPUT_DIR}/${name}")
endforeach()
