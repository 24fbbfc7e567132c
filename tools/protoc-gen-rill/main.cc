// protoc-gen-rill: the protoc plugin that generates rill service bases and stubs
// (see generator.h).
//
//   protoc --plugin=protoc-gen-rill=path/to/protoc-gen-rill --cpp_out=OUT --rill_out=OUT foo.proto
#include <google/protobuf/compiler/plugin.h>

#include "tools/protoc-gen-rill/generator.h"

int main(int argc, char* argv[]) {
  rill::internal::RillGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
