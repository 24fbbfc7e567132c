#include "bench/stats/features.h"

#include <utility>

namespace rill::bench {
namespace {

std::string Bool(bool b) { return b ? "true" : "false"; }

std::string Int(std::int64_t v) { return std::to_string(v); }

std::string Duration(std::chrono::nanoseconds d) { return GoDurationString(d); }

}  // namespace

std::string_view ShortHash(std::string_view sha256) { return sha256.substr(0, 8); }

std::string Features::String() const {
  const std::string req = req_payload_curve.empty()
                              ? "reqSize_" + Int(req_size_bytes) + "B"
                              : "reqPayloadCurve_" + std::string(ShortHash(req_payload_curve));
  const std::string resp = resp_payload_curve.empty()
                               ? "respSize_" + Int(resp_size_bytes) + "B"
                               : "respPayloadCurve_" + std::string(ShortHash(resp_payload_curve));
  std::string out;
  out.reserve(512);
  out += "networkMode_" + network_mode;
  out += "-bufConn_" + Bool(use_buf_conn);
  out += "-keepalive_" + Bool(enable_keepalive);
  out += "-benchTime_" + Duration(bench_time);
  out += "-trace_" + Bool(enable_trace);
  out += "-latency_" + Duration(latency);
  out += "-kbps_" + Int(kbps);
  out += "-MTU_" + Int(mtu);
  out += "-maxConcurrentCalls_" + Int(max_concurrent_calls);
  out += "-" + req;
  out += "-" + resp;
  out += "-compressor_" + mode_compressor;
  out += "-channelz_" + Bool(enable_channelz);
  out += "-preloader_" + Bool(enable_preloader);
  out += "-clientReadBufferSize_" + Int(client_read_buffer_size);
  out += "-clientWriteBufferSize_" + Int(client_write_buffer_size);
  out += "-serverReadBufferSize_" + Int(server_read_buffer_size);
  out += "-serverWriteBufferSize_" + Int(server_write_buffer_size);
  out += "-sleepBetweenRPCs_" + Duration(sleep_between_rpcs);
  out += "-connections_" + Int(connections);
  out += "-recvBufferPool_" + recv_buffer_pool;
  out += "-sharedWriteBuffer_" + Bool(shared_write_buffer);
  return out;
}

std::string Features::FeatureString(std::size_t index, std::string_view sep,
                                    std::string_view delim) const {
  std::string label;
  std::string value;
  switch (static_cast<FeatureIndex>(index)) {
    case FeatureIndex::kEnableTrace:
      label = "Trace";
      value = Bool(enable_trace);
      break;
    case FeatureIndex::kReadLatencies:
      label = "Latency";
      value = Duration(latency);
      break;
    case FeatureIndex::kReadKbps:
      label = "Kbps";
      value = Int(kbps);
      break;
    case FeatureIndex::kReadMTU:
      label = "MTU";
      value = Int(mtu);
      break;
    case FeatureIndex::kMaxConcurrentCalls:
      label = "Callers";
      value = Int(max_concurrent_calls);
      break;
    case FeatureIndex::kReqSizeBytes:
      label = "ReqSize";
      value = Int(req_size_bytes) + "B";
      break;
    case FeatureIndex::kRespSizeBytes:
      label = "RespSize";
      value = Int(resp_size_bytes) + "B";
      break;
    case FeatureIndex::kReqPayloadCurve:
      if (req_payload_curve.empty()) {
        return "";
      }
      label = "ReqPayloadCurve";
      value = "SHA-256:" + req_payload_curve;
      break;
    case FeatureIndex::kRespPayloadCurve:
      if (resp_payload_curve.empty()) {
        return "";
      }
      label = "RespPayloadCurve";
      value = "SHA-256:" + resp_payload_curve;
      break;
    case FeatureIndex::kCompModes:
      label = "Compressor";
      value = mode_compressor;
      break;
    case FeatureIndex::kEnableChannelz:
      label = "Channelz";
      value = Bool(enable_channelz);
      break;
    case FeatureIndex::kEnablePreloader:
      label = "Preloader";
      value = Bool(enable_preloader);
      break;
    case FeatureIndex::kClientReadBufferSize:
      label = "ClientReadBufferSize";
      value = Int(client_read_buffer_size);
      break;
    case FeatureIndex::kClientWriteBufferSize:
      label = "ClientWriteBufferSize";
      value = Int(client_write_buffer_size);
      break;
    case FeatureIndex::kServerReadBufferSize:
      label = "ServerReadBufferSize";
      value = Int(server_read_buffer_size);
      break;
    case FeatureIndex::kServerWriteBufferSize:
      label = "ServerWriteBufferSize";
      value = Int(server_write_buffer_size);
      break;
    case FeatureIndex::kSleepBetweenRPCs:
      label = "SleepBetweenRPCs";
      value = Duration(sleep_between_rpcs);
      break;
    case FeatureIndex::kRecvBufferPool:
      label = "RecvBufferPool";
      value = recv_buffer_pool;
      break;
    case FeatureIndex::kSharedWriteBuffer:
      label = "SharedWriteBuffer";
      value = Bool(shared_write_buffer);
      break;
    default:
      // grpc-go aborts on an unknown index; a mask from a newer file may carry more entries
      // than this version knows, and those are skipped.
      return "";
  }
  std::string out = std::move(label);
  out += sep;
  out += value;
  out += delim;
  return out;
}

std::string Features::SharedFeaturesString(const std::vector<bool>& mask) const {
  std::string out;
  if (!network_mode.empty()) {
    out += "Network: " + network_mode + "\n";
  }
  if (use_buf_conn) {
    out += "UseBufConn: true\n";
  }
  if (enable_keepalive) {
    out += "EnableKeepalive: true\n";
  }
  out += "BenchTime: " + Duration(bench_time) + "\n";
  for (std::size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) {
      out += FeatureString(i, ": ", "\n");
    }
  }
  return out;
}

std::string Features::PrintableName(const std::vector<bool>& mask) const {
  std::string out;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) {
      out += FeatureString(i, "_", "-");
    }
  }
  return out;
}

std::array<std::size_t, kNumFeatureIndices> FeatureValues::Counts() const {
  std::array<std::size_t, kNumFeatureIndices> counts{};
  auto set = [&counts](FeatureIndex index, std::size_t n) {
    counts[static_cast<std::size_t>(index)] = n;
  };
  set(FeatureIndex::kEnableTrace, enable_trace.size());
  set(FeatureIndex::kReadLatencies, latencies.size());
  set(FeatureIndex::kReadKbps, kbps.size());
  set(FeatureIndex::kReadMTU, mtu.size());
  set(FeatureIndex::kMaxConcurrentCalls, max_concurrent_calls.size());
  set(FeatureIndex::kReqSizeBytes, req_payload_curves.empty() ? req_size_bytes.size() : 0);
  set(FeatureIndex::kRespSizeBytes, resp_payload_curves.empty() ? resp_size_bytes.size() : 0);
  set(FeatureIndex::kReqPayloadCurve, req_payload_curves.size());
  set(FeatureIndex::kRespPayloadCurve, resp_payload_curves.size());
  set(FeatureIndex::kCompModes, compressor_modes.size());
  set(FeatureIndex::kEnableChannelz, enable_channelz.size());
  set(FeatureIndex::kEnablePreloader, enable_preloader.size());
  set(FeatureIndex::kClientReadBufferSize, client_read_buffer_size.size());
  set(FeatureIndex::kClientWriteBufferSize, client_write_buffer_size.size());
  set(FeatureIndex::kServerReadBufferSize, server_read_buffer_size.size());
  set(FeatureIndex::kServerWriteBufferSize, server_write_buffer_size.size());
  set(FeatureIndex::kSleepBetweenRPCs, sleep_between_rpcs.size());
  set(FeatureIndex::kRecvBufferPool, recv_buffer_pools.size());
  set(FeatureIndex::kSharedWriteBuffer, shared_write_buffer.size());
  return counts;
}

std::vector<bool> FeatureValues::SharedFeatureMask() const {
  const auto counts = Counts();
  std::vector<bool> mask(kNumFeatureIndices);
  for (std::size_t i = 0; i < kNumFeatureIndices; ++i) {
    mask[i] = counts[i] <= 1;
  }
  return mask;
}

std::vector<Features> FeatureValues::Generate() const {
  const auto counts = Counts();
  for (std::size_t i = 0; i < kNumFeatureIndices; ++i) {
    const auto index = static_cast<FeatureIndex>(i);
    const bool optional = index == FeatureIndex::kReqPayloadCurve ||
                          index == FeatureIndex::kRespPayloadCurve ||
                          (index == FeatureIndex::kReqSizeBytes && !req_payload_curves.empty()) ||
                          (index == FeatureIndex::kRespSizeBytes && !resp_payload_curves.empty());
    if (counts[i] == 0 && !optional) {
      return {};
    }
  }
  std::vector<Features> result;
  ForEachCombination(counts, [&](std::span<const std::size_t> pos) {
    auto at = [&pos](FeatureIndex index) { return pos[static_cast<std::size_t>(index)]; };
    Features f;
    f.network_mode = network_mode;
    f.use_buf_conn = use_buf_conn;
    f.enable_keepalive = enable_keepalive;
    f.bench_time = bench_time;
    f.connections = connections;
    f.enable_trace = enable_trace[at(FeatureIndex::kEnableTrace)];
    f.latency = latencies[at(FeatureIndex::kReadLatencies)];
    f.kbps = kbps[at(FeatureIndex::kReadKbps)];
    f.mtu = mtu[at(FeatureIndex::kReadMTU)];
    f.max_concurrent_calls = max_concurrent_calls[at(FeatureIndex::kMaxConcurrentCalls)];
    if (req_payload_curves.empty()) {
      f.req_size_bytes = req_size_bytes[at(FeatureIndex::kReqSizeBytes)];
    } else {
      f.req_payload_curve = req_payload_curves[at(FeatureIndex::kReqPayloadCurve)];
    }
    if (resp_payload_curves.empty()) {
      f.resp_size_bytes = resp_size_bytes[at(FeatureIndex::kRespSizeBytes)];
    } else {
      f.resp_payload_curve = resp_payload_curves[at(FeatureIndex::kRespPayloadCurve)];
    }
    f.mode_compressor = compressor_modes[at(FeatureIndex::kCompModes)];
    f.enable_channelz = enable_channelz[at(FeatureIndex::kEnableChannelz)];
    f.enable_preloader = enable_preloader[at(FeatureIndex::kEnablePreloader)];
    f.client_read_buffer_size = client_read_buffer_size[at(FeatureIndex::kClientReadBufferSize)];
    f.client_write_buffer_size = client_write_buffer_size[at(FeatureIndex::kClientWriteBufferSize)];
    f.server_read_buffer_size = server_read_buffer_size[at(FeatureIndex::kServerReadBufferSize)];
    f.server_write_buffer_size = server_write_buffer_size[at(FeatureIndex::kServerWriteBufferSize)];
    f.sleep_between_rpcs = sleep_between_rpcs[at(FeatureIndex::kSleepBetweenRPCs)];
    f.recv_buffer_pool = recv_buffer_pools[at(FeatureIndex::kRecvBufferPool)];
    f.shared_write_buffer = shared_write_buffer[at(FeatureIndex::kSharedWriteBuffer)];
    result.push_back(std::move(f));
  });
  return result;
}

}  // namespace rill::bench
