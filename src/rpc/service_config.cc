#include "src/rpc/service_config.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/duration.pb.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "grpc/service_config/service_config.pb.h"

namespace rill::internal {

namespace {

namespace pb = ::grpc::service_config;
using ::google::protobuf::ListValue;
using ::google::protobuf::Value;

// gRFC A6 caps both policies' attempts at 5, whatever the config says.
constexpr uint32_t kMaxAttemptsCap = 5;
// gRFC A6: retryThrottling.maxTokens is in (0, 1000].
constexpr uint32_t kMaxThrottleTokens = 1000;

Status Invalid(std::string_view where, std::string_view what) {
  std::string message = "invalid service config: ";
  message.append(where);
  if (!where.empty() && !what.empty()) message.push_back(' ');
  message.append(what);
  return Status(StatusCode::kInvalidArgument, message);
}

// protobuf's JSON parser (3.21) takes time quadratic in how deep arrays nest: 100000 nested '['
// keep it busy for minutes. A service config nests a few levels (protobuf itself refuses objects
// nested a few dozen deep), so the depth is bounded before the parser runs.
constexpr int kMaxJsonDepth = 64;

bool NestsTooDeep(std::string_view json) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// Positive durations are rounded up to whole milliseconds, so a positive one stays positive.
// Null for a negative duration.
std::optional<std::chrono::milliseconds> ToMillis(const google::protobuf::Duration& d) {
  if (d.seconds() < 0 || d.nanos() < 0) return std::nullopt;
  // |seconds| <= 315576000000 (protobuf's limit, checked by its parser): no overflow.
  return std::chrono::milliseconds(d.seconds() * 1000 + (d.nanos() + 999'999) / 1'000'000);
}

// Calls fn(key, value) for each field of a JSON object until it returns true. Read through
// reflection, not through Map's inline code: protobuf 3.21's MapFieldBase has extra members when
// compiled with ThreadSanitizer, so inline map code in a -fsanitize=thread build misreads a
// Struct that libprotobuf.so filled in (and crashes).
template <typename Fn>
void ForEachField(const Value* object, Fn&& fn) {
  if (object == nullptr || object->kind_case() != Value::kStructValue) return;
  const google::protobuf::Message& fields_owner = object->struct_value();
  const google::protobuf::Reflection* reflection = fields_owner.GetReflection();
  const google::protobuf::FieldDescriptor* fields =
      fields_owner.GetDescriptor()->FindFieldByNumber(google::protobuf::Struct::kFieldsFieldNumber);
  for (int i = 0, n = reflection->FieldSize(fields_owner, fields); i < n; ++i) {
    const google::protobuf::Message& entry =
        reflection->GetRepeatedMessage(fields_owner, fields, i);
    const google::protobuf::Reflection* entry_reflection = entry.GetReflection();
    const google::protobuf::Descriptor* entry_type = entry.GetDescriptor();
    const std::string key = entry_reflection->GetString(entry, entry_type->map_key());
    const Value* value = google::protobuf::DynamicCastToGenerated<Value>(
        &entry_reflection->GetMessage(entry, entry_type->map_value()));
    if (fn(key, value)) return;
  }
}

// A field of a JSON object as protobuf's parser reads it: by its JSON name or its proto name.
const Value* Field(const Value* object, const std::string& json_name,
                   const std::string& proto_name) {
  const Value* by_json_name = nullptr;
  const Value* by_proto_name = nullptr;
  ForEachField(object, [&](const std::string& key, const Value* value) {
    if (key == json_name) by_json_name = value;
    if (key == proto_name) by_proto_name = value;
    return by_json_name != nullptr;
  });
  return by_json_name != nullptr ? by_json_name : by_proto_name;
}

const Value* Element(const Value* list, int index) {
  if (list == nullptr || list->kind_case() != Value::kListValue) return nullptr;
  const ListValue& values = list->list_value();
  return index < values.values_size() ? &values.values(index) : nullptr;
}

// Status codes of a retry or hedging policy. protobuf's parser, told to ignore unknown fields,
// also drops an enum name it does not know ("FOO", "unavailable"), so the JSON array (`raw`)
// is checked for those; a number it keeps as is and is checked here.
Status ConvertCodes(const google::protobuf::RepeatedField<int>& codes, const Value* raw,
                    const std::string& where, std::vector<StatusCode>* out) {
  if (raw != nullptr && raw->kind_case() == Value::kListValue) {
    for (const Value& element : raw->list_value().values()) {
      if (element.kind_case() != Value::kStringValue) continue;
      bool known = false;
      for (int code = 0; code <= kMaxStatusCode && !known; ++code) {
        known = element.string_value() == StatusCodeName(static_cast<StatusCode>(code));
      }
      if (!known) {
        return Invalid(where, "names an unknown status code \"" + element.string_value() + "\"");
      }
    }
  }
  out->reserve(codes.size());
  for (int code : codes) {
    if (code < 0 || code > kMaxStatusCode) {
      return Invalid(where, "has an unknown status code " + std::to_string(code));
    }
    out->push_back(static_cast<StatusCode>(code));
  }
  return OkStatus();
}

std::string ToLower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool IsSupportedPolicy(std::string_view name) {
  return name == "pick_first" || name == "round_robin";
}

}  // namespace

// Turns the generated message into a ServiceConfig, checking the rules protobuf cannot.
class ServiceConfigParser {
 public:
  ServiceConfigParser(const pb::ServiceConfig& proto, const Value& raw,
                      std::span<const std::string> more_policies, ServiceConfig* config)
      : proto_(proto), raw_(raw), more_policies_(more_policies), config_(config) {}

  Status Run() {
    if (Status s = MethodConfigs(); !s.ok()) return s;
    if (Status s = LoadBalancing(); !s.ok()) return s;
    return RetryThrottling();
  }

 private:
  Status MethodConfigs() {
    const Value* raw_list = Field(&raw_, "methodConfig", "method_config");
    for (int i = 0; i < proto_.method_config_size(); ++i) {
      const pb::MethodConfig& entry = proto_.method_config(i);
      const std::string where = "methodConfig[" + std::to_string(i) + "]";
      // The specs skip an entry without names: it applies to no call.
      if (entry.name_size() == 0) continue;
      MethodConfig method;
      if (Status s = Method(entry, Element(raw_list, i), where, &method); !s.ok()) return s;
      const size_t index = config_->method_configs_.size();
      for (int n = 0; n < entry.name_size(); ++n) {
        if (Status s = AddName(entry.name(n), index, where + ".name[" + std::to_string(n) + "]");
            !s.ok()) {
          return s;
        }
      }
      config_->method_configs_.push_back(std::move(method));
    }
    return OkStatus();
  }

  Status AddName(const pb::MethodConfig::Name& name, size_t index, const std::string& where) {
    if (name.service().empty()) {
      if (!name.method().empty()) return Invalid(where, "has a method but no service");
      if (config_->default_index_) return Invalid(where, "is a second default entry");
      config_->default_index_ = index;
      return OkStatus();
    }
    std::string key = name.service() + "/" + name.method();
    if (!config_->by_name_.emplace(std::move(key), index).second) {
      return Invalid(where, "(\"" + name.service() + "/" + name.method() +
                                "\") names a method or service named before");
    }
    return OkStatus();
  }

  static Status Method(const pb::MethodConfig& entry, const Value* raw, const std::string& where,
                       MethodConfig* method) {
    if (entry.has_timeout()) {
      method->timeout = ToMillis(entry.timeout());
      if (!method->timeout) return Invalid(where + ".timeout", "is negative");
    }
    if (entry.has_wait_for_ready()) method->wait_for_ready = entry.wait_for_ready().value();
    if (entry.has_max_request_message_bytes()) {
      method->max_request_message_bytes = entry.max_request_message_bytes().value();
    }
    if (entry.has_max_response_message_bytes()) {
      method->max_response_message_bytes = entry.max_response_message_bytes().value();
    }
    // protobuf's parser already refuses both in one entry (they are one oneof).
    if (entry.has_retry_policy()) {
      method->retry_policy.emplace();
      return Retry(entry.retry_policy(), Field(raw, "retryPolicy", "retry_policy"),
                   where + ".retryPolicy", &*method->retry_policy);
    }
    if (entry.has_hedging_policy()) {
      method->hedging_policy.emplace();
      return Hedging(entry.hedging_policy(), Field(raw, "hedgingPolicy", "hedging_policy"),
                     where + ".hedgingPolicy", &*method->hedging_policy);
    }
    return OkStatus();
  }

  static Status Retry(const pb::MethodConfig::RetryPolicy& proto, const Value* raw,
                      const std::string& where, RetryPolicy* policy) {
    if (proto.max_attempts() < 2) {
      return Invalid(where + ".maxAttempts", "is required and must be greater than 1");
    }
    policy->max_attempts = static_cast<int>(std::min(proto.max_attempts(), kMaxAttemptsCap));
    std::optional<std::chrono::milliseconds> initial;
    if (proto.has_initial_backoff()) initial = ToMillis(proto.initial_backoff());
    if (!initial || initial->count() <= 0) {
      return Invalid(where + ".initialBackoff", "is required and must be greater than zero");
    }
    policy->initial_backoff = *initial;
    std::optional<std::chrono::milliseconds> max;
    if (proto.has_max_backoff()) max = ToMillis(proto.max_backoff());
    if (!max || max->count() <= 0) {
      return Invalid(where + ".maxBackoff", "is required and must be greater than zero");
    }
    policy->max_backoff = *max;
    const double multiplier = proto.backoff_multiplier();
    if (!(multiplier > 0) || !std::isfinite(multiplier)) {
      return Invalid(where + ".backoffMultiplier", "is required and must be greater than zero");
    }
    policy->backoff_multiplier = multiplier;
    const std::string codes_where = where + ".retryableStatusCodes";
    if (Status s = ConvertCodes(proto.retryable_status_codes(),
                                Field(raw, "retryableStatusCodes", "retryable_status_codes"),
                                codes_where, &policy->retryable_status_codes);
        !s.ok()) {
      return s;
    }
    if (policy->retryable_status_codes.empty()) {
      return Invalid(codes_where, "is required and must not be empty");
    }
    return OkStatus();
  }

  static Status Hedging(const pb::MethodConfig::HedgingPolicy& proto, const Value* raw,
                        const std::string& where, HedgingPolicy* policy) {
    if (proto.max_attempts() < 2) {
      return Invalid(where + ".maxAttempts", "is required and must be greater than 1");
    }
    policy->max_attempts = static_cast<int>(std::min(proto.max_attempts(), kMaxAttemptsCap));
    if (proto.has_hedging_delay()) {
      std::optional<std::chrono::milliseconds> delay = ToMillis(proto.hedging_delay());
      if (!delay) return Invalid(where + ".hedgingDelay", "is negative");
      policy->hedging_delay = *delay;
    }
    return ConvertCodes(proto.non_fatal_status_codes(),
                        Field(raw, "nonFatalStatusCodes", "non_fatal_status_codes"),
                        where + ".nonFatalStatusCodes", &policy->non_fatal_status_codes);
  }

  Status LoadBalancing() {
    if (proto_.load_balancing_config_size() > 0) {
      // The first policy the channel knows wins. An entry the proto does not know (the user's
      // policy, or one newer than Debian's grpc-proto) parses as an entry with no policy set:
      // its name is the one key of the raw entry.
      const Value* raw_list = Field(&raw_, "loadBalancingConfig", "load_balancing_config");
      for (int i = 0; i < proto_.load_balancing_config_size(); ++i) {
        const pb::LoadBalancingConfig& entry = proto_.load_balancing_config(i);
        if (entry.policy_case() == pb::LoadBalancingConfig::kPickFirst) {
          config_->load_balancing_policy_ = "pick_first";
          return OkStatus();
        }
        if (entry.policy_case() == pb::LoadBalancingConfig::kRoundRobin) {
          config_->load_balancing_policy_ = "round_robin";
          return OkStatus();
        }
        bool found = false;
        ForEachField(Element(raw_list, i), [&](const std::string& name, const Value*) {
          found = IsMorePolicy(name);
          if (found) config_->load_balancing_policy_ = name;
          return found;
        });
        if (found) return OkStatus();
      }
      return Invalid("loadBalancingConfig", "lists no policy rill supports (pick_first, "
                                            "round_robin) nor one of the channel's own");
    }
    // The deprecated field. The proto's enum knows only ROUND_ROBIN, in upper case, while
    // configs write lower case, so the JSON value is read as written.
    const Value* raw = Field(&raw_, "loadBalancingPolicy", "load_balancing_policy");
    if (raw != nullptr && raw->kind_case() == Value::kStringValue) {
      std::string name = ToLower(raw->string_value());
      if (name.empty()) return OkStatus();
      if (!IsSupportedPolicy(name) && !IsMorePolicy(name)) {
        return Invalid("loadBalancingPolicy", "names a policy rill does not support (\"" +
                                                  raw->string_value() + "\")");
      }
      config_->load_balancing_policy_ = std::move(name);
    } else if (raw != nullptr && raw->kind_case() == Value::kNumberValue) {
      // The enum's number (the typed parser has accepted it as one), read here as well since
      // the generated accessor of a deprecated field warns.
      if (raw->number_value() == static_cast<double>(pb::ServiceConfig::ROUND_ROBIN)) {
        config_->load_balancing_policy_ = "round_robin";
      } else if (raw->number_value() != static_cast<double>(pb::ServiceConfig::UNSPECIFIED)) {
        return Invalid("loadBalancingPolicy", "names a policy rill does not support");
      }
    }
    return OkStatus();
  }

  Status RetryThrottling() {
    if (!proto_.has_retry_throttling()) return OkStatus();
    const pb::ServiceConfig::RetryThrottlingPolicy& proto = proto_.retry_throttling();
    if (proto.max_tokens() == 0 || proto.max_tokens() > kMaxThrottleTokens) {
      return Invalid("retryThrottling.maxTokens", "is required and must be in (0, 1000]");
    }
    // Three decimal places, as gRFC A6 says; the proto's float is rounded to them (0.1f is
    // 0.100000001...).
    const double ratio = proto.token_ratio();
    const double thousandths = std::isfinite(ratio) ? std::round(ratio * 1000) : 0;
    if (!(thousandths > 0)) {
      return Invalid("retryThrottling.tokenRatio",
                     "is required and must be greater than zero (at least 0.001)");
    }
    config_->retry_throttling_ =
        RetryThrottlingConfig{static_cast<int>(proto.max_tokens()), thousandths / 1000};
    return OkStatus();
  }

  [[nodiscard]] bool IsMorePolicy(std::string_view name) const {
    return std::find(more_policies_.begin(), more_policies_.end(), name) != more_policies_.end();
  }

  const pb::ServiceConfig& proto_;
  const Value& raw_;
  std::span<const std::string> more_policies_;
  ServiceConfig* config_;
};

StatusOr<ServiceConfig> ServiceConfig::Parse(std::string_view json,
                                             std::span<const std::string> more_policies) {
  // First as plain JSON: syntax errors are reported as such, and the values protobuf's typed
  // parser drops (unknown enum names) stay visible to the checks above.
  if (NestsTooDeep(json)) {
    return Invalid("", "nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels");
  }
  Value raw;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto parsed = google::protobuf::util::JsonStringToMessage({json.data(), json.size()}, &raw,
                                                            options);
  if (!parsed.ok()) {
    return Invalid("", "is not JSON: " + std::string(parsed.message().data(),
                                                     parsed.message().size()));
  }
  if (raw.kind_case() != Value::kStructValue) return Invalid("", "is not a JSON object");

  pb::ServiceConfig proto;
  parsed = google::protobuf::util::JsonStringToMessage({json.data(), json.size()}, &proto,
                                                       options);
  if (!parsed.ok()) {
    return Invalid("", std::string(parsed.message().data(), parsed.message().size()));
  }
  ServiceConfig config;
  if (Status s = ServiceConfigParser(proto, raw, more_policies, &config).Run(); !s.ok()) return s;
  return config;
}

const MethodConfig* ServiceConfig::Find(std::string_view path) const {
  // "/pkg.Service/Method": the exact key is "pkg.Service/Method", the service's "pkg.Service/".
  const size_t slash = path.size() > 1 && path[0] == '/' ? path.find('/', 1)
                                                          : std::string_view::npos;
  if (slash != std::string_view::npos) {
    if (auto it = by_name_.find(path.substr(1)); it != by_name_.end()) {
      return &method_configs_[it->second];
    }
    if (auto it = by_name_.find(path.substr(1, slash)); it != by_name_.end()) {
      return &method_configs_[it->second];
    }
  }
  return default_index_ ? &method_configs_[*default_index_] : nullptr;
}

}  // namespace rill::internal
