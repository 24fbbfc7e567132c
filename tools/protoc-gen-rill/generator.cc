#include "tools/protoc-gen-rill/generator.h"

#include <google/protobuf/compiler/code_generator.h>
#include <google/protobuf/compiler/cpp/names.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/printer.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rill::internal {
namespace {

namespace pb = google::protobuf;
using Vars = std::map<std::string, std::string>;

// C++20 keywords and alternative tokens: none of them can name a class or a function.
// clang-format off
constexpr std::string_view kCppKeywords[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
    "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
    "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
    "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
    "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if",
    "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr",
    "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
    "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast",
    "struct", "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef",
    "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t",
    "while", "xor", "xor_eq",
};
// clang-format on

// Object-like macros that the C and C++ standard headers, glibc, or GCC and Clang in their
// default GNU modes define. An identifier spelled like one is replaced before the compiler sees
// it.
constexpr std::string_view kPredefinedMacros[] = {
    "NULL",   "EOF",    "errno", "assert", "offsetof", "stdin",
    "stdout", "stderr", "linux", "unix",   "major",    "minor",
};

// Names a class in the global namespace cannot take: the namespaces the generated code uses.
constexpr std::string_view kGlobalNamespaces[] = {"asio", "google", "rill", "std"};

// Concatenates, allocating once.
std::string Cat(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (const std::string_view part : parts) size += part.size();
  std::string out;
  out.reserve(size);
  for (const std::string_view part : parts) out.append(part);
  return out;
}

template <size_t N>
bool Contains(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

// Why `name` cannot be used verbatim as a C++ identifier in generated code, or "" if it can.
// `global` is true for names declared in the global namespace, where more names are reserved.
std::string_view IdentifierProblem(std::string_view name, bool global) {
  if (Contains(kCppKeywords, name)) return "is a C++ keyword";
  if (Contains(kPredefinedMacros, name)) return "is a predefined C/C++ macro";
  if (name.size() >= 2 && name[0] == '_' &&
      std::isupper(static_cast<unsigned char>(name[1])) != 0) {
    return "is a reserved C++ identifier (an underscore followed by an uppercase letter)";
  }
  if (name.find("__") != std::string_view::npos) {
    return "is a reserved C++ identifier (it contains a double underscore)";
  }
  if (global && !name.empty() && name[0] == '_') {
    return "is a reserved C++ identifier in the global namespace (it begins with an underscore)";
  }
  if (global && Contains(kGlobalNamespaces, name)) {
    return "would collide with the C++ namespace of the same name";
  }
  return "";
}

// "line:column: " of a descriptor in its .proto (1-based), or "" without source info.
template <typename Descriptor>
std::string Where(const Descriptor* descriptor) {
  pb::SourceLocation location;
  if (!descriptor->GetSourceLocation(&location)) return "";
  return Cat({std::to_string(location.start_line + 1), ":",
              std::to_string(location.start_column + 1), ": "});
}

std::vector<std::string> SplitPackage(const std::string& package) {
  std::vector<std::string> parts;
  if (package.empty()) return parts;
  size_t start = 0;
  while (true) {
    const size_t dot = package.find('.', start);
    parts.push_back(package.substr(start, dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

std::string StripProto(const std::string& filename) { return pb::compiler::StripProto(filename); }

// "foo/bar-baz.proto" -> "FOO_BAR_BAZ_RILL_H_": letters, digits and single underscores, never
// beginning with an underscore or a digit.
std::string HeaderGuard(const std::string& proto_name) {
  std::string guard;
  for (const char c : StripProto(proto_name)) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      guard += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    } else if (!guard.empty() && guard.back() != '_') {
      guard += '_';
    }
  }
  if (guard.empty() || std::isdigit(static_cast<unsigned char>(guard[0])) != 0) {
    guard = "RILL_" + guard;
  }
  if (guard.back() != '_') guard += '_';
  return guard + "RILL_H_";
}

enum class Kind { kUnary, kClientStreaming, kServerStreaming, kBidiStreaming };

Kind KindOf(const pb::MethodDescriptor* method) {
  if (method->client_streaming()) {
    return method->server_streaming() ? Kind::kBidiStreaming : Kind::kClientStreaming;
  }
  return method->server_streaming() ? Kind::kServerStreaming : Kind::kUnary;
}

Vars MethodVars(const pb::MethodDescriptor* method) {
  static constexpr const char* kKindNames[] = {"kUnary", "kClientStreaming", "kServerStreaming",
                                               "kBidiStreaming"};
  const pb::ServiceDescriptor* service = method->service();
  return {
      {"service_class", service->name()},
      {"service_full_name", service->full_name()},
      {"method", method->name()},
      {"path", "/" + service->full_name() + "/" + method->name()},
      {"kind", kKindNames[static_cast<int>(KindOf(method))]},
      {"request", pb::compiler::cpp::QualifiedClassName(method->input_type())},
      {"response", pb::compiler::cpp::QualifiedClassName(method->output_type())},
  };
}

// Checks that every C++ name the generated code declares for `file` compiles and means what it
// says. Appends one message per problem.
void CheckNames(const pb::FileDescriptor* file, std::vector<std::string>& problems) {
  const std::vector<std::string> package = SplitPackage(file->package());
  for (size_t i = 0; i < package.size(); ++i) {
    if (const std::string_view why = IdentifierProblem(package[i], i == 0); !why.empty()) {
      problems.push_back(Cat({"package \"", file->package(), "\": its part \"", package[i], "\" ",
                              why, "; it cannot name a C++ namespace"}));
    }
  }

  for (int s = 0; s < file->service_count(); ++s) {
    const pb::ServiceDescriptor* service = file->service(s);
    const std::string& cls = service->name();
    const std::string service_where =
        Cat({Where(service), "service \"", service->full_name(), "\""});
    if (const std::string_view why = IdentifierProblem(cls, package.empty()); !why.empty()) {
      problems.push_back(Cat({service_where, ": the name ", why, "; rename the service"}));
    }
    if (cls == "Service" || cls == "Stub") {
      problems.push_back(Cat({service_where, ": the name is taken by the nested class ", cls,
                              "::", cls, " that rill generates; rename the service"}));
    }

    // Every member name the generated classes declare, and who declared it. The three classes
    // (S, S::Service, S::Stub) are treated as one scope: a member of a nested class with the
    // name of a member of S would hide it from the generated code inside the nested class.
    std::map<std::string, std::string> taken = {
        {"Service", Cat({"the nested class ", cls, "::Service"})},
        {"Stub", Cat({"the nested class ", cls, "::Stub"})},
        {"kServiceName", Cat({"the constant ", cls, "::kServiceName"})},
        {"name", "rill::Service::name()"},
        {"methods", "rill::Service::methods()"},
        {"AddMethod", "rill::Service::AddMethod()"},
        {"channel", Cat({cls, "::Stub::channel()"})},
        {"channel_", Cat({"the member ", cls, "::Stub::channel_"})},
        {"CompletionToken", "the template parameter of the asynchronous stub methods"},
    };
    for (int m = 0; m < service->method_count(); ++m) {
      const pb::MethodDescriptor* method = service->method(m);
      const std::string& name = method->name();
      const std::string where =
          Cat({Where(method), "rpc \"", name, "\" of service \"", service->full_name(), "\""});
      if (const std::string_view why = IdentifierProblem(name, false); !why.empty()) {
        problems.push_back(Cat({where, ": the name ", why, "; rename the rpc"}));
        continue;
      }
      // (member name, what it is)
      std::vector<std::pair<std::string, std::string>> wanted = {
          {name, "member functions"},
          {"k" + name, "method descriptor"},
      };
      if (KindOf(method) == Kind::kUnary) wanted.emplace_back(name + "Async", "coroutine form");
      for (const auto& [member, what] : wanted) {
        auto [it, inserted] = taken.emplace(member, Cat({"the ", what, " of rpc \"", name, "\""}));
        if (!inserted) {
          problems.push_back(
              Cat({where, ": rill names its ", what, " \"", member,
                   "\", but that name is taken by ", it->second, "; rename the rpc"}));
        }
      }
    }
  }
}

// Prints a comment from the .proto as `//` lines.
void PrintComment(pb::io::Printer& printer, const std::string& comment) {
  if (comment.empty()) return;
  size_t start = 0;
  while (start < comment.size()) {
    size_t end = comment.find('\n', start);
    if (end == std::string::npos) end = comment.size();
    std::string line = comment.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) {
      line.pop_back();
    }
    // A backslash at the end of a `//` line would splice the next line into the comment.
    if (!line.empty() && line.back() == '\\') line += " (end of line)";
    printer.Print("//$line$\n", "line", line);
  }
}

template <typename Descriptor>
void PrintLeadingComments(pb::io::Printer& printer, const Descriptor* descriptor) {
  pb::SourceLocation location;
  if (!descriptor->GetSourceLocation(&location)) return;
  PrintComment(printer, location.leading_comments);
  PrintComment(printer, location.trailing_comments);
}

void PrintServiceMethodDeclaration(pb::io::Printer& printer, const pb::MethodDescriptor* method) {
  const Vars vars = MethodVars(method);
  PrintLeadingComments(printer, method);
  switch (KindOf(method)) {
    case Kind::kUnary:
      printer.Print(vars,
                    "// Unary: override $method$ to run inline on the reactor, or $method$Async "
                    "for a coroutine.\n"
                    "virtual ::rill::Status $method$(::rill::ServerContext& context, "
                    "const $request$& request, $response$& response);\n"
                    "virtual ::rill::Awaitable<::rill::Status> $method$Async("
                    "::rill::ServerContext& context, const $request$& request, "
                    "$response$& response);\n");
      break;
    case Kind::kClientStreaming:
      printer.Print(vars,
                    "// Client streaming: Read() the requests from `reader` until it yields "
                    "false, then fill `response`.\n"
                    "virtual ::rill::Awaitable<::rill::Status> $method$("
                    "::rill::ServerContext& context, ::rill::ServerReader<$request$>& reader, "
                    "$response$& response);\n");
      break;
    case Kind::kServerStreaming:
      printer.Print(vars,
                    "// Server streaming: Write() the responses to `writer`.\n"
                    "virtual ::rill::Awaitable<::rill::Status> $method$("
                    "::rill::ServerContext& context, const $request$& request, "
                    "::rill::ServerWriter<$response$>& writer);\n");
      break;
    case Kind::kBidiStreaming:
      printer.Print(vars,
                    "// Bidirectional streaming: Read() requests from and Write() responses to "
                    "`stream`, in any order.\n"
                    "virtual ::rill::Awaitable<::rill::Status> $method$("
                    "::rill::ServerContext& context, "
                    "::rill::ServerReaderWriter<$response$, $request$>& stream);\n");
      break;
  }
}

void PrintStubMethod(pb::io::Printer& printer, const pb::MethodDescriptor* method) {
  const Vars vars = MethodVars(method);
  PrintLeadingComments(printer, method);
  switch (KindOf(method)) {
    case Kind::kUnary:
      printer.Print(
          vars,
          "// Blocking; must not be called on a reactor thread.\n"
          "::rill::Status $method$(::rill::ClientContext& context, const $request$& request, "
          "$response$* response) {\n"
          "  return ::rill::detail::BlockingUnaryCall(*channel_, k$method$, context, request, "
          "response);\n"
          "}\n"
          "// Asynchronous, with any Asio completion token (asio::use_awaitable, a callback, "
          "...).\n"
          "template <typename CompletionToken>\n"
          "auto $method$(::rill::ClientContext& context, const $request$& request, "
          "$response$* response, CompletionToken&& token) {\n"
          "  return ::rill::detail::AsyncUnaryCall(*channel_, k$method$, context, request, "
          "response, std::forward<CompletionToken>(token));\n"
          "}\n");
      break;
    case Kind::kClientStreaming:
      printer.Print(
          vars,
          "// Client streaming: Write() the requests, then Finish() for the status; `response` "
          "is filled when it is OK.\n"
          "std::unique_ptr<::rill::ClientWriter<$request$>> $method$("
          "::rill::ClientContext& context, $response$* response) {\n"
          "  return std::make_unique<::rill::ClientWriter<$request$>>("
          "::rill::detail::StartClientStream(*channel_, k$method$, context), response);\n"
          "}\n");
      break;
    case Kind::kServerStreaming:
      printer.Print(
          vars,
          "// Server streaming: sends `request`, then Read() the responses and Finish() for "
          "the status.\n"
          "std::unique_ptr<::rill::ClientReader<$response$>> $method$("
          "::rill::ClientContext& context, const $request$& request) {\n"
          "  auto reader = std::make_unique<::rill::ClientReader<$response$>>("
          "::rill::detail::StartClientStream(*channel_, k$method$, context));\n"
          "  reader->SendRequest(request);\n"
          "  return reader;\n"
          "}\n");
      break;
    case Kind::kBidiStreaming:
      printer.Print(vars,
                    "// Bidirectional streaming: Write() and Read() independently, WritesDone() to "
                    "half-close, then Finish() for the status.\n"
                    "std::unique_ptr<::rill::ClientReaderWriter<$request$, $response$>> $method$("
                    "::rill::ClientContext& context) {\n"
                    "  return std::make_unique<::rill::ClientReaderWriter<$request$, $response$>>("
                    "::rill::detail::StartClientStream(*channel_, k$method$, context));\n"
                    "}\n");
      break;
  }
}

void PrintServiceClass(pb::io::Printer& printer, const pb::ServiceDescriptor* service) {
  const Vars vars = {{"service_class", service->name()},
                     {"service_full_name", service->full_name()}};
  PrintLeadingComments(printer, service);
  printer.Print(vars,
                "class $service_class$ final {\n"
                " public:\n");
  printer.Indent();
  printer.Print(vars, "static constexpr char kServiceName[] = \"$service_full_name$\";\n");
  for (int i = 0; i < service->method_count(); ++i) {
    printer.Print(MethodVars(service->method(i)),
                  "static constexpr ::rill::MethodDescriptor k$method${\"$path$\", "
                  "::rill::RpcKind::$kind$};\n");
  }

  printer.Print(vars,
                "\n"
                "// The server side: derive from it, override the methods the server implements,\n"
                "// and register an instance with rill::ServerBuilder::RegisterService(). Methods\n"
                "// left alone answer UNIMPLEMENTED. Overrides run concurrently on every reactor.\n"
                "class Service : public ::rill::Service {\n"
                " public:\n");
  printer.Indent();
  printer.Print("Service();\n");
  for (int i = 0; i < service->method_count(); ++i) {
    printer.Print("\n");
    PrintServiceMethodDeclaration(printer, service->method(i));
  }
  printer.Outdent();
  printer.Print("};\n");

  printer.Print(vars,
                "\n"
                "// The client side. Thread-safe: one stub may be shared by every thread.\n"
                "// `context`, the request and the response must outlive each call.\n"
                "class Stub {\n"
                " public:\n");
  printer.Indent();
  printer.Print(
      "explicit Stub(std::shared_ptr<::rill::Channel> channel) : channel_(std::move(channel)) "
      "{}\n");
  for (int i = 0; i < service->method_count(); ++i) {
    printer.Print("\n");
    PrintStubMethod(printer, service->method(i));
  }
  printer.Print(
      "\n"
      "const std::shared_ptr<::rill::Channel>& channel() const { return channel_; }\n"
      "\n");
  printer.Outdent();
  printer.Print(
      " private:\n"
      "  std::shared_ptr<::rill::Channel> channel_;\n"
      "};\n");
  printer.Outdent();
  printer.Print("};\n");
}

// The name protoc's C++ generator gives the descriptor table of the file `proto_name`
// ("descriptor_table_" and the name with every character other than a letter or digit written
// as '_' and its lowercase hex code): "a/b.proto" -> "descriptor_table_a_2fb_2eproto".
std::string DescriptorTableName(const std::string& proto_name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "descriptor_table_";
  for (const char c : proto_name) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) != 0) {
      name += c;
      continue;
    }
    name += '_';
    if (byte >= 16) name += kHex[byte >> 4];
    name += kHex[byte & 15];
  }
  return name;
}

// Whether protoc generates descriptors for `file` (everything but the lite runtime does).
bool HasDescriptors(const pb::FileDescriptor* file) {
  return file->options().optimize_for() != pb::FileOptions::LITE_RUNTIME;
}

void PrintServiceDefinitions(pb::io::Printer& printer, const pb::ServiceDescriptor* service) {
  const Vars vars = {{"service_class", service->name()}};
  if (HasDescriptors(service->file())) {
    // The descriptor comes from the pool protoc's generated code registers its files with. The
    // file's descriptor table is named here so that the linker keeps the file's .pb.cc, which
    // nothing else may reference (a file of services only), in every program using the service.
    // A capture-less lambda declares no name that could collide with the user's.
    Vars getter_vars = vars;
    getter_vars["table"] = DescriptorTableName(service->file()->name());
    printer.Print(getter_vars,
                  "$service_class$::Service::Service()\n"
                  "    : ::rill::Service(kServiceName, []() -> const "
                  "::google::protobuf::ServiceDescriptor* {\n"
                  "        ::google::protobuf::internal::AssignDescriptors(&::$table$);\n"
                  "        return ::google::protobuf::DescriptorPool::generated_pool()"
                  "->FindServiceByName(kServiceName);\n"
                  "      }) {\n");
  } else {
    printer.Print(vars, "$service_class$::Service::Service() : ::rill::Service(kServiceName) {\n");
  }
  printer.Indent();
  for (int i = 0; i < service->method_count(); ++i) {
    const pb::MethodDescriptor* method = service->method(i);
    const Vars method_vars = MethodVars(method);
    switch (KindOf(method)) {
      case Kind::kUnary:
        printer.Print(method_vars,
                      "AddMethod(std::make_unique<::rill::detail::UnaryMethodHandler<Service, "
                      "$request$, $response$>>(k$method$.path, this, &Service::$method$, "
                      "&Service::$method$Async));\n");
        break;
      case Kind::kClientStreaming:
        printer.Print(method_vars,
                      "AddMethod(std::make_unique<::rill::detail::ClientStreamingMethodHandler<"
                      "Service, $request$, $response$>>(k$method$.path, this, "
                      "&Service::$method$));\n");
        break;
      case Kind::kServerStreaming:
        printer.Print(method_vars,
                      "AddMethod(std::make_unique<::rill::detail::ServerStreamingMethodHandler<"
                      "Service, $request$, $response$>>(k$method$.path, this, "
                      "&Service::$method$));\n");
        break;
      case Kind::kBidiStreaming:
        printer.Print(method_vars,
                      "AddMethod(std::make_unique<::rill::detail::BidiStreamingMethodHandler<"
                      "Service, $request$, $response$>>(k$method$.path, this, "
                      "&Service::$method$));\n");
        break;
    }
  }
  printer.Outdent();
  printer.Print("}\n");

  for (int i = 0; i < service->method_count(); ++i) {
    const pb::MethodDescriptor* method = service->method(i);
    const Vars method_vars = MethodVars(method);
    printer.Print("\n");
    switch (KindOf(method)) {
      case Kind::kUnary:
        printer.Print(method_vars,
                      "::rill::Status $service_class$::Service::$method$("
                      "::rill::ServerContext& context, const $request$&, $response$&) {\n"
                      "  return ::rill::detail::RunAsyncHandler(context);  // not overridden: run $method$Async\n"
                      "}\n"
                      "\n"
                      "::rill::Awaitable<::rill::Status> $service_class$::Service::$method$Async("
                      "::rill::ServerContext&, const $request$&, $response$&) {\n");
        break;
      case Kind::kClientStreaming:
        printer.Print(method_vars,
                      "::rill::Awaitable<::rill::Status> $service_class$::Service::$method$("
                      "::rill::ServerContext&, ::rill::ServerReader<$request$>&, "
                      "$response$&) {\n");
        break;
      case Kind::kServerStreaming:
        printer.Print(method_vars,
                      "::rill::Awaitable<::rill::Status> $service_class$::Service::$method$("
                      "::rill::ServerContext&, const $request$&, "
                      "::rill::ServerWriter<$response$>&) {\n");
        break;
      case Kind::kBidiStreaming:
        printer.Print(method_vars,
                      "::rill::Awaitable<::rill::Status> $service_class$::Service::$method$("
                      "::rill::ServerContext&, "
                      "::rill::ServerReaderWriter<$response$, $request$>&) {\n");
        break;
    }
    printer.Print(method_vars,
                  "  co_return ::rill::Status(::rill::StatusCode::kUnimplemented, "
                  "\"$service_full_name$.$method$ is not implemented\");\n"
                  "}\n");
  }
}

// "a.b.c" -> "a::b::c".
std::string CppNamespace(const std::string& package) {
  std::string ns;
  for (const char c : package) ns += c == '.' ? std::string("::") : std::string(1, c);
  return ns;
}

void PrintNamespaceOpen(pb::io::Printer& printer, const pb::FileDescriptor* file) {
  if (file->package().empty()) return;
  printer.Print("namespace $ns$ {\n\n", "ns", CppNamespace(file->package()));
}

void PrintNamespaceClose(pb::io::Printer& printer, const pb::FileDescriptor* file) {
  if (file->package().empty()) return;
  printer.Print("\n}  // namespace $ns$\n", "ns", CppNamespace(file->package()));
}

void GenerateHeader(const pb::FileDescriptor* file, pb::io::Printer& printer) {
  const Vars vars = {{"proto", file->name()},
                     {"guard", HeaderGuard(file->name())},
                     {"pb_h", StripProto(file->name()) + ".pb.h"}};
  printer.Print(vars,
                "// Generated by protoc-gen-rill from $proto$. Do not edit.\n"
                "#ifndef $guard$\n"
                "#define $guard$\n"
                "\n");
  if (file->service_count() == 0) {
    printer.Print(vars,
                  "// $proto$ defines no services.\n"
                  "#include \"$pb_h$\"\n"
                  "\n"
                  "#endif  // $guard$\n");
    return;
  }
  printer.Print(vars,
                "#include <memory>\n"
                "#include <utility>\n"
                "\n"
                "#include \"$pb_h$\"\n"
                "#include \"rill/client_call.h\"\n"
                "#include \"rill/server_stream.h\"\n"
                "#include \"rill/service.h\"\n"
                "\n");
  PrintNamespaceOpen(printer, file);
  for (int i = 0; i < file->service_count(); ++i) {
    if (i > 0) printer.Print("\n");
    PrintServiceClass(printer, file->service(i));
  }
  PrintNamespaceClose(printer, file);
  printer.Print(vars, "\n#endif  // $guard$\n");
}

void GenerateSource(const pb::FileDescriptor* file, pb::io::Printer& printer) {
  const Vars vars = {{"proto", file->name()}, {"rill_h", StripProto(file->name()) + ".rill.h"}};
  printer.Print(vars,
                "// Generated by protoc-gen-rill from $proto$. Do not edit.\n"
                "#include \"$rill_h$\"\n");
  if (file->service_count() == 0) return;
  if (HasDescriptors(file)) printer.Print("\n#include <google/protobuf/descriptor.h>\n");
  printer.Print("\n");
  PrintNamespaceOpen(printer, file);
  for (int i = 0; i < file->service_count(); ++i) {
    if (i > 0) printer.Print("\n");
    PrintServiceDefinitions(printer, file->service(i));
  }
  PrintNamespaceClose(printer, file);
}

}  // namespace

bool RillGenerator::Generate(const pb::FileDescriptor* file, const std::string& parameter,
                             pb::compiler::GeneratorContext* context, std::string* error) const {
  if (!parameter.empty()) {
    *error = "protoc-gen-rill takes no parameters (got \"" + parameter + "\")";
    return false;
  }
  std::vector<std::string> problems;
  CheckNames(file, problems);
  if (!problems.empty()) {
    // protoc prefixes the first line with the file name; the others get it here.
    *error = problems[0];
    for (size_t i = 1; i < problems.size(); ++i) *error += "\n" + file->name() + ": " + problems[i];
    return false;
  }

  const std::string base = StripProto(file->name());
  {
    std::unique_ptr<pb::io::ZeroCopyOutputStream> out(context->Open(base + ".rill.h"));
    pb::io::Printer printer(out.get(), '$');
    GenerateHeader(file, printer);
    if (printer.failed()) {
      *error = "could not write " + base + ".rill.h";
      return false;
    }
  }
  {
    std::unique_ptr<pb::io::ZeroCopyOutputStream> out(context->Open(base + ".rill.cc"));
    pb::io::Printer printer(out.get(), '$');
    GenerateSource(file, printer);
    if (printer.failed()) {
      *error = "could not write " + base + ".rill.cc";
      return false;
    }
  }
  return true;
}

}  // namespace rill::internal
