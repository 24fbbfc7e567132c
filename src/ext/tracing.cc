#include "rill/tracing.h"

#include <mutex>
#include <unordered_map>
#include <utility>

#include "rill/client_context.h"
#include "rill/server_context.h"

namespace rill {

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // W3C: lowercase only
}

template <size_t N>
bool ParseHex(std::string_view text, std::array<uint8_t, N>& out) {
  if (text.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    const int high = HexValue(text[2 * i]);
    const int low = HexValue(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<uint8_t>(high << 4 | low);
  }
  return true;
}

void AppendHex(std::string& out, const uint8_t* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& bytes) {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

// "pkg.Service.Method" from "/pkg.Service/Method".
std::string SpanName(std::string_view prefix, std::string_view method) {
  std::string name(prefix);
  if (method.starts_with('/')) method.remove_prefix(1);
  for (char c : method) name += c == '/' ? '.' : c;
  return name;
}

// The parent a request's metadata carries: traceparent first, grpc-trace-bin otherwise.
std::optional<TraceContext> ContextFrom(const Metadata& metadata) {
  if (auto header = metadata.Get("traceparent")) {
    if (auto parsed = ParseTraceparent(*header)) return parsed;
  }
  if (auto bin = metadata.Get("grpc-trace-bin")) return ParseGrpcTraceBin(*bin);
  return std::nullopt;
}

// Spans of calls in flight, by the call's context (interceptors are shared by every call).
template <typename Key, typename Spans>
class SpanTable {
 public:
  void Put(const Key* key, Spans spans) {
    std::lock_guard lock(mu_);
    spans_[key] = std::move(spans);
  }
  std::optional<Spans> Take(const Key* key) {
    std::lock_guard lock(mu_);
    auto it = spans_.find(key);
    if (it == spans_.end()) return std::nullopt;
    Spans spans = std::move(it->second);
    spans_.erase(it);
    return spans;
  }

 private:
  std::mutex mu_;
  std::unordered_map<const Key*, Spans> spans_;
};

class ServerTracingInterceptor final : public ServerInterceptor {
 public:
  explicit ServerTracingInterceptor(std::shared_ptr<Tracer> tracer) : tracer_(std::move(tracer)) {}

  Status OnCallStart(ServerContext& context) override {
    const std::optional<TraceContext> parent = ContextFrom(context.client_metadata());
    const std::string name = SpanName("Recv.", context.method());
    TraceContext mine;
    void* span = tracer_->StartSpan({.client = false,
                                     .name = name,
                                     .method = context.method(),
                                     .target = {},
                                     .parent = parent ? &*parent : nullptr},
                                    &mine);
    spans_.Put(&context, span);
    return Status();
  }

  void OnCallEnd(ServerContext& context, Status& status) override {
    if (auto span = spans_.Take(&context)) tracer_->EndSpan(*span, status);
  }

 private:
  std::shared_ptr<Tracer> tracer_;
  SpanTable<ServerContext, void*> spans_;
};

class ClientTracingInterceptor final : public ClientInterceptor {
 public:
  ClientTracingInterceptor(std::shared_ptr<Tracer> tracer, std::string target)
      : tracer_(std::move(tracer)), target_(std::move(target)) {}

  Status OnCallStart(ClientContext& context, std::string_view method) override {
    const std::optional<TraceContext> parent = ContextFrom(context.metadata());
    const std::string call_name = SpanName("Sent.", method);
    TraceContext call_context;
    void* call = tracer_->StartSpan({.client = true,
                                     .name = call_name,
                                     .method = method,
                                     .target = target_,
                                     .parent = parent ? &*parent : nullptr},
                                    &call_context);
    const std::string attempt_name = SpanName("Attempt.", method);
    TraceContext attempt_context;
    void* attempt = tracer_->StartSpan({.client = true,
                                        .name = attempt_name,
                                        .method = method,
                                        .target = target_,
                                        .parent = &call_context},
                                       &attempt_context);
    Metadata& metadata = context.mutable_metadata();
    metadata.Set("traceparent", FormatTraceparent(attempt_context));
    metadata.Set("grpc-trace-bin", FormatGrpcTraceBin(attempt_context));
    spans_.Put(&context, {call, attempt});
    return Status();
  }

  void OnCallEnd(ClientContext& context, std::string_view, Status& status) override {
    if (auto spans = spans_.Take(&context)) {
      tracer_->EndSpan(spans->second, status);
      tracer_->EndSpan(spans->first, status);
    }
  }

 private:
  std::shared_ptr<Tracer> tracer_;
  std::string target_;
  SpanTable<ClientContext, std::pair<void*, void*>> spans_;
};

}  // namespace

bool TraceContext::valid() const noexcept { return !AllZero(trace_id) && !AllZero(span_id); }

std::optional<TraceContext> ParseTraceparent(std::string_view header) {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55.
  if (header.size() < 55 || header[2] != '-' || header[35] != '-' || header[52] != '-') {
    return std::nullopt;
  }
  std::array<uint8_t, 1> version;
  if (!ParseHex(header.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  if (version[0] == 0 ? header.size() != 55 : header.size() > 55 && header[55] != '-') {
    return std::nullopt;
  }
  TraceContext context;
  std::array<uint8_t, 1> flags;
  if (!ParseHex(header.substr(3, 32), context.trace_id) ||
      !ParseHex(header.substr(36, 16), context.span_id) ||
      !ParseHex(header.substr(53, 2), flags) || !context.valid()) {
    return std::nullopt;
  }
  context.flags = flags[0];
  return context;
}

std::string FormatTraceparent(const TraceContext& context) {
  std::string out = "00-";
  AppendHex(out, context.trace_id.data(), 16);
  out += '-';
  AppendHex(out, context.span_id.data(), 8);
  out += '-';
  AppendHex(out, &context.flags, 1);
  return out;
}

std::optional<TraceContext> ParseGrpcTraceBin(std::string_view bytes) {
  if (bytes.empty() || bytes[0] != 0) return std::nullopt;  // version 0 only
  TraceContext context;
  size_t pos = 1;
  bool have_trace = false;
  bool have_span = false;
  while (pos < bytes.size()) {
    const auto field = static_cast<uint8_t>(bytes[pos++]);
    const size_t size = field == 0 ? 16 : field == 1 ? 8 : field == 2 ? 1 : 0;
    if (size == 0 || pos + size > bytes.size()) break;  // unknown field: what came before counts
    auto* out = field == 0   ? context.trace_id.data()
                : field == 1 ? context.span_id.data()
                             : &context.flags;
    for (size_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>(bytes[pos + i]);
    have_trace |= field == 0;
    have_span |= field == 1;
    pos += size;
  }
  if (!have_trace || !have_span || !context.valid()) return std::nullopt;
  return context;
}

std::string FormatGrpcTraceBin(const TraceContext& context) {
  std::string out;
  out.reserve(29);
  out += '\0';  // version
  out += '\0';  // trace id
  out.append(reinterpret_cast<const char*>(context.trace_id.data()), 16);
  out += '\1';  // span id
  out.append(reinterpret_cast<const char*>(context.span_id.data()), 8);
  out += '\2';  // options
  out += static_cast<char>(context.flags);
  return out;
}

std::shared_ptr<ServerInterceptor> MakeServerTracingInterceptor(std::shared_ptr<Tracer> tracer) {
  return std::make_shared<ServerTracingInterceptor>(std::move(tracer));
}

std::shared_ptr<ClientInterceptor> MakeClientTracingInterceptor(std::shared_ptr<Tracer> tracer,
                                                                std::string target) {
  return std::make_shared<ClientTracingInterceptor>(std::move(tracer), std::move(target));
}

}  // namespace rill
