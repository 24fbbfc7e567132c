#include "bench/stats/result_file.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

namespace rill::bench {
namespace {

// Members keep the order they are written in, which is grpc-go's field order.
using Json = nlohmann::ordered_json;

// A float as Go's encoding/json writes it where it can: integral values without a fraction
// ("ReqT": 195920). NaN and infinities, which JSON cannot express, become strings.
Json Float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Below 2^53 every integral double is exactly an int64; -0.0 keeps its sign as a float.
  constexpr double kExactLimit = 9007199254740992.0;
  if (v == std::trunc(v) && std::fabs(v) < kExactLimit && !(v == 0 && std::signbit(v))) {
    return static_cast<std::int64_t>(v);
  }
  return v;
}

Json PayloadCurve(const std::string& sha256) {
  if (sha256.empty()) return nullptr;
  return Json{{"Sha256", sha256}};
}

Json FeaturesJson(const Features& f) {
  return Json{
      {"NetworkMode", f.network_mode},
      {"UseBufConn", f.use_buf_conn},
      {"EnableKeepalive", f.enable_keepalive},
      {"BenchTime", f.bench_time.count()},
      {"Connections", f.connections},
      {"EnableTrace", f.enable_trace},
      {"Latency", f.latency.count()},
      {"Kbps", f.kbps},
      {"MTU", f.mtu},
      {"MaxConcurrentCalls", f.max_concurrent_calls},
      {"ReqSizeBytes", f.req_size_bytes},
      {"RespSizeBytes", f.resp_size_bytes},
      {"ReqPayloadCurve", PayloadCurve(f.req_payload_curve)},
      {"RespPayloadCurve", PayloadCurve(f.resp_payload_curve)},
      {"ModeCompressor", f.mode_compressor},
      {"EnableChannelz", f.enable_channelz},
      {"EnablePreloader", f.enable_preloader},
      {"ClientReadBufferSize", f.client_read_buffer_size},
      {"ClientWriteBufferSize", f.client_write_buffer_size},
      {"ServerReadBufferSize", f.server_read_buffer_size},
      {"ServerWriteBufferSize", f.server_write_buffer_size},
      {"SleepBetweenRPCs", f.sleep_between_rpcs.count()},
      {"RecvBufferPool", f.recv_buffer_pool},
      {"SharedWriteBuffer", f.shared_write_buffer},
  };
}

Json RunDataJson(const RunData& d) {
  return Json{
      {"TotalOps", d.total_ops},
      {"SendOps", d.send_ops},
      {"RecvOps", d.recv_ops},
      {"AllocedBytes", Float(d.alloced_bytes)},
      {"Allocs", Float(d.allocs)},
      {"ReqT", Float(d.req_t)},
      {"RespT", Float(d.resp_t)},
      {"Fiftieth", d.fiftieth.count()},
      {"Ninetieth", d.ninetieth.count()},
      {"NinetyNinth", d.ninety_ninth.count()},
      {"Average", d.average.count()},
  };
}

// Reads members of one JSON object into C++ fields, with the types grpc-go's structs give them.
// A missing member keeps its field's value; the first type error is kept in `status` with the
// member's path, and every later read does nothing.
class ObjectReader {
 public:
  ObjectReader(const Json& object, std::string path, rill::Status& status)
      : object_(object), path_(std::move(path)), status_(status) {
    if (status_.ok() && !object_.is_object()) Fail(path_ + " is not an object");
  }

  // The member, or nullptr (missing, or an earlier error).
  const Json* Get(const char* key) const {
    if (!status_.ok()) return nullptr;
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  std::string PathOf(const char* key) const { return path_ + "." + key; }

  void Read(const char* key, bool& out) {
    if (const Json* v = Get(key)) {
      if (!v->is_boolean()) return Fail(PathOf(key) + " is not a boolean");
      out = v->get<bool>();
    }
  }
  void Read(const char* key, std::string& out) {
    if (const Json* v = Get(key)) {
      if (!v->is_string()) return Fail(PathOf(key) + " is not a string");
      out = v->get<std::string>();
    }
  }
  void Read(const char* key, std::int64_t& out) {
    if (const Json* v = Get(key)) {
      if (v->is_number_unsigned() &&
          v->get<std::uint64_t>() <= std::numeric_limits<std::int64_t>::max()) {
        out = static_cast<std::int64_t>(v->get<std::uint64_t>());
      } else if (v->is_number_integer() && !v->is_number_unsigned()) {
        out = v->get<std::int64_t>();
      } else {
        Fail(PathOf(key) + " is not a 64-bit integer");
      }
    }
  }
  void Read(const char* key, std::uint64_t& out) {
    if (const Json* v = Get(key)) {
      if (!v->is_number_unsigned()) return Fail(PathOf(key) + " is not an unsigned 64-bit integer");
      out = v->get<std::uint64_t>();
    }
  }
  // A number, or one of the strings Float() writes for NaN and the infinities.
  void Read(const char* key, double& out) {
    if (const Json* v = Get(key)) {
      if (v->is_number()) {
        out = v->get<double>();
      } else if (v->is_string() && *v == "NaN") {
        out = std::numeric_limits<double>::quiet_NaN();
      } else if (v->is_string() && *v == "+Inf") {
        out = std::numeric_limits<double>::infinity();
      } else if (v->is_string() && *v == "-Inf") {
        out = -std::numeric_limits<double>::infinity();
      } else {
        Fail(PathOf(key) + " is not a number");
      }
    }
  }
  void Read(const char* key, std::chrono::nanoseconds& out) {
    std::int64_t ns = out.count();
    Read(key, ns);
    out = std::chrono::nanoseconds(ns);
  }
  void Read(const char* key, std::vector<bool>& out) {
    const Json* v = Get(key);
    if (v == nullptr) return;
    std::vector<bool> items;
    if (v->is_array()) {
      for (const Json& item : *v) {
        if (!item.is_boolean()) break;
        items.push_back(item.get<bool>());
      }
    }
    if (!v->is_array() || items.size() != v->size()) {
      return Fail(PathOf(key) + " is not an array of booleans");
    }
    out = std::move(items);
  }
  // null or {"Sha256": "<hex>"}.
  void ReadPayloadCurve(const char* key, std::string& sha256) {
    const Json* v = Get(key);
    if (v == nullptr || v->is_null()) return;
    ObjectReader curve(*v, PathOf(key), status_);
    curve.Read("Sha256", sha256);
  }

 private:
  void Fail(std::string message) {
    status_ = rill::Status(rill::StatusCode::kInvalidArgument, std::move(message));
  }

  const Json& object_;
  std::string path_;
  rill::Status& status_;
};

void ReadFeatures(const Json& value, const std::string& path, Features& f, rill::Status& status) {
  ObjectReader r(value, path, status);
  r.Read("NetworkMode", f.network_mode);
  r.Read("UseBufConn", f.use_buf_conn);
  r.Read("EnableKeepalive", f.enable_keepalive);
  r.Read("BenchTime", f.bench_time);
  r.Read("Connections", f.connections);
  r.Read("EnableTrace", f.enable_trace);
  r.Read("Latency", f.latency);
  r.Read("Kbps", f.kbps);
  r.Read("MTU", f.mtu);
  r.Read("MaxConcurrentCalls", f.max_concurrent_calls);
  r.Read("ReqSizeBytes", f.req_size_bytes);
  r.Read("RespSizeBytes", f.resp_size_bytes);
  r.ReadPayloadCurve("ReqPayloadCurve", f.req_payload_curve);
  r.ReadPayloadCurve("RespPayloadCurve", f.resp_payload_curve);
  r.Read("ModeCompressor", f.mode_compressor);
  r.Read("EnableChannelz", f.enable_channelz);
  r.Read("EnablePreloader", f.enable_preloader);
  r.Read("ClientReadBufferSize", f.client_read_buffer_size);
  r.Read("ClientWriteBufferSize", f.client_write_buffer_size);
  r.Read("ServerReadBufferSize", f.server_read_buffer_size);
  r.Read("ServerWriteBufferSize", f.server_write_buffer_size);
  r.Read("SleepBetweenRPCs", f.sleep_between_rpcs);
  r.Read("RecvBufferPool", f.recv_buffer_pool);
  r.Read("SharedWriteBuffer", f.shared_write_buffer);
}

void ReadRunData(const Json& value, const std::string& path, RunData& d, rill::Status& status) {
  ObjectReader r(value, path, status);
  r.Read("TotalOps", d.total_ops);
  r.Read("SendOps", d.send_ops);
  r.Read("RecvOps", d.recv_ops);
  r.Read("AllocedBytes", d.alloced_bytes);
  r.Read("Allocs", d.allocs);
  r.Read("ReqT", d.req_t);
  r.Read("RespT", d.resp_t);
  r.Read("Fiftieth", d.fiftieth);
  r.Read("Ninetieth", d.ninetieth);
  r.Read("NinetyNinth", d.ninety_ninth);
  r.Read("Average", d.average);
}

}  // namespace

std::string ResultsToJson(std::span<const BenchResults> results) {
  Json doc = Json::array();
  for (const BenchResults& r : results) {
    doc.push_back(Json{
        {"GoVersion", r.runtime_version},
        {"GrpcVersion", r.rpc_version},
        {"RunMode", r.run_mode},
        {"Features", FeaturesJson(r.features)},
        {"SharedFeatures", r.shared_features},
        {"Data", RunDataJson(r.data)},
    });
  }
  // Bytes that are not UTF-8 (never written by benchmain) are replaced rather than thrown on.
  return doc.dump(2, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace) + "\n";
}

rill::StatusOr<std::vector<BenchResults>> ResultsFromJson(std::string_view json) {
  Json doc;
  try {
    doc = Json::parse(json);
  } catch (const Json::parse_error& e) {
    return rill::Status(rill::StatusCode::kInvalidArgument, e.what());
  }
  if (!doc.is_array()) {
    return rill::Status(rill::StatusCode::kInvalidArgument,
                        "a result file holds a JSON array of results");
  }
  std::vector<BenchResults> results;
  rill::Status status;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    // Appended piecewise: GCC 12 at -O3 reports a false -Wrestrict for "[" + std::string&&.
    std::string path = "[";
    path += std::to_string(i);
    path += ']';
    BenchResults r;
    ObjectReader reader(doc[i], path, status);
    reader.Read("GoVersion", r.runtime_version);
    reader.Read("GrpcVersion", r.rpc_version);
    reader.Read("RunMode", r.run_mode);
    if (const Json* f = reader.Get("Features")) {
      ReadFeatures(*f, reader.PathOf("Features"), r.features, status);
    }
    reader.Read("SharedFeatures", r.shared_features);
    if (const Json* d = reader.Get("Data")) {
      ReadRunData(*d, reader.PathOf("Data"), r.data, status);
    }
    if (!status.ok()) return status;
    results.push_back(std::move(r));
  }
  return results;
}

rill::Status WriteResultFile(const std::string& path, std::span<const BenchResults> results) {
  const std::string text = ResultsToJson(results);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return rill::Status(rill::StatusCode::kUnavailable, "cannot open " + path + " for writing");
  }
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) {
    return rill::Status(rill::StatusCode::kUnavailable, "cannot write " + path);
  }
  return rill::OkStatus();
}

rill::StatusOr<std::vector<BenchResults>> ReadResultFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return rill::Status(rill::StatusCode::kNotFound, "cannot open " + path);
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return rill::Status(rill::StatusCode::kUnavailable, "cannot read " + path);
  }
  rill::StatusOr<std::vector<BenchResults>> results = ResultsFromJson(text);
  if (!results.ok()) {
    return rill::Status(rill::StatusCode::kInvalidArgument,
                        path + ": " + std::string(results.status().message()));
  }
  return results;
}

}  // namespace rill::bench
