// Runs protoc with protoc-gen-rill, as a build does, and checks the files it writes and the
// .proto files it refuses. That the generated code compiles is proven by the build itself
// (codegen_test_protos, codegen_usage); these tests pin down what it says.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace rill {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

struct ProtocRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

std::string Quote(const std::string& s) {
  std::string quoted = "'";
  for (const char c : s) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

class CodegenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "rill_codegen_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    out_ = dir_ / "out";
    fs::create_directories(out_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs protoc on `protos` (names relative to `root`), writing C++ and rill output to out_.
  ProtocRun Protoc(const fs::path& root, const std::vector<std::string>& protos,
                   const std::string& rill_parameter = "") {
    std::string command =
        Quote(RILL_TEST_PROTOC) + " -I" + Quote(root.string()) +
        " --plugin=protoc-gen-rill=" + Quote(RILL_TEST_PLUGIN) +
        " --cpp_out=" + Quote(out_.string()) + " --rill_out=" +
        Quote((rill_parameter.empty() ? "" : rill_parameter + ":") + out_.string());
    for (const std::string& proto : protos) command += " " + Quote(proto);
    command += " 2>&1";
    ProtocRun run;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return run;
    std::array<char, 4096> buffer;
    size_t n;
    while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
      run.output.append(buffer.data(), n);
    const int status = pclose(pipe);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return run;
  }

  // Writes `text` as dir_/protos/<name> and runs protoc on it.
  ProtocRun ProtocOnText(const std::string& name, const std::string& text) {
    const fs::path root = dir_ / "protos";
    fs::create_directories((root / name).parent_path());
    std::ofstream(root / name) << text;
    return Protoc(root, {name});
  }

  std::string Read(const std::string& name) const {
    std::ifstream in(out_ / name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  void GenerateTestProtos() {
    const ProtocRun run = Protoc(RILL_TEST_PROTOS, {"shared/geo.proto", "routes/route_guide.proto",
                                                    "bare/bare.proto", "multi/multi.proto"});
    ASSERT_EQ(run.exit_code, 0) << run.output;
  }

  fs::path dir_;
  fs::path out_;
};

TEST_F(CodegenTest, HelloworldHasTheDocumentedShape) {
  const ProtocRun run = Protoc(RILL_TEST_HELLOWORLD_ROOT, {"helloworld/helloworld.proto"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "");

  const std::string h = Read("helloworld/helloworld.rill.h");
  EXPECT_THAT(h, AllOf(HasSubstr("from helloworld/helloworld.proto. Do not edit."),
                       HasSubstr("#ifndef HELLOWORLD_HELLOWORLD_RILL_H_\n"
                                 "#define HELLOWORLD_HELLOWORLD_RILL_H_\n"),
                       HasSubstr("#include \"helloworld/helloworld.pb.h\"\n"
                                 "#include \"rill/client_call.h\"\n"
                                 "#include \"rill/server_stream.h\"\n"
                                 "#include \"rill/service.h\"\n"),
                       HasSubstr("namespace helloworld {\n"),
                       HasSubstr("class Greeter final {\n public:\n"),
                       HasSubstr("static constexpr char kServiceName[] = \"helloworld.Greeter\";"),
                       HasSubstr("static constexpr ::rill::MethodDescriptor kSayHello{"
                                 "\"/helloworld.Greeter/SayHello\", ::rill::RpcKind::kUnary};"),
                       HasSubstr("class Service : public ::rill::Service {"),
                       HasSubstr("class Stub {"), HasSubstr("}  // namespace helloworld\n")));
  // The server side: a plain and a coroutine form.
  EXPECT_THAT(h, HasSubstr("virtual ::rill::Status SayHello(::rill::ServerContext& context, "
                           "const ::helloworld::HelloRequest& request, "
                           "::helloworld::HelloReply& response);"));
  EXPECT_THAT(h, HasSubstr("virtual ::rill::Awaitable<::rill::Status> SayHelloAsync("
                           "::rill::ServerContext& context, const ::helloworld::HelloRequest& "
                           "request, ::helloworld::HelloReply& response);"));
  // The client side: blocking and any completion token.
  EXPECT_THAT(h, HasSubstr("explicit Stub(std::shared_ptr<::rill::Channel> channel)"));
  EXPECT_THAT(h, HasSubstr("::rill::Status SayHello(::rill::ClientContext& context, "
                           "const ::helloworld::HelloRequest& request, "
                           "::helloworld::HelloReply* response) {\n"
                           "      return ::rill::detail::BlockingUnaryCall(*channel_, kSayHello, "
                           "context, request, response);"));
  EXPECT_THAT(h, HasSubstr("template <typename CompletionToken>\n"
                           "    auto SayHello(::rill::ClientContext& context, "
                           "const ::helloworld::HelloRequest& request, "
                           "::helloworld::HelloReply* response, CompletionToken&& token) {\n"
                           "      return ::rill::detail::AsyncUnaryCall(*channel_, kSayHello, "
                           "context, request, response, "
                           "std::forward<CompletionToken>(token));"));
  EXPECT_THAT(h, HasSubstr("const std::shared_ptr<::rill::Channel>& channel() const"));
  // The comment on the rpc in the .proto.
  EXPECT_THAT(h, HasSubstr("    // Answers a name with a greeting.\n"));

  const std::string cc = Read("helloworld/helloworld.rill.cc");
  EXPECT_THAT(cc, AllOf(HasSubstr("#include \"helloworld/helloworld.rill.h\"\n"),
                        HasSubstr("Greeter::Service::Service()\n    : ::rill::Service(kServiceName, "),
                        HasSubstr("AddMethod(std::make_unique<::rill::detail::UnaryMethodHandler<"
                                  "Service, ::helloworld::HelloRequest, "
                                  "::helloworld::HelloReply>>(kSayHello.path, this, "
                                  "&Service::SayHello, &Service::SayHelloAsync));"),
                        HasSubstr("return ::rill::detail::RunAsyncHandler(context);"),
                        HasSubstr("co_return ::rill::Status(::rill::StatusCode::kUnimplemented, "
                                  "\"helloworld.Greeter.SayHello is not implemented\");")));
}

TEST_F(CodegenTest, StreamingKindsMapToTheirHandlersAndStubTypes) {
  GenerateTestProtos();
  const std::string h = Read("routes/route_guide.rill.h");
  const std::string cc = Read("routes/route_guide.rill.cc");
  const std::string prefix = "static constexpr ::rill::MethodDescriptor ";

  // Server streaming.
  EXPECT_THAT(h, HasSubstr(prefix + "kListFeatures{\"/codegen.routes.v1.RouteGuide/"
                                    "ListFeatures\", ::rill::RpcKind::kServerStreaming};"));
  EXPECT_THAT(h, HasSubstr("virtual ::rill::Awaitable<::rill::Status> ListFeatures("
                           "::rill::ServerContext& context, const ::codegen::shared::Rectangle& "
                           "request, ::rill::ServerWriter<::codegen::routes::v1::Feature>& "
                           "writer);"));
  EXPECT_THAT(h, HasSubstr("std::unique_ptr<::rill::ClientReader<::codegen::routes::v1::Feature>>"
                           " ListFeatures(::rill::ClientContext& context, "
                           "const ::codegen::shared::Rectangle& request) {"));
  EXPECT_THAT(h, HasSubstr("reader->SendRequest(request);"));
  EXPECT_THAT(cc, HasSubstr("::rill::detail::ServerStreamingMethodHandler<Service, "
                            "::codegen::shared::Rectangle, ::codegen::routes::v1::Feature>>("
                            "kListFeatures.path, this, &Service::ListFeatures)"));

  // Client streaming.
  EXPECT_THAT(h, HasSubstr(prefix + "kRecordRoute{\"/codegen.routes.v1.RouteGuide/"
                                    "RecordRoute\", ::rill::RpcKind::kClientStreaming};"));
  EXPECT_THAT(h, HasSubstr("virtual ::rill::Awaitable<::rill::Status> RecordRoute("
                           "::rill::ServerContext& context, "
                           "::rill::ServerReader<::codegen::shared::Point>& reader, "
                           "::codegen::routes::v1::RouteSummary& response);"));
  EXPECT_THAT(h, HasSubstr("std::unique_ptr<::rill::ClientWriter<::codegen::shared::Point>> "
                           "RecordRoute(::rill::ClientContext& context, "
                           "::codegen::routes::v1::RouteSummary* response) {"));
  EXPECT_THAT(cc, HasSubstr("::rill::detail::ClientStreamingMethodHandler<Service, "
                            "::codegen::shared::Point, ::codegen::routes::v1::RouteSummary>>("
                            "kRecordRoute.path, this, &Service::RecordRoute)"));

  // Bidirectional streaming: the server writes responses and reads requests.
  EXPECT_THAT(h, HasSubstr(prefix + "kRouteChat{\"/codegen.routes.v1.RouteGuide/RouteChat\", "
                                    "::rill::RpcKind::kBidiStreaming};"));
  EXPECT_THAT(h, HasSubstr("virtual ::rill::Awaitable<::rill::Status> RouteChat("
                           "::rill::ServerContext& context, ::rill::ServerReaderWriter<"
                           "::codegen::routes::v1::RouteNote, ::codegen::routes::v1::RouteNote>& "
                           "stream);"));
  EXPECT_THAT(h, HasSubstr("std::unique_ptr<::rill::ClientReaderWriter<"
                           "::codegen::routes::v1::RouteNote, ::codegen::routes::v1::RouteNote>> "
                           "RouteChat(::rill::ClientContext& context) {"));
  EXPECT_THAT(cc, HasSubstr("::rill::detail::BidiStreamingMethodHandler<Service, "
                            "::codegen::routes::v1::RouteNote, ::codegen::routes::v1::RouteNote>>"
                            "(kRouteChat.path, this, &Service::RouteChat)"));

  // Streaming methods have only a coroutine form, which answers UNIMPLEMENTED by default.
  EXPECT_THAT(h, AllOf(Not(HasSubstr("ListFeaturesAsync")), Not(HasSubstr("RecordRouteAsync")),
                       Not(HasSubstr("RouteChatAsync"))));
  EXPECT_THAT(cc, HasSubstr("\"codegen.routes.v1.RouteGuide.RouteChat is not implemented\""));
}

TEST_F(CodegenTest, BidiOrderOfTypeArguments) {
  // With different request and response types the order of the template arguments shows.
  GenerateTestProtos();
  const std::string h = Read("bare/bare.rill.h");
  EXPECT_THAT(h, HasSubstr("::rill::ServerReaderWriter<::BareReply, ::BareRequest>& stream"));
  EXPECT_THAT(h, HasSubstr("std::unique_ptr<::rill::ClientReaderWriter<::BareRequest, "
                           "::BareReply>> EchoStream("));
  EXPECT_THAT(Read("bare/bare.rill.cc"),
              HasSubstr("::rill::detail::BidiStreamingMethodHandler<Service, ::BareRequest, "
                        "::BareReply>>"));
}

TEST_F(CodegenTest, PackagesBecomeNamespaces) {
  GenerateTestProtos();
  const std::string nested = Read("routes/route_guide.rill.h");
  EXPECT_THAT(nested, AllOf(HasSubstr("\nnamespace codegen::routes::v1 {\n"),
                            HasSubstr("\n}  // namespace codegen::routes::v1\n")));
  EXPECT_THAT(Read("routes/route_guide.rill.cc"),
              AllOf(HasSubstr("\nnamespace codegen::routes::v1 {\n"),
                    HasSubstr("RouteGuide::Service::Service()\n    : ::rill::Service(kServiceName, ")));

  // No package: the global namespace, and a service name without a package prefix.
  const std::string bare = Read("bare/bare.rill.h");
  EXPECT_THAT(bare, Not(HasSubstr("namespace")));
  EXPECT_THAT(bare,
              AllOf(HasSubstr("\nclass Bare final {\n"), HasSubstr("kServiceName[] = \"Bare\";"),
                    HasSubstr("kEcho{\"/Bare/Echo\", ::rill::RpcKind::kUnary};")));
}

TEST_F(CodegenTest, MessageTypesAreFullyQualified) {
  GenerateTestProtos();
  const std::string h = Read("routes/route_guide.rill.h");
  // Another package, protobuf's well-known types, and this package: all from the global scope.
  EXPECT_THAT(h, HasSubstr("const ::codegen::shared::Point& request, "
                           "::codegen::routes::v1::Feature& response"));
  EXPECT_THAT(h, HasSubstr("const ::google::protobuf::Empty& request, "
                           "::google::protobuf::Empty& response"));
  // Nested messages use protobuf's C++ class name.
  EXPECT_THAT(Read("multi/multi.rill.h"), HasSubstr("const ::codegen::multi::Outer& request, "
                                                    "::codegen::multi::Outer_Inner& response"));
}

TEST_F(CodegenTest, EveryServiceOfAFileIsGenerated) {
  GenerateTestProtos();
  const std::string h = Read("multi/multi.rill.h");
  EXPECT_THAT(h, AllOf(HasSubstr("class Alpha final {"), HasSubstr("class Beta final {"),
                       HasSubstr("kServiceName[] = \"codegen.multi.Alpha\";"),
                       HasSubstr("kServiceName[] = \"codegen.multi.Beta\";"),
                       HasSubstr("kCall{\"/codegen.multi.Alpha/Call\""),
                       HasSubstr("kAlpha{\"/codegen.multi.Beta/Alpha\"")));
  const std::string cc = Read("multi/multi.rill.cc");
  EXPECT_THAT(cc, AllOf(HasSubstr("Alpha::Service::Service()\n    : ::rill::Service(kServiceName, "),
                        HasSubstr("Beta::Service::Service()\n    : ::rill::Service(kServiceName, ")));
}

TEST_F(CodegenTest, CommentsAreCarriedIntoTheHeader) {
  GenerateTestProtos();
  const std::string h = Read("routes/route_guide.rill.h");
  // The service's leading comment, just before its class; `$` survives the printer, and a
  // trailing backslash no longer splices the next line into the comment.
  EXPECT_THAT(h, HasSubstr("// Interface exported by the server.\n"
                           "// Comments may hold $dollars$, \"quotes\" and a trailing backslash "
                           "\\ (end of line)\n"
                           "// without breaking the generated code.\n"
                           "class RouteGuide final {"));
  // Leading (line and block) and trailing comments of rpcs, on the server and the client side.
  EXPECT_THAT(h, HasSubstr("    // Unary: the feature at a point.\n"
                           "    // Unary: override GetFeature"));
  EXPECT_THAT(h, HasSubstr("    // Client streaming: a summary of the points traversed.\n"
                           "    // Client streaming: Read() the requests"));
  EXPECT_THAT(h, HasSubstr("    // Trailing comment.\n"
                           "    // Blocking;"));
  EXPECT_THAT(Read("multi/multi.rill.h"),
              HasSubstr("// Second service of the file.\nclass Beta final {"));
}

TEST_F(CodegenTest, FileWithoutServicesGivesCompilableEmptyFiles) {
  GenerateTestProtos();
  EXPECT_EQ(Read("shared/geo.rill.h"),
            "// Generated by protoc-gen-rill from shared/geo.proto. Do not edit.\n"
            "#ifndef SHARED_GEO_RILL_H_\n"
            "#define SHARED_GEO_RILL_H_\n"
            "\n"
            "// shared/geo.proto defines no services.\n"
            "#include \"shared/geo.pb.h\"\n"
            "\n"
            "#endif  // SHARED_GEO_RILL_H_\n");
  EXPECT_EQ(Read("shared/geo.rill.cc"),
            "// Generated by protoc-gen-rill from shared/geo.proto. Do not edit.\n"
            "#include \"shared/geo.rill.h\"\n");
}

// Services record where their descriptor is (for server reflection), naming the file's
// descriptor table so that the linker keeps it; the lite runtime has no descriptors.
TEST_F(CodegenTest, ServicesFindTheirDescriptorExceptOnTheLiteRuntime) {
  ProtocRun run = ProtocOnText("full/my_api-v2.proto", R"(syntax = "proto3";
package full;
message M {}
service S { rpc Get(M) returns (M); }
)");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(Read("full/my_api-v2.rill.cc"),
              AllOf(HasSubstr("#include <google/protobuf/descriptor.h>\n"),
                    HasSubstr("AssignDescriptors(&::descriptor_table_full_2fmy_5fapi_2dv2_2eproto)"),
                    HasSubstr("generated_pool()->FindServiceByName(kServiceName)")));

  run = ProtocOnText("lite/api.proto", R"(syntax = "proto3";
package lite;
option optimize_for = LITE_RUNTIME;
message M {}
service S { rpc Get(M) returns (M); }
)");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string cc = Read("lite/api.rill.cc");
  EXPECT_THAT(cc, HasSubstr("S::Service::Service() : ::rill::Service(kServiceName) {"));
  EXPECT_THAT(cc, Not(HasSubstr("descriptor")));
}

TEST_F(CodegenTest, HeaderGuardIsAValidIdentifier) {
  const ProtocRun run = ProtocOnText("9-lives/my.api.proto", R"(syntax = "proto3";
package lives;
message M {}
service S { rpc Get(M) returns (M); }
)");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(Read("9-lives/my.api.rill.h"),
              AllOf(HasSubstr("#ifndef RILL_9_LIVES_MY_API_RILL_H_\n"),
                    HasSubstr("#include \"9-lives/my.api.pb.h\"")));
}

// A .proto that declares `service_body` in package `package`, with message M.
std::string ProtoWithService(const std::string& package, const std::string& service_body) {
  std::string text = "syntax = \"proto3\";\n";
  if (!package.empty()) text += "package " + package + ";\n";
  return text + "message M {}\n" + service_body + "\n";
}

TEST_F(CodegenTest, KeywordRpcNameIsAProtocError) {
  const ProtocRun run = ProtocOnText(
      "bad.proto", ProtoWithService("kw", "service Store {\n  rpc delete(M) returns (M);\n}"));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.output, HasSubstr("--rill_out: bad.proto: 5:3: rpc \"delete\" of service "
                                    "\"kw.Store\": the name is a C++ keyword; rename the rpc"));
  EXPECT_FALSE(fs::exists(out_ / "bad.rill.h"));
}

TEST_F(CodegenTest, UnusableNamesAreProtocErrors) {
  struct Case {
    std::string package;
    std::string service;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"p", "service class { rpc Get(M) returns (M); }",
       "service \"p.class\": the name is a C++ keyword; rename the service"},
      {"p", "service Service { rpc Get(M) returns (M); }",
       "the name is taken by the nested class Service::Service that rill generates"},
      {"p.for", "service S { rpc Get(M) returns (M); }",
       "package \"p.for\": its part \"for\" is a C++ keyword; it cannot name a C++ namespace"},
      {"", "service rill { rpc Get(M) returns (M); }",
       "the name would collide with the C++ namespace of the same name"},
      {"", "service _lower { rpc Get(M) returns (M); }",
       "is a reserved C++ identifier in the global namespace"},
      {"p", "service S { rpc _Get(M) returns (M); }",
       "rpc \"_Get\" of service \"p.S\": the name is a reserved C++ identifier (an underscore "
       "followed by an uppercase letter)"},
      {"p", "service S { rpc Get__It(M) returns (M); }",
       "the name is a reserved C++ identifier (it contains a double underscore)"},
      {"p", "service S { rpc linux(M) returns (M); }", "the name is a predefined C/C++ macro"},
      {"p", "service S { rpc Stub(M) returns (M); }",
       "rpc \"Stub\" of service \"p.S\": rill names its member functions \"Stub\", but that name "
       "is taken by the nested class S::Stub; rename the rpc"},
      {"p", "service S { rpc channel(M) returns (M); }", "is taken by S::Stub::channel()"},
      {"p", "service S { rpc AddMethod(M) returns (M); }",
       "is taken by rill::Service::AddMethod()"},
      {"p", "service S { rpc ServiceName(M) returns (M); }",
       "rill names its method descriptor \"kServiceName\", but that name is taken by the "
       "constant S::kServiceName"},
      {"p", "service S { rpc CompletionToken(M) returns (M); }",
       "is taken by the template parameter of the asynchronous stub methods"},
      {"p", "service S { rpc Get(M) returns (M); rpc GetAsync(stream M) returns (M); }",
       "rpc \"GetAsync\" of service \"p.S\": rill names its member functions \"GetAsync\", but "
       "that name is taken by the coroutine form of rpc \"Get\"; rename the rpc"},
      {"p", "service S { rpc Get(M) returns (M); rpc kGet(M) returns (M); }",
       "rill names its member functions \"kGet\", but that name is taken by the method "
       "descriptor of rpc \"Get\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.service);
    const ProtocRun run = ProtocOnText("bad.proto", ProtoWithService(c.package, c.service));
    EXPECT_NE(run.exit_code, 0);
    EXPECT_THAT(run.output, HasSubstr(c.expected));
  }
}

TEST_F(CodegenTest, EveryProblemIsReported) {
  const ProtocRun run = ProtocOnText(
      "bad.proto",
      ProtoWithService("p",
                       "service S {\n  rpc new(M) returns (M);\n  rpc Stub(M) returns (M);\n}"));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.output, HasSubstr("bad.proto: 5:3: rpc \"new\""));
  EXPECT_THAT(run.output, HasSubstr("bad.proto: 6:3: rpc \"Stub\""));
}

TEST_F(CodegenTest, UnknownParameterIsAProtocError) {
  const fs::path root = dir_ / "protos";
  fs::create_directories(root);
  std::ofstream(root / "ok.proto")
      << ProtoWithService("p", "service S { rpc Get(M) returns (M); }");
  const ProtocRun run = Protoc(root, {"ok.proto"}, "lite");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.output, HasSubstr("protoc-gen-rill takes no parameters (got \"lite\")"));
}

}  // namespace
}  // namespace rill
