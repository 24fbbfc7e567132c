// rill_cli: a command-line gRPC client for servers with reflection (rill's admin services,
// libgrpc++'s, grpc-go's ...). The README's section "Health, reflection and rill_cli" shows it
// with the greeter; `rill_cli <command> --help` lists the options.
//
//   rill_cli ls localhost:50051                        services
//   rill_cli ls -l localhost:50051 helloworld.Greeter  methods, with their types
//   rill_cli describe localhost:50051 helloworld.HelloRequest
//   rill_cli call localhost:50051 helloworld.Greeter/SayHello '{"name": "rill"}'
//   rill_cli health localhost:50051
//   rill_cli --tls --cacert ca.pem --cert client.pem --key client.key ls localhost:50443
//
// Plaintext by default. --tls (implied by any of the TLS flags) verifies the server against
// --cacert (default: the system's roots) and the name in the target, or --server-name;
// --cert/--key present a client certificate (mutual TLS).
//
// Exit codes: 0 success (health: SERVING); 1 health answered but not SERVING; 2 bad usage or
// input (unknown method, JSON that does not parse); 64 + the gRPC status code when an RPC failed
// (e.g. 78 UNAVAILABLE: no server there, 68 DEADLINE_EXCEEDED).
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grpc/health/v1/health.pb.h"
#include "rill/channel.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/credentials.h"
#include "tools/rill_cli/reflection_database.h"

namespace rill::cli {
namespace {

namespace pb = google::protobuf;
using Clock = std::chrono::steady_clock;

constexpr int kExitOk = 0;
constexpr int kExitNotServing = 1;
constexpr int kExitUsage = 2;
constexpr int kExitRpcBase = 64;

struct Options {
  std::string target;
  std::vector<std::string> headers;  // "key: value"
  double timeout_s = 10;             // reflection and health
  double deadline_s = 0;             // call; 0: none
  // ls / describe / call / health
  std::string name;  // service, symbol or method
  std::string data;  // call: the JSON request(s), "@file" or "@-" for stdin
  bool long_listing = false;
  bool verbose = false;
  // TLS (any of these turns it on).
  bool tls = false;
  std::string ca_file;      // PEM roots; empty: the system's
  std::string cert_file;    // client certificate chain (PEM), with key_file
  std::string key_file;
  std::string server_name;  // the name the server's certificate must carry
};

// The channel's credentials: plaintext, or TLS as the flags say. Nullopt (with the reason
// printed) when a file does not load.
std::optional<std::shared_ptr<ChannelCredentials>> CredentialsFor(const Options& options) {
  const bool tls = options.tls || !options.ca_file.empty() || !options.cert_file.empty() ||
                   !options.key_file.empty() || !options.server_name.empty();
  if (!tls) return ChannelCredentials::Insecure();
  ChannelTlsOptions tls_options;
  if (!options.ca_file.empty()) {
    StatusOr<std::string> roots = ReadFileToString(options.ca_file);
    if (!roots.ok()) {
      std::fprintf(stderr, "rill_cli: --cacert: %s\n", roots.status().ToString().c_str());
      return std::nullopt;
    }
    tls_options.root_certificates = std::move(*roots);
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    std::fprintf(stderr, "rill_cli: --cert and --key go together\n");
    return std::nullopt;
  }
  if (!options.cert_file.empty()) {
    StatusOr<TlsKeyPair> pair = TlsKeyPair::FromFiles(options.cert_file, options.key_file);
    if (!pair.ok()) {
      std::fprintf(stderr, "rill_cli: --cert/--key: %s\n", pair.status().ToString().c_str());
      return std::nullopt;
    }
    tls_options.key_pair = std::move(*pair);
  }
  tls_options.server_name_override = options.server_name;
  StatusOr<std::shared_ptr<ChannelCredentials>> credentials = ChannelCredentials::Tls(tls_options);
  if (!credentials.ok()) {
    std::fprintf(stderr, "rill_cli: TLS: %s\n", credentials.status().ToString().c_str());
    return std::nullopt;
  }
  return std::move(*credentials);
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "rill_cli: %s\n", message.c_str());
  return kExitUsage;
}

int RpcFailure(std::string_view what, const Status& status) {
  std::fprintf(stderr, "rill_cli: %.*s failed: %s\n", static_cast<int>(what.size()), what.data(),
               status.ToString().c_str());
  return kExitRpcBase + static_cast<int>(status.code());
}

std::string Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return std::string(s);
}

// "-H 'key: value'" -> (lowercase key, value).
std::optional<ReflectionDatabase::Metadata> ParseHeaders(const std::vector<std::string>& headers) {
  ReflectionDatabase::Metadata metadata;
  for (const std::string& header : headers) {
    const size_t colon = header.find(':');
    if (colon == std::string::npos || colon == 0) return std::nullopt;
    std::string key = Trim(std::string_view(header).substr(0, colon));
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    metadata.emplace_back(std::move(key), Trim(std::string_view(header).substr(colon + 1)));
  }
  return metadata;
}

Clock::time_point After(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// Splits a sequence of JSON objects ("{...} {...}", any whitespace between) into the objects.
// Returns false on text outside an object or an unterminated one; the objects themselves are
// judged by the JSON parser.
bool SplitJsonObjects(std::string_view text, std::vector<std::string>* objects, std::string* why) {
  size_t i = 0;
  while (true) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) ++i;
    if (i == text.size()) return true;
    if (text[i] != '{') {
      *why = "expected '{' at offset " + std::to_string(i) + " of the request data";
      return false;
    }
    const size_t start = i;
    int depth = 0;
    bool in_string = false;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) break;
      }
    }
    if (i >= text.size()) {
      *why = "the JSON object at offset " + std::to_string(start) + " is not terminated";
      return false;
    }
    ++i;
    objects->emplace_back(text.substr(start, i - start));
  }
}

std::string ToJson(const pb::Message& message) {
  pb::util::JsonPrintOptions options;
  options.add_whitespace = true;
  std::string out;
  const auto status = pb::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) return "<cannot print as JSON: " + status.ToString() + ">\n";
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

void PrintMetadata(const char* what, const Metadata& metadata) {
  for (const auto& [key, value] : metadata) {
    std::fprintf(stderr, "%s %.*s: %.*s\n", what, static_cast<int>(key.size()), key.data(),
                 static_cast<int>(value.size()), value.data());
  }
}

// "pkg.Service/Method", "/pkg.Service/Method" or "pkg.Service.Method" -> (service, method).
bool SplitMethodName(std::string name, std::string* service, std::string* method) {
  if (!name.empty() && name[0] == '/') name.erase(0, 1);
  size_t cut = name.rfind('/');
  if (cut == std::string::npos) cut = name.rfind('.');
  if (cut == std::string::npos || cut == 0 || cut + 1 == name.size()) return false;
  *service = name.substr(0, cut);
  *method = name.substr(cut + 1);
  return true;
}

std::string Signature(const pb::MethodDescriptor* method) {
  return "rpc " + method->name() + "(" + (method->client_streaming() ? "stream " : "") +
         method->input_type()->full_name() + ") returns (" +
         (method->server_streaming() ? "stream " : "") + method->output_type()->full_name() + ");";
}

class Session {
 public:
  // Connects and opens the reflection stream; a non-zero exit code on failure.
  int Open(const Options& options) {
    auto metadata = ParseHeaders(options.headers);
    if (!metadata) return Usage("-H takes \"key: value\"");
    metadata_ = std::move(*metadata);
    auto credentials = CredentialsFor(options);
    if (!credentials) return kExitUsage;
    auto channel = Channel::Create(options.target, *credentials);
    if (!channel.ok())
      return Usage("bad target \"" + options.target + "\": " + channel.status().ToString());
    channel_ = *channel;
    return kExitOk;
  }

  int OpenReflection(const Options& options) {
    auto database = ReflectionDatabase::Connect(channel_, metadata_, After(options.timeout_s));
    if (!database.ok()) return RpcFailure("server reflection", database.status());
    database_ = std::move(*database);
    pool_ = std::make_unique<pb::DescriptorPool>(database_.get());
    return kExitOk;
  }

  int NotFound(const std::string& what) {
    std::string why =
        database_->last_error().ok() ? "" : " (" + database_->last_error().ToString() + ")";
    std::fprintf(stderr, "rill_cli: %s not found%s\n", what.c_str(), why.c_str());
    return kExitUsage;
  }

  const ReflectionDatabase::Metadata& metadata() const { return metadata_; }
  Channel& channel() { return *channel_; }
  ReflectionDatabase& database() { return *database_; }
  pb::DescriptorPool& pool() { return *pool_; }

 private:
  ReflectionDatabase::Metadata metadata_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<ReflectionDatabase> database_;
  std::unique_ptr<pb::DescriptorPool> pool_;
};

int List(const Options& options) {
  Session session;
  if (int code = session.Open(options); code != kExitOk) return code;
  if (int code = session.OpenReflection(options); code != kExitOk) return code;
  if (options.name.empty()) {
    for (const std::string& service : session.database().services()) {
      std::printf("%s\n", service.c_str());
    }
    return kExitOk;
  }
  const pb::ServiceDescriptor* service = session.pool().FindServiceByName(options.name);
  if (service == nullptr) return session.NotFound("service " + options.name);
  for (int i = 0; i < service->method_count(); ++i) {
    const pb::MethodDescriptor* method = service->method(i);
    if (options.long_listing) {
      std::printf("%s\n", Signature(method).c_str());
    } else {
      std::printf("%s\n", method->full_name().c_str());
    }
  }
  return kExitOk;
}

int Describe(const Options& options) {
  Session session;
  if (int code = session.Open(options); code != kExitOk) return code;
  if (int code = session.OpenReflection(options); code != kExitOk) return code;
  pb::DescriptorPool& pool = session.pool();
  const std::string& name = options.name;
  if (const auto* service = pool.FindServiceByName(name)) {
    std::printf("%s is a service:\n%s", name.c_str(), service->DebugString().c_str());
  } else if (const auto* method = pool.FindMethodByName(name)) {
    std::printf("%s is a method:\n%s\n", name.c_str(), Signature(method).c_str());
  } else if (const auto* message = pool.FindMessageTypeByName(name)) {
    std::printf("%s is a message:\n%s", name.c_str(), message->DebugString().c_str());
  } else if (const auto* enum_type = pool.FindEnumTypeByName(name)) {
    std::printf("%s is an enum:\n%s", name.c_str(), enum_type->DebugString().c_str());
  } else if (const auto* field = pool.FindFieldByName(name)) {
    std::printf("%s is a field:\n%s", name.c_str(), field->DebugString().c_str());
  } else {
    std::string service_name;
    std::string method_name;
    // "pkg.Service/Method" names a method too.
    if (name.find('/') != std::string::npos && SplitMethodName(name, &service_name, &method_name)) {
      if (const auto* m = pool.FindMethodByName(service_name + "." + method_name)) {
        std::printf("%s is a method:\n%s\n", name.c_str(), Signature(m).c_str());
        return kExitOk;
      }
    }
    return session.NotFound("symbol " + name);
  }
  return kExitOk;
}

// The request data: the argument itself, or "@file", or "@-" (stdin).
std::optional<std::string> ReadData(const std::string& data) {
  if (data.empty() || data[0] != '@') return data;
  const std::string path = data.substr(1);
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int Call(const Options& options) {
  Session session;
  if (int code = session.Open(options); code != kExitOk) return code;
  std::string service_name;
  std::string method_name;
  if (!SplitMethodName(options.name, &service_name, &method_name)) {
    return Usage("\"" + options.name + "\" is not a method name (package.Service/Method)");
  }
  if (int code = session.OpenReflection(options); code != kExitOk) return code;
  const pb::ServiceDescriptor* service = session.pool().FindServiceByName(service_name);
  if (service == nullptr) return session.NotFound("service " + service_name);
  const pb::MethodDescriptor* method = service->FindMethodByName(method_name);
  if (method == nullptr) return session.NotFound("method " + method_name + " of " + service_name);

  const std::optional<std::string> data = ReadData(options.data);
  if (!data) return Usage("cannot read " + options.data.substr(1));
  std::vector<std::string> texts;
  std::string why;
  if (!SplitJsonObjects(*data, &texts, &why)) return Usage(why);
  if (!method->client_streaming()) {
    if (texts.empty()) texts.emplace_back("{}");
    if (texts.size() != 1) {
      return Usage(method->full_name() + " takes one request; the data holds " +
                   std::to_string(texts.size()));
    }
  }

  pb::DynamicMessageFactory factory(&session.pool());
  const pb::Message* request_prototype = factory.GetPrototype(method->input_type());
  const pb::Message* response_prototype = factory.GetPrototype(method->output_type());
  std::vector<std::unique_ptr<pb::Message>> requests;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::unique_ptr<pb::Message> request(request_prototype->New());
    const auto parsed = pb::util::JsonStringToMessage(texts[i], request.get());
    if (!parsed.ok()) {
      return Usage("request " + std::to_string(i + 1) + " is not a " +
                   method->input_type()->full_name() + ": " + std::string(parsed.message()));
    }
    requests.push_back(std::move(request));
  }

  ClientContext context;
  for (const auto& [key, value] : session.metadata()) context.AddMetadata(key, value);
  if (options.deadline_s > 0) context.set_deadline(After(options.deadline_s));
  const std::string path = "/" + service->full_name() + "/" + method->name();
  const RpcKind kind =
      method->client_streaming()
          ? (method->server_streaming() ? RpcKind::kBidiStreaming : RpcKind::kClientStreaming)
          : (method->server_streaming() ? RpcKind::kServerStreaming : RpcKind::kUnary);
  const MethodDescriptor descriptor{path.c_str(), kind};
  std::unique_ptr<pb::Message> response(response_prototype->New());
  Status status;
  switch (kind) {
    case RpcKind::kUnary:
      status = detail::BlockingUnaryCall(session.channel(), descriptor, context, *requests[0],
                                         response.get());
      if (status.ok()) std::fputs(ToJson(*response).c_str(), stdout);
      break;
    case RpcKind::kServerStreaming: {
      ClientReader<pb::Message> reader(
          detail::StartClientStream(session.channel(), descriptor, context));
      reader.SendRequest(*requests[0]);
      while (reader.BlockingRead(response.get())) std::fputs(ToJson(*response).c_str(), stdout);
      status = reader.BlockingFinish();
      break;
    }
    case RpcKind::kClientStreaming: {
      ClientWriter<pb::Message> writer(
          detail::StartClientStream(session.channel(), descriptor, context), response.get());
      for (const auto& request : requests) {
        if (!writer.BlockingWrite(*request)) break;
      }
      status = writer.BlockingFinish();
      if (status.ok()) std::fputs(ToJson(*response).c_str(), stdout);
      break;
    }
    case RpcKind::kBidiStreaming: {
      ClientReaderWriter<pb::Message, pb::Message> stream(
          detail::StartClientStream(session.channel(), descriptor, context));
      for (const auto& request : requests) {
        if (!stream.BlockingWrite(*request)) break;
      }
      stream.BlockingWritesDone();
      while (stream.BlockingRead(response.get())) std::fputs(ToJson(*response).c_str(), stdout);
      status = stream.BlockingFinish();
      break;
    }
  }
  std::fflush(stdout);
  if (options.verbose) {
    PrintMetadata("header", context.initial_metadata());
    PrintMetadata("trailer", context.trailing_metadata());
  }
  if (!status.ok()) return RpcFailure(method->full_name(), status);
  return kExitOk;
}

int Health(const Options& options) {
  Session session;
  if (int code = session.Open(options); code != kExitOk) return code;
  ClientContext context;
  for (const auto& [key, value] : session.metadata()) context.AddMetadata(key, value);
  context.set_deadline(After(options.deadline_s > 0 ? options.deadline_s : options.timeout_s));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(options.name);
  grpc::health::v1::HealthCheckResponse response;
  const Status status = detail::BlockingUnaryCall(
      session.channel(), MethodDescriptor{"/grpc.health.v1.Health/Check", RpcKind::kUnary}, context,
      request, &response);
  if (!status.ok()) return RpcFailure("health check", status);
  std::printf("%s\n",
              grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()).c_str());
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitOk
                                                                             : kExitNotServing;
}

int Main(int argc, char** argv) {
  CLI::App app("rill_cli: call and inspect gRPC servers through server reflection");
  app.require_subcommand(1);
  app.fallthrough();  // -H and --timeout may also come after the command
  Options options;
  app.add_option("--timeout", options.timeout_s,
                 "seconds to wait for reflection answers and health checks (default 10)");
  app.add_option("-H,--header", options.headers,
                 "metadata \"key: value\" sent with every request (repeatable)")
      ->allow_extra_args(false);  // one value per -H: the positionals after it stay positionals
  app.add_flag("--tls", options.tls, "connect over TLS (implied by the flags below)");
  app.add_option("--cacert,--ca", options.ca_file,
                 "CA certificates (PEM) to verify the server with (default: the system's)");
  app.add_option("--cert", options.cert_file, "client certificate chain (PEM), for mutual TLS");
  app.add_option("--key", options.key_file, "the client certificate's private key (PEM)");
  app.add_option("--server-name", options.server_name,
                 "the name the server's certificate must be valid for (default: the target's "
                 "host); also sent as SNI and :authority");

  CLI::App* ls = app.add_subcommand("ls", "list the services, or the methods of one");
  ls->add_option("target", options.target, "host:port or unix:/path")->required();
  ls->add_option("service", options.name, "a service: list its methods");
  ls->add_flag("-l", options.long_listing, "methods with their request and response types");

  CLI::App* describe = app.add_subcommand("describe", "show a service, method, message or enum");
  describe->add_option("target", options.target, "host:port or unix:/path")->required();
  describe->add_option("symbol", options.name, "package-qualified name")->required();

  CLI::App* call = app.add_subcommand("call", "call a method with JSON request messages");
  call->add_option("target", options.target, "host:port or unix:/path")->required();
  call->add_option("method", options.name, "package.Service/Method")->required();
  call->add_option("data", options.data,
                   "JSON request(s), or @file, or @- for stdin; streaming calls take several "
                   "objects one after another (default: one empty request)");
  call->add_option("-d,--data", options.data, "same as the data argument");
  call->add_option("--deadline", options.deadline_s, "seconds the call may take");
  call->add_flag("-v,--verbose", options.verbose, "print response headers and trailers");

  CLI::App* health = app.add_subcommand("health", "ask grpc.health.v1.Health/Check");
  health->add_option("target", options.target, "host:port or unix:/path")->required();
  health->add_option("service", options.name, "the service to ask about (default: the server)");
  health->add_option("--deadline", options.deadline_s, "seconds the check may take");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (ls->parsed()) return List(options);
  if (describe->parsed()) return Describe(options);
  if (call->parsed()) return Call(options);
  return Health(options);
}

}  // namespace
}  // namespace rill::cli

int main(int argc, char** argv) { return rill::cli::Main(argc, argv); }
