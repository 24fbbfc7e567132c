// The protoc plugin that turns `service` definitions into rill service bases and client stubs.
//
// For `foo/bar.proto` it writes `foo/bar.rill.h` and `foo/bar.rill.cc` next to protoc's
// `foo/bar.pb.h` / `foo/bar.pb.cc`. Both files are written for every input, even one without
// services, so that build systems can name the outputs without reading the .proto.
//
// For each `service S` in package `a.b`, the header declares in `namespace a::b`:
//
//   class S final {
//    public:
//     static constexpr char kServiceName[] = "a.b.S";
//     static constexpr ::rill::MethodDescriptor kM{"/a.b.S/M", ::rill::RpcKind::kUnary};
//     class Service : public ::rill::Service { ... };   // override to implement the service
//     class Stub { ... };                               // call it through a ::rill::Channel
//   };
//
// Names that would not compile, or would silently change meaning, are refused with a protoc
// error that names the .proto line: C++ keywords, reserved identifiers, predefined macros, and
// method names that collide with the members rill generates (`Service`, `Stub`, `FooAsync` next
// to `Foo`, ...).
//
//   protoc --plugin=protoc-gen-rill=path/to/protoc-gen-rill --cpp_out=OUT --rill_out=OUT foo.proto
//
// The plugin takes no parameters.
//
// Thread safety: thread-compatible (protoc calls it once per file, on one thread).
#ifndef RILL_TOOLS_PROTOC_GEN_RILL_GENERATOR_H_
#define RILL_TOOLS_PROTOC_GEN_RILL_GENERATOR_H_

#include <google/protobuf/compiler/code_generator.h>

#include <cstdint>
#include <string>

namespace rill::internal {

class RillGenerator final : public google::protobuf::compiler::CodeGenerator {
 public:
  bool Generate(const google::protobuf::FileDescriptor* file, const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context,
                std::string* error) const override;

  // The generated code never looks at fields, so `optional` in proto3 needs nothing from it.
  uint64_t GetSupportedFeatures() const override { return FEATURE_PROTO3_OPTIONAL; }
};

}  // namespace rill::internal

#endif  // RILL_TOOLS_PROTOC_GEN_RILL_GENERATOR_H_
