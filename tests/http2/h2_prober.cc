// h2_prober: floods and abuse sent as raw HTTP/2 frames to any gRPC server that serves
// grpc.testing.TestService in cleartext (rill's interop server, or a peer's), measuring what a
// server operator would notice: whether the server survives, how much its memory grows, which
// GOAWAY it sends, and whether a new connection is served right after.
//
//   h2_prober --port=50051 --pid=$SERVER_PID --probe=rapid_reset --conns=8
//
// One probe per run; it prints one Markdown table row on stdout:
//   | probe | outcome | RSS growth peak / after (MiB) | GOAWAY (code, last stream ids) | good call
//   after |
// and details on stderr. --pid names the server process, whose VmRSS (/proc/<pid>/status) is
// sampled every 20 ms from just before the probe to one second after it; fd_exhaustion also
// lowers that process's descriptor limit (prlimit) for the time of the probe, then restores it.
// tests/http2/run_probes.sh runs every probe against each server and builds the table.
//
// Probes (the handlers are StreamingOutputCall, which sleeps interval_us before its one response):
//   rapid_reset          per connection: --streams HEADERS+DATA+RST_STREAM(CANCEL) back to back;
//                        with --reset_delay_ms, each batch of 100 requests is reset that long
//                        after it was sent (the handlers have started by then)
//   held_streams         one connection: --streams requests whose handler sleeps 10 s, held open
//   continuation_flood   one header block that never ends: 16 KiB CONTINUATION frames, 128 MiB
//   metadata             one EmptyCall with --kib KiB of request metadata (1 MiB by default)
//   ping/settings/window_update/priority/empty_data_flood   --frames frames (1M by default)
//   silent               --conns TCP connections that send nothing, held --hold_seconds
//   preface_silent       --conns connections that send the preface and SETTINGS, then nothing
//   fd_exhaustion        the server's descriptor limit lowered to its open descriptors + 8, 64
//                        connections, the server's CPU time over 2 s
//   cancel_rate          one connection opening --rate calls/s and cancelling each 20 ms later,
//                        for --seconds
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/http2/raw_frames.h"
#include "tests/http2/raw_h2_client.h"

namespace rill::test::probe {
namespace {

using namespace rill::test::h2;  // NOLINT: frame builders
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kOutputCall[] = "/grpc.testing.TestService/StreamingOutputCall";
constexpr char kInputCall[] = "/grpc.testing.TestService/StreamingInputCall";
constexpr char kEmptyCall[] = "/grpc.testing.TestService/EmptyCall";

struct Flags {
  int port = 0;
  int pid = 0;
  std::string probe;
  int conns = 1;
  int streams = 20000;
  int frames = 1000000;
  int kib = 1024;
  int hold_seconds = 25;
  int rate = 1000;
  int seconds = 60;
  int reset_delay_ms = 0;
};
Flags g_flags;

// ---------------------------------------------------------------------------------------------
// The server's memory and CPU.

std::optional<double> ServerRssMib() {
  if (g_flags.pid <= 0) return std::nullopt;
  std::ifstream status("/proc/" + std::to_string(g_flags.pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  }
  return std::nullopt;
}

double ServerCpuSeconds() {
  std::ifstream stat("/proc/" + std::to_string(g_flags.pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream rest(text.substr(paren + 2));
  std::string field;
  long utime = 0;
  long stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int ServerOpenFds() {
  int n = 0;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(g_flags.pid) + "/fd", ec)) {
    static_cast<void>(entry);
    ++n;
  }
  return n;
}

// Samples the server's RSS every 20 ms while alive; keeps the first sample and the peak.
class RssSampler {
 public:
  RssSampler() {
    before_ = ServerRssMib();
    peak_ = before_.value_or(0);
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        if (auto rss = ServerRssMib()) {
          std::lock_guard lock(mu_);
          peak_ = std::max(peak_, *rss);
        }
        std::this_thread::sleep_for(milliseconds(20));
      }
    });
  }
  ~RssSampler() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // "peak / after" growth over the first sample, in MiB.
  std::string Growth() {
    Stop();
    if (!before_) return "n/a";
    const std::optional<double> after = ServerRssMib();
    char text[64];
    std::snprintf(text, sizeof(text), "%+.1f / %+.1f", peak_ - *before_,
                  after ? *after - *before_ : 0.0);
    std::fprintf(stderr, "server RSS before %.1f MiB, peak %.1f MiB, after %.1f MiB\n", *before_,
                 peak_, after.value_or(0));
    return text;
  }

 private:
  std::optional<double> before_;
  std::mutex mu_;
  double peak_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------------
// What the server sent on a connection.

struct Seen {
  struct Goaway {
    uint32_t last_stream_id;
    uint32_t code;
    std::string debug;
  };
  std::vector<Goaway> goaways;
  int64_t refused = 0;    // RST_STREAM(REFUSED_STREAM)
  int64_t other_rst = 0;  // any other RST_STREAM
  int64_t headers = 0;    // HEADERS frames (responses, trailers)
  int64_t ping_acks = 0;
  int64_t settings_acks = 0;
  bool closed = false;

  void Observe(const ReadFrame& f) {
    if (f.type == kGoaway && f.payload.size() >= 8) {
      const auto* p = reinterpret_cast<const uint8_t*>(f.payload.data());
      goaways.push_back({((uint32_t{p[0]} << 24) | (p[1] << 16) | (p[2] << 8) | p[3]) & 0x7fffffff,
                         f.error_code(), f.payload.substr(8, 64)});
    } else if (f.type == kRstStream) {
      (f.error_code() == kRefusedStream ? refused : other_rst) += 1;
    } else if (f.type == kHeaders) {
      ++headers;
    } else if (f.type == kPing && (f.flags & kAck) != 0) {
      ++ping_acks;
    } else if (f.type == kSettings && (f.flags & kAck) != 0) {
      ++settings_acks;
    }
  }
  [[nodiscard]] bool LastStreamIdsNeverRise() const {
    for (size_t i = 1; i < goaways.size(); ++i) {
      if (goaways[i].last_stream_id > goaways[i - 1].last_stream_id) return false;
    }
    return true;
  }
};

const char* CodeName(uint32_t code) {
  static const char* const kNames[] = {"NO_ERROR",
                                       "PROTOCOL_ERROR",
                                       "INTERNAL_ERROR",
                                       "FLOW_CONTROL_ERROR",
                                       "SETTINGS_TIMEOUT",
                                       "STREAM_CLOSED",
                                       "FRAME_SIZE_ERROR",
                                       "REFUSED_STREAM",
                                       "CANCEL",
                                       "COMPRESSION_ERROR",
                                       "CONNECT_ERROR",
                                       "ENHANCE_YOUR_CALM",
                                       "INADEQUATE_SECURITY",
                                       "HTTP_1_1_REQUIRED"};
  return code < std::size(kNames) ? kNames[code] : "unknown";
}

// "ENHANCE_YOUR_CALM (last ids 1999, never rise)" or "none", over every connection: the codes
// seen, and each distinct sequence of last stream ids (with how many connections sent it).
std::string DescribeGoaways(const std::vector<Seen>& seen) {
  std::vector<std::string> codes;
  std::vector<std::pair<std::string, int>> sequences;
  int with = 0;
  bool monotonic = true;
  for (const Seen& s : seen) {
    if (s.goaways.empty()) continue;
    ++with;
    monotonic &= s.LastStreamIdsNeverRise();
    std::string sequence;
    for (const auto& g : s.goaways) {
      const std::string name = CodeName(g.code);
      if (std::find(codes.begin(), codes.end(), name) == codes.end()) codes.push_back(name);
      std::fprintf(stderr, "GOAWAY %s last stream %u debug \"%s\"\n", name.c_str(),
                   g.last_stream_id, g.debug.c_str());
      sequence += (sequence.empty() ? "" : "→") + std::to_string(g.last_stream_id);
    }
    auto it = std::find_if(sequences.begin(), sequences.end(),
                           [&](const auto& entry) { return entry.first == sequence; });
    if (it == sequences.end()) {
      sequences.emplace_back(sequence, 1);
    } else {
      ++it->second;
    }
  }
  if (with == 0) return "none";
  std::string text;
  for (const auto& c : codes) text += (text.empty() ? "" : "+") + c;
  if (seen.size() > 1) text += " on " + std::to_string(with) + "/" + std::to_string(seen.size());
  std::string ids;
  for (size_t i = 0; i < sequences.size() && i < 4; ++i) {
    if (!ids.empty()) ids += "; ";
    ids += sequences[i].first;
    if (sequences[i].second > 1) ids += " ×" + std::to_string(sequences[i].second);
  }
  if (sequences.size() > 4) ids += "; …";
  text += " (last ids " + ids + (monotonic ? ", never rise)" : ", ROSE)");
  return text;
}

// ---------------------------------------------------------------------------------------------
// Requests.

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

// A StreamingOutputCallRequest asking for one 1-byte response after `interval_us`, framed as a
// gRPC message (grpc.testing: response_parameters = 2 { size = 1, interval_us = 2 }).
std::string OutputCallMessage(uint32_t interval_us) {
  const std::string parameters = std::string("\x08\x01\x10", 3) + Varint(interval_us);
  const std::string body = "\x12" + Varint(parameters.size()) + parameters;
  return GrpcMessage(body);
}

// A good call on a new connection: EmptyCall answers grpc-status 0.
bool GoodCallOnNewConnection(milliseconds timeout = milliseconds(10000)) {
  RawH2Client::Options options;
  auto client = RawH2Client::Connect("127.0.0.1", g_flags.port, options);
  if (client == nullptr) return false;
  const int32_t id = client->OpenStream(GrpcRequestHeaders(kEmptyCall));
  if (id <= 0) return false;
  client->SendData(id, GrpcMessage(""), /*end_stream=*/true);
  return client->WaitForClose(id, timeout) && client->stream(id).GrpcStatus() == 0;
}

// A good call on a new connection within `budget` (attempts of at most 2 s, 100 ms apart).
bool GoodCallSoon(milliseconds budget = milliseconds(10000)) {
  const auto end = Clock::now() + budget;
  do {
    if (GoodCallOnNewConnection(milliseconds(2000))) return true;
    std::this_thread::sleep_for(milliseconds(100));
  } while (Clock::now() < end);
  return false;
}

// Sends `bytes` while reading what the server sends (so that neither side blocks on a full
// socket). False once the connection failed, or when nothing could be written for `stall`.
bool SendReading(FrameConn& conn, std::string_view bytes,
                 milliseconds stall = milliseconds(10000)) {
  auto last_progress = Clock::now();
  while (!bytes.empty()) {
    const ssize_t n = conn.TrySend(bytes);
    if (n < 0 || conn.closed()) return false;
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      last_progress = Clock::now();
      conn.Poll();
    } else {
      conn.Next(milliseconds(1));
      if (Clock::now() - last_progress > stall) return false;
    }
  }
  conn.Poll();
  return !conn.closed();
}

// Reads until the server closed, or nothing arrived for `quiet`, or `limit` passed.
void ReadUntilQuiet(FrameConn& conn, milliseconds quiet, milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (!conn.closed() && Clock::now() < end) {
    if (!conn.Next(quiet)) {
      if (!conn.closed()) break;
    }
  }
}

std::unique_ptr<FrameConn> Open(Seen* seen) {
  auto conn = FrameConn::Connect(g_flags.port);
  if (conn == nullptr) return nullptr;
  conn->set_keep_frames(false);
  conn->set_frame_observer([seen](const ReadFrame& f) { seen->Observe(f); });
  return conn;
}

struct Result {
  std::string outcome;
  std::vector<Seen> seen;
  // Unset: Main tries a good call on a new connection once the probe returned (GoodCallSoon).
  std::optional<bool> good_after;
  std::string rss;
};

// Runs `probe(conn, seen)`, which returns the outcome, on one new connection whose frames from
// the server are counted in result.seen[0]. The server's RSS is sampled from before the connection
// opens until the probe returned, while the connection is still open.
template <typename Probe>
Result OnOneConnection(Probe probe) {
  Result result;
  result.seen.resize(1);
  RssSampler rss;
  Seen& seen = result.seen[0];
  auto conn = Open(&seen);
  if (conn == nullptr) return {"no connection", {}, false, "n/a"};
  result.outcome = probe(*conn, seen);
  seen.closed = conn->closed();
  result.rss = rss.Growth();
  return result;
}

// ---------------------------------------------------------------------------------------------
// Probes.

Result RapidReset() {
  Result result;
  result.seen.resize(g_flags.conns);
  std::vector<int64_t> sent(g_flags.conns, 0);
  std::vector<std::thread> threads;
  RssSampler rss;
  const std::string block = GrpcRequestBlock(kOutputCall);
  const std::string message = OutputCallMessage(1000000);
  const auto started = Clock::now();
  std::vector<double> send_seconds(g_flags.conns, 0);
  std::atomic<int> connected{0};
  for (int c = 0; c < g_flags.conns; ++c) {
    threads.emplace_back([&, c] {
      Seen& seen = result.seen[c];
      auto conn = Open(&seen);
      if (conn == nullptr) return;
      connected.fetch_add(1);
      uint32_t id = 1;
      for (int done = 0; done < g_flags.streams && seen.goaways.empty() && !conn->closed();) {
        std::string batch;
        std::string resets;
        for (int i = 0; i < 100 && done < g_flags.streams; ++i, ++done, id += 2) {
          batch += HeadersFrame(id, kEndHeaders, block);
          batch += DataFrame(id, kEndStream, message);
          (g_flags.reset_delay_ms > 0 ? resets : batch) += RstStreamFrame(id, kCancel);
        }
        if (!SendReading(*conn, batch)) break;
        if (g_flags.reset_delay_ms > 0) {
          // The server reads the requests and starts their handlers before the resets arrive.
          const auto until = Clock::now() + milliseconds(g_flags.reset_delay_ms);
          while (Clock::now() < until && !conn->closed()) conn->Next(milliseconds(1));
          if (!SendReading(*conn, resets)) break;
        }
        sent[c] = done;
      }
      send_seconds[c] = std::chrono::duration<double>(Clock::now() - started).count();
      ReadUntilQuiet(*conn, milliseconds(3000), milliseconds(20000));
      seen.closed = conn->closed();
    });
  }
  for (auto& t : threads) t.join();
  std::this_thread::sleep_for(milliseconds(1000));
  result.rss = rss.Growth();
  int64_t total_sent = 0;
  int64_t refused = 0;
  int64_t responses = 0;
  int closed = 0;
  for (int c = 0; c < g_flags.conns; ++c) {
    total_sent += sent[c];
    refused += result.seen[c].refused;
    responses += result.seen[c].headers;
    closed += result.seen[c].closed;
  }
  char took[32];
  std::snprintf(took, sizeof(took), " in %.1f s",
                *std::max_element(send_seconds.begin(), send_seconds.end()));
  const std::string handshakes =
      connected.load() == g_flags.conns
          ? ""
          : " (" + std::to_string(g_flags.conns - connected.load()) + " got no HTTP/2 handshake)";
  result.outcome = std::to_string(total_sent) + " streams sent on " +
                   std::to_string(g_flags.conns) + " conn" + handshakes + took + ", " +
                   std::to_string(refused) + " refused, " + std::to_string(responses) +
                   " response HEADERS, " + std::to_string(closed) + " conn closed by server";
  return result;
}

Result HeldStreams() {
  return OnOneConnection([](FrameConn& conn, Seen& seen) {
    const std::string block = GrpcRequestBlock(kOutputCall);
    const std::string message = OutputCallMessage(10000000);
    uint32_t id = 1;
    int sent = 0;
    for (; sent < g_flags.streams && !conn.closed() && seen.goaways.empty(); ++sent, id += 2) {
      if (!SendReading(conn,
                       HeadersFrame(id, kEndHeaders, block) + DataFrame(id, kEndStream, message))) {
        break;
      }
    }
    ReadUntilQuiet(conn, milliseconds(3000), milliseconds(5000));
    const bool alive = !conn.closed() && conn.Send(PingFrame(42)) &&
                       conn.WaitFor([](const ReadFrame& f) { return f.type == kPing; });
    const bool good_while_held = GoodCallOnNewConnection();
    return std::to_string(sent) + " held, " + std::to_string(seen.refused) + " refused, " +
           std::to_string(seen.other_rst) + " other RST; conn " + (alive ? "alive" : "closed") +
           "; good call while held: " + (good_while_held ? "yes" : "NO");
  });
}

Result ContinuationFlood() {
  return OnOneConnection([](FrameConn& conn, Seen& seen) {
    std::string continuation;
    for (int i = 0; i < 16; ++i) {
      continuation += HpackLiteral("x-flood-" + std::to_string(i), std::string(1000, 'c'));
    }
    bool stalled = false;
    size_t bytes = 0;
    if (SendReading(conn, HeadersFrame(1, 0, GrpcRequestBlock(kEmptyCall)))) {
      const std::string frame = ContinuationFrame(1, 0, continuation);
      std::string batch;
      for (int i = 0; i < 64; ++i) batch += frame;
      const auto limit = Clock::now() + std::chrono::seconds(30);
      while (bytes < (size_t{128} << 20) && !conn.closed() && seen.goaways.empty()) {
        if (!SendReading(conn, batch, milliseconds(3000))) {
          stalled = !conn.closed() && seen.goaways.empty();
          break;
        }
        bytes += batch.size();
        if (Clock::now() > limit) break;
      }
    }
    ReadUntilQuiet(conn, milliseconds(3000), milliseconds(10000));
    std::string outcome = std::to_string(bytes >> 20) + " MiB of CONTINUATION sent; " +
                          (conn.closed() ? "conn closed"
                           : stalled     ? "server stopped reading, conn open"
                                         : "conn open");
    if (seen.other_rst > 0) outcome += ", stream reset";
    return outcome;
  });
}

Result Metadata() {
  Result result;
  result.seen.resize(1);
  RssSampler rss;
  RawH2Client::Options options;
  options.max_send_header_block = size_t{64} << 20;
  auto client = RawH2Client::Connect("127.0.0.1", g_flags.port, options);
  if (client == nullptr) return {"no connection", {}, false, "n/a"};
  RawHeaderList extra;
  for (int i = 0; i < g_flags.kib; ++i) {
    extra.push_back({"x-filler-" + std::to_string(i), std::string(1000, 'a' + (i % 26))});
  }
  const int32_t id = client->OpenStream(GrpcRequestHeaders(kEmptyCall, extra));
  client->SendData(id, GrpcMessage(""), /*end_stream=*/true);
  client->WaitForClose(id, milliseconds(20000));
  const RawStream& s = client->stream(id);
  std::string what;
  if (s.GrpcStatus() >= 0) {
    what = "grpc-status " + std::to_string(s.GrpcStatus());
  } else if (s.rst_received) {
    what = std::string("RST_STREAM ") + CodeName(*s.rst_received);
  } else if (auto http = s.Header(":status")) {
    what = "HTTP " + *http;
  } else {
    what = client->disconnected() ? "no answer, conn closed" : "no answer";
  }
  // The same connection still serves (its HPACK state survived the oversized block).
  bool same_conn = false;
  if (!client->disconnected() && client->goaways().empty()) {
    const int32_t good = client->OpenStream(GrpcRequestHeaders(kEmptyCall));
    client->SendData(good, GrpcMessage(""), /*end_stream=*/true);
    same_conn =
        client->WaitForClose(good, milliseconds(10000)) && client->stream(good).GrpcStatus() == 0;
  }
  for (const auto& g : client->goaways()) {
    result.seen[0].goaways.push_back(
        {static_cast<uint32_t>(g.last_stream_id), g.error_code, g.debug});
  }
  result.rss = rss.Growth();
  result.outcome = std::to_string(g_flags.kib) + " KiB header block: " + what +
                   "; same conn serves next call: " + (same_conn ? "yes" : "no");
  return result;
}

Result ControlFlood(const std::string& kind) {
  return OnOneConnection([&kind](FrameConn& conn, Seen& seen) {
    if (kind == "empty_data") {
      // A client-streaming call the server waits on: empty DATA frames, none ending the stream.
      SendReading(conn, HeadersFrame(1, kEndHeaders, GrpcRequestBlock(kInputCall)));
    }
    int64_t sent = 0;
    const auto started = Clock::now();
    bool stalled = false;
    while (sent < g_flags.frames && !conn.closed() && seen.goaways.empty()) {
      std::string batch;
      for (int i = 0; i < 2048 && sent < g_flags.frames; ++i, ++sent) {
        if (kind == "ping") {
          batch += PingFrame(static_cast<uint64_t>(sent));
        } else if (kind == "settings") {
          batch += SettingsFrame({});
        } else if (kind == "window_update") {
          batch += WindowUpdateFrame(0, 1);
        } else if (kind == "priority") {
          batch += PriorityFrame(static_cast<uint32_t>(3 + 2 * (sent % 100000)), 0);
        } else {
          batch += DataFrame(1, 0, "");
        }
      }
      if (!SendReading(conn, batch, milliseconds(5000))) {
        stalled = !conn.closed() && seen.goaways.empty();
        break;
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    ReadUntilQuiet(conn, milliseconds(2000), milliseconds(10000));
    const bool alive =
        !conn.closed() && seen.goaways.empty() && conn.Send(PingFrame(7)) &&
        conn.WaitFor([](const ReadFrame& f) {
          return f.type == kPing && (f.flags & kAck) != 0 && f.payload == PingFrame(7).substr(9);
        });
    char text[256];
    std::snprintf(
        text, sizeof(text), "%lld frames sent in %.1f s; %s; acks: %lld PING, %lld SETTINGS",
        static_cast<long long>(sent), seconds,
        conn.closed() ? "conn closed"
        : stalled     ? "server stopped reading"
        : alive       ? "conn alive (PING answered)"
                      : "conn open, PING unanswered",
        static_cast<long long>(seen.ping_acks), static_cast<long long>(seen.settings_acks));
    return std::string(text);
  });
}

// A raw TCP connection to the server; -1 on error.
int Dial() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(g_flags.port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads what a connection has received so far without blocking; true once the peer closed it.
bool Drain(int fd, std::string* received) {
  char buf[16384];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      received->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return true;
    return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
}

// The GOAWAYs among raw received bytes (the server's frames, after no preface of its own).
void ParseFrames(const std::string& received, Seen* seen) {
  for (size_t at = 0; at + 9 <= received.size();) {
    const auto* p = reinterpret_cast<const uint8_t*>(received.data() + at);
    const size_t length = (size_t{p[0]} << 16) | (size_t{p[1]} << 8) | p[2];
    if (at + 9 + length > received.size()) break;
    ReadFrame f;
    f.type = p[3];
    f.flags = p[4];
    f.payload = received.substr(at + 9, length);
    seen->Observe(f);
    at += 9 + length;
  }
}

Result SilentConnections(bool preface) {
  Result result;
  RssSampler rss;
  std::vector<int> fds;
  for (int i = 0; i < g_flags.conns; ++i) {
    const int fd = Dial();
    if (fd < 0) break;
    if (preface) {
      const std::string hello = std::string(kClientPreface) + SettingsFrame({});
      ::send(fd, hello.data(), hello.size(), MSG_NOSIGNAL);
    }
    fds.push_back(fd);
  }
  std::vector<std::string> received(fds.size());
  std::vector<bool> closed(fds.size(), false);
  std::vector<double> closed_after(fds.size(), 0);
  const auto started = Clock::now();
  const auto end = started + std::chrono::seconds(g_flags.hold_seconds);
  bool good_while_open = false;
  bool tried_good = false;
  while (Clock::now() < end) {
    size_t open = 0;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (closed[i]) continue;
      if (Drain(fds[i], &received[i])) {
        closed[i] = true;
        closed_after[i] = std::chrono::duration<double>(Clock::now() - started).count();
      } else {
        ++open;
      }
    }
    if (!tried_good && Clock::now() > started + std::chrono::seconds(2)) {
      tried_good = true;
      good_while_open = GoodCallOnNewConnection();
    }
    if (open == 0 && tried_good) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  result.rss = rss.Growth();
  result.seen.resize(fds.size());
  int closed_count = 0;
  double last_close = 0;
  for (size_t i = 0; i < fds.size(); ++i) {
    ParseFrames(received[i], &result.seen[i]);
    result.seen[i].closed = closed[i];
    closed_count += closed[i];
    last_close = std::max(last_close, closed_after[i]);
    ::close(fds[i]);
  }
  char text[256];
  std::snprintf(text, sizeof(text),
                "%zu opened; %d closed by server within %d s (last after %.1f s); good call "
                "while they were open: %s",
                fds.size(), closed_count, g_flags.hold_seconds, last_close,
                good_while_open ? "yes" : "NO");
  result.outcome = text;
  return result;
}

Result FdExhaustion() {
  Result result;
  if (g_flags.pid <= 0) return {"needs --pid", {}, false, "n/a"};
  RssSampler rss;
  rlimit original{};
  if (::prlimit(g_flags.pid, RLIMIT_NOFILE, nullptr, &original) != 0) {
    return {std::string("prlimit: ") + std::strerror(errno), {}, false, "n/a"};
  }
  const int open_fds = ServerOpenFds();
  rlimit low = original;
  low.rlim_cur = static_cast<rlim_t>(open_fds + 8);
  ::prlimit(g_flags.pid, RLIMIT_NOFILE, &low, nullptr);
  std::vector<int> fds;
  for (int i = 0; i < 64; ++i) {
    const int fd = Dial();
    if (fd >= 0) fds.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(200));
  const double cpu_before = ServerCpuSeconds();
  std::this_thread::sleep_for(milliseconds(2000));
  const double cpu = ServerCpuSeconds() - cpu_before;
  int closed = 0;
  for (int fd : fds) {
    std::string ignored;
    closed += Drain(fd, &ignored);
    ::close(fd);
  }
  ::prlimit(g_flags.pid, RLIMIT_NOFILE, &original, nullptr);
  const auto freed = Clock::now();
  result.good_after = GoodCallSoon(milliseconds(30000));
  const double recovered = std::chrono::duration<double>(Clock::now() - freed).count();
  result.rss = rss.Growth();
  result.seen.resize(1);
  char text[256];
  std::snprintf(text, sizeof(text),
                "limit %d fds (%d open), 64 conns (%d closed by server): server CPU %.2f s in "
                "2 s; %s %.1f s after fds freed",
                open_fds + 8, open_fds, closed, cpu,
                *result.good_after ? "served again" : "NOT served again", recovered);
  result.outcome = text;
  return result;
}

Result CancelRate() {
  return OnOneConnection([](FrameConn& conn, Seen& seen) {
    const std::string block = GrpcRequestBlock(kOutputCall);
    const std::string message = OutputCallMessage(10000000);
    const auto started = Clock::now();
    const auto end = started + std::chrono::seconds(g_flags.seconds);
    std::deque<std::pair<Clock::time_point, uint32_t>> open;
    uint32_t next_id = 1;
    int64_t opened = 0;
    int64_t cancelled = 0;
    bool failed = false;
    while (Clock::now() < end && !failed && seen.goaways.empty()) {
      const auto now = Clock::now();
      const auto due =
          static_cast<int64_t>(std::chrono::duration<double>(now - started).count() * g_flags.rate);
      std::string batch;
      for (; opened < due; ++opened, next_id += 2) {
        batch += HeadersFrame(next_id, kEndHeaders, block);
        batch += DataFrame(next_id, kEndStream, message);
        open.emplace_back(now, next_id);
      }
      while (!open.empty() && now - open.front().first >= milliseconds(20)) {
        batch += RstStreamFrame(open.front().second, kCancel);
        open.pop_front();
        ++cancelled;
      }
      if (!batch.empty() && !SendReading(conn, batch)) failed = true;
      conn.Next(milliseconds(1));
    }
    std::string rest;
    for (const auto& [when, id] : open) rest += RstStreamFrame(id, kCancel);
    cancelled += static_cast<int64_t>(open.size());
    if (!failed) SendReading(conn, rest);
    ReadUntilQuiet(conn, milliseconds(500), milliseconds(2000));
    const bool alive =
        !conn.closed() && seen.goaways.empty() && conn.Send(PingFrame(9)) &&
        conn.WaitFor([](const ReadFrame& f) { return f.type == kPing && (f.flags & kAck) != 0; });
    char text[256];
    std::snprintf(text, sizeof(text),
                  "%lld calls opened and cancelled in %.0f s (%.0f/s); %lld refused, %lld other "
                  "RST; conn %s",
                  static_cast<long long>(opened),
                  std::chrono::duration<double>(Clock::now() - started).count(),
                  static_cast<double>(opened) / g_flags.seconds,
                  static_cast<long long>(seen.refused), static_cast<long long>(seen.other_rst),
                  alive ? "kept (PING answered, no GOAWAY)" : "LOST");
    return std::string(text);
  });
}

int Main(int argc, char** argv) {
  CLI::App app("raw HTTP/2 floods and abuse against a grpc.testing.TestService server");
  app.add_option("--port", g_flags.port, "the server's port on 127.0.0.1")->required();
  app.add_option("--pid", g_flags.pid, "the server's process id (RSS, CPU, descriptors)");
  app.add_option("--probe", g_flags.probe, "which probe")->required();
  app.add_option("--conns", g_flags.conns, "connections (rapid_reset, silent, preface_silent)");
  app.add_option("--streams", g_flags.streams,
                 "streams per connection (rapid_reset, held_streams)");
  app.add_option("--frames", g_flags.frames, "frames per flood");
  app.add_option("--kib", g_flags.kib, "KiB of metadata");
  app.add_option("--hold_seconds", g_flags.hold_seconds, "how long silent connections stay");
  app.add_option("--rate", g_flags.rate, "calls per second (cancel_rate)");
  app.add_option("--seconds", g_flags.seconds, "how long (cancel_rate)");
  app.add_option("--reset_delay_ms", g_flags.reset_delay_ms,
                 "rapid_reset: send each batch of 100 requests, wait this long, then reset them");
  CLI11_PARSE(app, argc, argv);
  // The row alone on stdout: anything else (the frame helpers' failure reports) goes to stderr.
  std::FILE* row_out = ::fdopen(::dup(STDOUT_FILENO), "w");
  ::dup2(STDERR_FILENO, STDOUT_FILENO);

  Result result;
  const std::string& p = g_flags.probe;
  if (p == "rapid_reset") {
    result = RapidReset();
  } else if (p == "held_streams") {
    result = HeldStreams();
  } else if (p == "continuation_flood") {
    result = ContinuationFlood();
  } else if (p == "metadata") {
    result = Metadata();
  } else if (p == "ping_flood" || p == "settings_flood" || p == "window_update_flood" ||
             p == "priority_flood" || p == "empty_data_flood") {
    result = ControlFlood(p.substr(0, p.size() - std::strlen("_flood")));
  } else if (p == "silent") {
    result = SilentConnections(false);
  } else if (p == "preface_silent") {
    result = SilentConnections(true);
  } else if (p == "fd_exhaustion") {
    result = FdExhaustion();
  } else if (p == "cancel_rate") {
    result = CancelRate();
  } else {
    std::fprintf(stderr, "unknown probe %s\n", p.c_str());
    return 2;
  }
  // fd_exhaustion waits for the good call itself, to time how long the server took to recover.
  if (!result.good_after.has_value()) result.good_after = GoodCallSoon();
  std::string name = p;
  if (p == "rapid_reset" || p == "silent" || p == "preface_silent") {
    name += " ×" + std::to_string(g_flags.conns);
  }
  if (p == "rapid_reset" && g_flags.reset_delay_ms > 0) {
    name += ", reset " + std::to_string(g_flags.reset_delay_ms) + " ms after";
  }
  std::fprintf(row_out, "| %s | %s | %s | %s | %s |\n", name.c_str(), result.outcome.c_str(),
               result.rss.c_str(), DescribeGoaways(result.seen).c_str(),
               *result.good_after ? "yes" : "NO");
  std::fclose(row_out);
  return 0;
}

}  // namespace
}  // namespace rill::test::probe

int main(int argc, char** argv) { return rill::test::probe::Main(argc, argv); }
