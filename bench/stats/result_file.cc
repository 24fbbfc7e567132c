#include "bench/stats/result_file.h"

#include <fstream>
#include <iterator>
#include <utility>

#include "bench/stats/json.h"

namespace rill::bench {
namespace {

void WritePayloadCurve(JsonWriter& w, const std::string& sha256) {
  if (sha256.empty()) {
    w.Null();
    return;
  }
  w.BeginObject();
  w.Key("Sha256");
  w.String(sha256);
  w.EndObject();
}

void WriteFeatures(JsonWriter& w, const Features& f) {
  w.BeginObject();
  w.Key("NetworkMode");
  w.String(f.network_mode);
  w.Key("UseBufConn");
  w.Bool(f.use_buf_conn);
  w.Key("EnableKeepalive");
  w.Bool(f.enable_keepalive);
  w.Key("BenchTime");
  w.Int(f.bench_time.count());
  w.Key("Connections");
  w.Int(f.connections);
  w.Key("EnableTrace");
  w.Bool(f.enable_trace);
  w.Key("Latency");
  w.Int(f.latency.count());
  w.Key("Kbps");
  w.Int(f.kbps);
  w.Key("MTU");
  w.Int(f.mtu);
  w.Key("MaxConcurrentCalls");
  w.Int(f.max_concurrent_calls);
  w.Key("ReqSizeBytes");
  w.Int(f.req_size_bytes);
  w.Key("RespSizeBytes");
  w.Int(f.resp_size_bytes);
  w.Key("ReqPayloadCurve");
  WritePayloadCurve(w, f.req_payload_curve);
  w.Key("RespPayloadCurve");
  WritePayloadCurve(w, f.resp_payload_curve);
  w.Key("ModeCompressor");
  w.String(f.mode_compressor);
  w.Key("EnableChannelz");
  w.Bool(f.enable_channelz);
  w.Key("EnablePreloader");
  w.Bool(f.enable_preloader);
  w.Key("ClientReadBufferSize");
  w.Int(f.client_read_buffer_size);
  w.Key("ClientWriteBufferSize");
  w.Int(f.client_write_buffer_size);
  w.Key("ServerReadBufferSize");
  w.Int(f.server_read_buffer_size);
  w.Key("ServerWriteBufferSize");
  w.Int(f.server_write_buffer_size);
  w.Key("SleepBetweenRPCs");
  w.Int(f.sleep_between_rpcs.count());
  w.Key("RecvBufferPool");
  w.String(f.recv_buffer_pool);
  w.Key("SharedWriteBuffer");
  w.Bool(f.shared_write_buffer);
  w.EndObject();
}

void WriteRunData(JsonWriter& w, const RunData& d) {
  w.BeginObject();
  w.Key("TotalOps");
  w.Uint(d.total_ops);
  w.Key("SendOps");
  w.Uint(d.send_ops);
  w.Key("RecvOps");
  w.Uint(d.recv_ops);
  w.Key("AllocedBytes");
  w.Double(d.alloced_bytes);
  w.Key("Allocs");
  w.Double(d.allocs);
  w.Key("ReqT");
  w.Double(d.req_t);
  w.Key("RespT");
  w.Double(d.resp_t);
  w.Key("Fiftieth");
  w.Int(d.fiftieth.count());
  w.Key("Ninetieth");
  w.Int(d.ninetieth.count());
  w.Key("NinetyNinth");
  w.Int(d.ninety_ninth.count());
  w.Key("Average");
  w.Int(d.average.count());
  w.EndObject();
}

// Reads fields of one JSON object into C++ fields. A missing field keeps its value; the first
// type error is kept and reported with the field's path.
class ObjectReader {
 public:
  ObjectReader(const JsonValue& object, std::string path, rill::Status& status)
      : object_(object), path_(std::move(path)), status_(status) {
    if (status_.ok() && object_.type() != JsonValue::Type::kObject) {
      status_ = rill::Status(rill::StatusCode::kInvalidArgument, path_ + " is not an object");
    }
  }

  // Returns the member or nullptr (missing, or an earlier error).
  const JsonValue* Get(std::string_view key) const {
    return status_.ok() ? object_.Find(key) : nullptr;
  }

  std::string PathOf(std::string_view key) const { return path_ + "." + std::string(key); }

  template <typename T>
  void Check(std::string_view key, rill::StatusOr<T> value, T& out) {
    if (!value.ok()) {
      status_ = rill::Status(rill::StatusCode::kInvalidArgument,
                             PathOf(key) + ": " + std::string(value.status().message()));
      return;
    }
    out = std::move(*value);
  }

  void Read(std::string_view key, bool& out) {
    if (const JsonValue* v = Get(key)) {
      Check(key, v->AsBool(), out);
    }
  }
  void Read(std::string_view key, std::string& out) {
    if (const JsonValue* v = Get(key)) {
      Check(key, v->AsString(), out);
    }
  }
  void Read(std::string_view key, std::int64_t& out) {
    if (const JsonValue* v = Get(key)) {
      Check(key, v->AsInt64(), out);
    }
  }
  void Read(std::string_view key, std::uint64_t& out) {
    if (const JsonValue* v = Get(key)) {
      Check(key, v->AsUint64(), out);
    }
  }
  void Read(std::string_view key, double& out) {
    if (const JsonValue* v = Get(key)) {
      Check(key, v->AsDouble(), out);
    }
  }
  void Read(std::string_view key, std::chrono::nanoseconds& out) {
    std::int64_t ns = out.count();
    Read(key, ns);
    out = std::chrono::nanoseconds(ns);
  }
  void ReadPayloadCurve(std::string_view key, std::string& sha256) {
    const JsonValue* v = Get(key);
    if (v == nullptr || v->is_null()) {
      return;
    }
    ObjectReader curve(*v, PathOf(key), status_);
    curve.Read("Sha256", sha256);
  }
  void Read(std::string_view key, std::vector<bool>& out) {
    const JsonValue* v = Get(key);
    if (v == nullptr) {
      return;
    }
    if (v->type() != JsonValue::Type::kArray) {
      status_ = rill::Status(rill::StatusCode::kInvalidArgument,
                             PathOf(key) + " is not an array of booleans");
      return;
    }
    out.clear();
    for (const JsonValue& item : v->items()) {
      bool b = false;
      Check(key, item.AsBool(), b);
      out.push_back(b);
    }
  }

 private:
  const JsonValue& object_;
  std::string path_;
  rill::Status& status_;
};

void ReadFeatures(const JsonValue& value, const std::string& path, Features& f,
                  rill::Status& status) {
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

void ReadRunData(const JsonValue& value, const std::string& path, RunData& d,
                 rill::Status& status) {
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
  JsonWriter w;
  w.BeginArray();
  for (const BenchResults& r : results) {
    w.BeginObject();
    w.Key("GoVersion");
    w.String(r.runtime_version);
    w.Key("GrpcVersion");
    w.String(r.rpc_version);
    w.Key("RunMode");
    w.String(r.run_mode);
    w.Key("Features");
    WriteFeatures(w, r.features);
    w.Key("SharedFeatures");
    w.BeginArray(/*single_line=*/true);
    for (bool b : r.shared_features) {
      w.Bool(b);
    }
    w.EndArray();
    w.Key("Data");
    WriteRunData(w, r.data);
    w.EndObject();
  }
  w.EndArray();
  return w.Take();
}

rill::StatusOr<std::vector<BenchResults>> ResultsFromJson(std::string_view json) {
  rill::StatusOr<JsonValue> doc = ParseJson(json);
  if (!doc.ok()) {
    return doc.status();
  }
  if (doc->type() != JsonValue::Type::kArray) {
    return rill::Status(rill::StatusCode::kInvalidArgument,
                        "a result file holds a JSON array of results");
  }
  std::vector<BenchResults> results;
  rill::Status status;
  std::size_t index = 0;
  for (const JsonValue& item : doc->items()) {
    // Appended piecewise: GCC 12 at -O3 reports a false -Wrestrict for "[" + std::string&&.
    std::string path = "[";
    path += std::to_string(index++);
    path += ']';
    BenchResults r;
    ObjectReader reader(item, path, status);
    reader.Read("GoVersion", r.runtime_version);
    reader.Read("GrpcVersion", r.rpc_version);
    reader.Read("RunMode", r.run_mode);
    if (const JsonValue* f = reader.Get("Features")) {
      ReadFeatures(*f, reader.PathOf("Features"), r.features, status);
    }
    reader.Read("SharedFeatures", r.shared_features);
    if (const JsonValue* d = reader.Get("Data")) {
      ReadRunData(*d, reader.PathOf("Data"), r.data, status);
    }
    if (!status.ok()) {
      return status;
    }
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
