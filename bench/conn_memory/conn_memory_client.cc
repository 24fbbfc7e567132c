// conn_memory_client: what a server's idle connections and held calls cost it in memory.
// One process, one thread, epoll over non-blocking sockets with hand-built HTTP/2 frames
// (tests/http2/raw_frames.h), so the client itself stays small next to ~10,000 connections.
//
//   conn_memory_client --port=50051 --pid=$SERVER_PID
//       --unary_path=/grpc.testing.BenchmarkService/UnaryCall
//       --stream_path=/grpc.testing.BenchmarkService/StreamingCall
//
// Phases, the server's VmRSS (/proc/<pid>/status) sampled after each once it settled:
//   0. one warm-up connection completes the handshake and one unary call, and stays open
//   1. --conns connections each send the preface and SETTINGS, ACK the server's SETTINGS,
//      make ONE unary call with an empty message (so the server's read and write paths ran
//      once) and then stay idle: (RSS1 - RSS0) / conns = KiB per idle connection
//   2. on --inflight_conns of those connections, --inflight_streams calls each are opened and
//      held (HEADERS and one empty message, no END_STREAM; a PING round trip confirms the
//      server read them): (RSS2 - RSS1) / calls = KiB per call in flight
// The empty message parses as any proto3 request (SimpleRequest, StreamingOutputCallRequest).
// Prints one `key=value ...` line per phase on stdout and exits non-zero when a connection or
// call failed (closed, reset, GOAWAY), so a figure is never reported for connections that died.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/http2/raw_frames.h"

namespace rill::bench {
namespace {

using namespace rill::test::h2;  // NOLINT: frame builders
using Clock = std::chrono::steady_clock;

struct Flags {
  int port = 0;
  int pid = 0;
  int conns = 10000;
  int inflight_conns = 10;
  int inflight_streams = 100;
  int sources = 1;          // source addresses 127.0.0.1 .. 127.0.0.<sources>
  int connect_batch = 200;  // connections being set up at once
  int settle_ms = 3000;
  int timeout_s = 120;
  std::string unary_path;
  std::string stream_path;
};

// One client connection; `out` holds bytes the socket did not take yet.
struct Conn {
  int fd = -1;
  std::string in;
  std::string out;
  bool connected = false;
  bool settings_acked = false;  // the server ACKed our SETTINGS
  bool unary_done = false;      // stream 1 ended
  uint32_t next_stream = 3;
  int held_expected = 0;        // held calls sent on this connection
  uint64_t ping_sent = 0;       // payload of the PING that follows them (0: none)
  bool ping_acked = false;
  int responses_started = 0;    // held calls the server sent HEADERS on
  bool failed = false;
  std::string why;
};

long RssKib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

uint32_t Get32(std::string_view s, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 3]));
}

class Driver {
 public:
  explicit Driver(const Flags& flags) : flags_(flags), epoll_(epoll_create1(EPOLL_CLOEXEC)) {
    const std::string message("\0\0\0\0\0", 5);  // an uncompressed empty message
    unary_ = HeadersFrame(1, kEndHeaders, GrpcRequestBlock(flags.unary_path)) +
             DataFrame(1, kEndStream, message);
    stream_block_ = GrpcRequestBlock(flags.stream_path);
    message_ = message;
  }

  // Opens `count` connections that each complete the handshake and one unary call; false when
  // one failed or the deadline passed.
  bool OpenIdle(int count) {
    const size_t first = conns_.size();
    conns_.reserve(first + static_cast<size_t>(count));
    int started = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(flags_.timeout_s);
    for (;;) {
      int pending = 0;
      int done = 0;
      for (size_t i = first; i < conns_.size(); ++i) {
        if (conns_[i].failed) return Fail(conns_[i]);
        if (Idle(conns_[i])) {
          ++done;
        } else {
          ++pending;
        }
      }
      if (done == count) return true;
      while (started < count && pending < flags_.connect_batch) {
        if (!Connect(started)) return false;
        ++started;
        ++pending;
      }
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "timed out: %d of %d connections idle\n", done, count);
        return false;
      }
      Poll(100);
    }
  }

  // Opens `streams` held calls on each of the first `count` connections opened by OpenIdle.
  bool OpenHeld(int count, int streams) {
    for (int i = 0; i < count; ++i) {
      Conn& c = conns_[static_cast<size_t>(i) + 1];  // conns_[0] is the warm-up connection
      for (int s = 0; s < streams; ++s) {
        const uint32_t id = c.next_stream;
        c.next_stream += 2;
        c.out += HeadersFrame(id, kEndHeaders, stream_block_);
        c.out += DataFrame(id, 0, message_);
      }
      c.held_expected = streams;
      c.ping_sent = 0x68656c64'00000000ull + static_cast<uint64_t>(i) + 1;
      c.out += PingFrame(c.ping_sent);
      Write(c);
    }
    const auto deadline = Clock::now() + std::chrono::seconds(flags_.timeout_s);
    for (;;) {
      int acked = 0;
      for (int i = 0; i < count; ++i) {
        const Conn& c = conns_[static_cast<size_t>(i) + 1];
        if (c.failed) return Fail(c);
        if (c.ping_acked) ++acked;
      }
      if (acked == count) return true;
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "timed out: %d of %d connections confirmed their calls\n", acked,
                     count);
        return false;
      }
      Poll(100);
    }
  }

  // Keeps answering the server (PINGs, SETTINGS) for `ms` and checks nothing failed.
  bool Settle(int ms) {
    const auto until = Clock::now() + std::chrono::milliseconds(ms);
    while (Clock::now() < until) Poll(50);
    for (const Conn& c : conns_) {
      if (c.failed) return Fail(c);
    }
    return true;
  }

  [[nodiscard]] int ResponsesStarted() const {
    int n = 0;
    for (const Conn& c : conns_) n += c.responses_started;
    return n;
  }

 private:
  static bool Idle(const Conn& c) { return c.connected && c.settings_acked && c.unary_done; }

  static bool Fail(const Conn& c) {
    std::fprintf(stderr, "a connection failed: %s\n", c.why.c_str());
    return false;
  }

  bool Connect(int index) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      std::fprintf(stderr, "socket: %s (raise ulimit -n)\n", std::strerror(errno));
      return false;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (flags_.sources > 1) {
      // Loopback has 127.0.0.0/8: more source addresses, more ephemeral ports.
      ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
      sockaddr_in source{};
      source.sin_family = AF_INET;
      source.sin_addr.s_addr = htonl(0x7f000001u + static_cast<uint32_t>(index % flags_.sources));
      if (::bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof(source)) != 0) {
        std::fprintf(stderr, "bind: %s\n", std::strerror(errno));
        ::close(fd);
        return false;
      }
    }
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(flags_.port));
    to.sin_addr.s_addr = htonl(0x7f000001u);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0 &&
        errno != EINPROGRESS) {
      std::fprintf(stderr, "connect: %s\n", std::strerror(errno));
      ::close(fd);
      return false;
    }
    conns_.emplace_back();
    Conn& c = conns_.back();
    c.fd = fd;
    c.out = std::string(kClientPreface) + SettingsFrame({}) + unary_;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
    ev.data.u64 = conns_.size() - 1;
    ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
    return true;
  }

  void Poll(int timeout_ms) {
    epoll_event events[256];
    const int n = ::epoll_wait(epoll_, events, 256, timeout_ms);
    for (int i = 0; i < n; ++i) {
      Conn& c = conns_[events[i].data.u64];
      if (c.failed) continue;
      if ((events[i].events & EPOLLOUT) != 0 && !c.connected) {
        int error = 0;
        socklen_t len = sizeof(error);
        ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &len);
        if (error != 0) {
          MarkFailed(c, std::string("connect: ") + std::strerror(error));
          continue;
        }
        c.connected = true;
      }
      if ((events[i].events & EPOLLOUT) != 0) Write(c);
      if ((events[i].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) Read(c);
    }
  }

  void Write(Conn& c) {
    while (!c.out.empty() && !c.failed) {
      const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        MarkFailed(c, std::string("send: ") + std::strerror(errno));
        return;
      }
      c.out.erase(0, static_cast<size_t>(n));
    }
    // Only readability matters once everything is written.
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | (c.out.empty() && c.connected ? 0u : EPOLLOUT);
    ev.data.u64 = static_cast<uint64_t>(&c - conns_.data());
    ::epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void Read(Conn& c) {
    char buf[16384];
    for (;;) {
      const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      MarkFailed(c, n == 0 ? "closed by the server" : std::string("recv: ") + std::strerror(errno));
      return;
    }
    size_t at = 0;
    while (c.in.size() - at >= 9) {
      const auto* h = reinterpret_cast<const uint8_t*>(c.in.data() + at);
      const size_t length = (size_t{h[0]} << 16) | (size_t{h[1]} << 8) | h[2];
      if (c.in.size() - at < 9 + length) break;
      const uint8_t type = h[3];
      const uint8_t flags = h[4];
      const uint32_t stream = Get32(c.in, at + 5) & 0x7fffffffu;
      OnFrame(c, type, flags, stream, std::string_view(c.in).substr(at + 9, length));
      at += 9 + length;
    }
    c.in.erase(0, at);
    if (c.in.empty()) c.in.shrink_to_fit();
    if (!c.out.empty()) Write(c);
  }

  void OnFrame(Conn& c, uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
    switch (type) {
      case kSettings:
        if ((flags & kAck) != 0) {
          c.settings_acked = true;
        } else {
          c.out += SettingsAckFrame();
        }
        break;
      case kPing:
        if ((flags & kAck) == 0) {
          c.out += Frame(kPing, kAck, 0, payload);
        } else if (payload.size() == 8 && c.ping_sent != 0 &&
                   ((uint64_t{Get32(payload, 0)} << 32) | Get32(payload, 4)) == c.ping_sent) {
          c.ping_acked = true;
        }
        break;
      case kHeaders:
      case kData:
        if (stream == 1 && (flags & kEndStream) != 0) {
          c.unary_done = true;
        } else if (stream > 1 && (flags & kEndStream) != 0) {
          MarkFailed(c, "a held call ended (stream " + std::to_string(stream) + ")");
        } else if (stream > 1 && type == kHeaders) {
          ++c.responses_started;
        }
        break;
      case kRstStream:
        MarkFailed(c, "RST_STREAM on stream " + std::to_string(stream) + ", code " +
                          std::to_string(payload.size() >= 4 ? Get32(payload, 0) : 0));
        break;
      case kGoaway:
        MarkFailed(c, "GOAWAY, code " +
                          std::to_string(payload.size() >= 8 ? Get32(payload, 4) : 0) + ": " +
                          std::string(payload.size() > 8 ? payload.substr(8) : ""));
        break;
      default:
        break;  // WINDOW_UPDATE and anything else need no answer
    }
  }

  static void MarkFailed(Conn& c, std::string why) {
    if (c.failed) return;
    c.failed = true;
    c.why = std::move(why);
  }

  const Flags& flags_;
  int epoll_;
  std::vector<Conn> conns_;  // reserved up front: epoll keeps indexes into it
  std::string unary_;
  std::string stream_block_;
  std::string message_;
};

int Run(const Flags& flags) {
  Driver driver(flags);
  auto sample = [&](const char* what) {
    const long rss = RssKib(flags.pid);
    if (rss < 0) std::fprintf(stderr, "cannot read the RSS of pid %d (%s)\n", flags.pid, what);
    return rss;
  };
  if (!driver.OpenIdle(1) || !driver.Settle(flags.settle_ms)) return 1;
  const long rss0 = sample("warm-up");
  if (!driver.OpenIdle(flags.conns) || !driver.Settle(flags.settle_ms)) return 1;
  const long rss1 = sample("idle");
  std::printf("idle conns=%d rss_before_kib=%ld rss_after_kib=%ld kib_per_conn=%.2f\n",
              flags.conns, rss0, rss1,
              static_cast<double>(rss1 - rss0) / static_cast<double>(flags.conns));
  std::fflush(stdout);
  const int calls = flags.inflight_conns * flags.inflight_streams;
  if (calls == 0) return 0;
  if (flags.inflight_conns > flags.conns) {
    std::fprintf(stderr, "--inflight_conns must not exceed --conns\n");
    return 2;
  }
  if (!driver.OpenHeld(flags.inflight_conns, flags.inflight_streams) ||
      !driver.Settle(flags.settle_ms)) {
    return 1;
  }
  const long rss2 = sample("in flight");
  std::printf(
      "inflight calls=%d conns=%d rss_before_kib=%ld rss_after_kib=%ld kib_per_call=%.2f "
      "responses_started=%d\n",
      calls, flags.inflight_conns, rss1, rss2,
      static_cast<double>(rss2 - rss1) / static_cast<double>(calls), driver.ResponsesStarted());
  return 0;
}

}  // namespace
}  // namespace rill::bench

int main(int argc, char** argv) {
  rill::bench::Flags flags;
  CLI::App app("conn_memory_client: server memory per idle connection and per held call");
  app.add_option("--port", flags.port, "The server's port on 127.0.0.1")->required();
  app.add_option("--pid", flags.pid, "The server's process id (its VmRSS is sampled)")
      ->required();
  app.add_option("--unary_path", flags.unary_path, "The unary method each connection calls once")
      ->required();
  app.add_option("--stream_path", flags.stream_path,
                 "The streaming method whose calls are held open")
      ->required();
  app.add_option("--conns", flags.conns, "Idle connections")->capture_default_str();
  app.add_option("--inflight_conns", flags.inflight_conns, "Connections that hold calls")
      ->capture_default_str();
  app.add_option("--inflight_streams", flags.inflight_streams, "Held calls per connection")
      ->capture_default_str();
  app.add_option("--sources", flags.sources, "Source addresses 127.0.0.1 .. 127.0.0.N")
      ->capture_default_str();
  app.add_option("--connect_batch", flags.connect_batch, "Connections set up at once")
      ->capture_default_str();
  app.add_option("--settle_ms", flags.settle_ms, "Wait before each RSS sample")
      ->capture_default_str();
  app.add_option("--timeout_s", flags.timeout_s, "Give up on a phase after this long")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return rill::bench::Run(flags);
}
