// tcp_floor: what a request/response exchange costs a server over loopback TCP with nothing
// above the socket: no HTTP/2, no framing, no parsing, no copies in user space. A request is
// --req bytes, a response --resp bytes; the server reads with one large buffer per readable
// event, counts whole requests and answers all of them with one sendmsg whose iovecs all point at
// one static response buffer. Its CPU per request is the floor under any server that moves the
// same bytes with read and write system calls, whatever its protocol.
//
//   tcp_floor server --port=0 --req=1048576 --resp=1048576
//       prints "listening on PORT"; on each SIGUSR1 prints "rpcs=N cpu_us=U" (requests
//       answered and its own user + system CPU so far), so a script reads a window's difference
//   tcp_floor client --port=PORT --req=1048576 --resp=1048576 --conns=1 --inflight=4
//       --seconds=3
//       keeps --inflight requests outstanding on each of --conns connections and prints
//       "rpcs=N" (responses completed) when --seconds have passed
//
// One thread each, epoll over non-blocking sockets, as an event-driven server runs.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

[[noreturn]] void Die(const char* what) {
  std::perror(what);
  std::exit(1);
}

// Reads are at least this large, so a readable event is drained in as few calls as possible.
constexpr size_t kMinReadBuffer = 256 * 1024;
// sendmsg takes at most this many iovecs (IOV_MAX is 1024 on Linux).
constexpr size_t kMaxIovecs = 1024;

struct Conn {
  int fd = -1;
  uint64_t read_bytes = 0;     // of the current request (server) or response (client)
  uint64_t owed = 0;           // responses (server) or requests (client) not yet written
  uint64_t written = 0;        // bytes of the first owed unit already written
  bool want_write = false;     // EPOLLOUT is armed
};

// Writes as many of conn.owed units of `unit` bytes (all the same bytes) as the socket takes.
// Returns false on a closed or failed socket.
bool WriteOwed(Conn& conn, const std::vector<char>& unit, int epfd) {
  while (conn.owed > 0) {
    iovec iov[kMaxIovecs];
    size_t n = 0;
    uint64_t left = conn.owed;
    size_t offset = conn.written;
    while (left > 0 && n < kMaxIovecs) {
      iov[n].iov_base = const_cast<char*>(unit.data()) + offset;
      iov[n].iov_len = unit.size() - offset;
      offset = 0;
      ++n;
      --left;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    const ssize_t sent = sendmsg(conn.fd, &msg, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EAGAIN) break;
      return false;
    }
    uint64_t total = conn.written + static_cast<uint64_t>(sent);
    conn.owed -= total / unit.size();
    conn.written = total % unit.size();
  }
  const bool want = conn.owed > 0;
  if (want != conn.want_write) {
    epoll_event ev{};
    ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
    ev.data.ptr = &conn;
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, conn.fd, &ev) != 0) Die("epoll_ctl");
    conn.want_write = want;
  }
  return true;
}

// Reads what the socket has; returns the whole units of `unit_size` bytes completed, or -1 when
// the peer closed or the socket failed.
int64_t ReadUnits(Conn& conn, std::vector<char>& buffer, uint64_t unit_size) {
  int64_t units = 0;
  for (;;) {
    const ssize_t got = recv(conn.fd, buffer.data(), buffer.size(), 0);
    if (got == 0) return -1;
    if (got < 0) {
      if (errno == EAGAIN) return units;
      return -1;
    }
    const uint64_t total = conn.read_bytes + static_cast<uint64_t>(got);
    units += static_cast<int64_t>(total / unit_size);
    conn.read_bytes = total % unit_size;
    if (static_cast<size_t>(got) < buffer.size()) return units;
  }
}

void AddToEpoll(int epfd, Conn& conn) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &conn;
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, conn.fd, &ev) != 0) Die("epoll_ctl");
}

void SetSocketOptions(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

uint64_t CpuMicros() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto micros = [](const timeval& tv) {
    return static_cast<uint64_t>(tv.tv_sec) * 1000000 + static_cast<uint64_t>(tv.tv_usec);
  };
  return micros(usage.ru_utime) + micros(usage.ru_stime);
}

int RunServer(int port, uint64_t req, uint64_t resp) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (listener < 0) Die("socket");
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("bind");
  if (listen(listener, 1024) != 0) Die("listen");
  socklen_t len = sizeof(addr);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("listening on %d\n", ntohs(addr.sin_port));
  std::fflush(stdout);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGUSR1);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  const int sigfd = signalfd(-1, &mask, SFD_NONBLOCK);
  if (sigfd < 0) Die("signalfd");

  const int epfd = epoll_create1(0);
  Conn listener_conn{listener};
  Conn signal_conn{sigfd};
  AddToEpoll(epfd, listener_conn);
  AddToEpoll(epfd, signal_conn);

  std::vector<char> buffer(std::max<size_t>(kMinReadBuffer, req));
  const std::vector<char> response(resp, 'r');
  std::vector<std::unique_ptr<Conn>> conns;
  uint64_t rpcs = 0;
  epoll_event events[64];
  for (;;) {
    const int n = epoll_wait(epfd, events, 64, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Die("epoll_wait");
    for (int i = 0; i < n; ++i) {
      Conn& conn = *static_cast<Conn*>(events[i].data.ptr);
      if (&conn == &listener_conn) {
        for (int fd; (fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK)) >= 0;) {
          SetSocketOptions(fd);
          conns.push_back(std::make_unique<Conn>(Conn{fd}));
          AddToEpoll(epfd, *conns.back());
        }
        continue;
      }
      if (&conn == &signal_conn) {
        signalfd_siginfo info{};
        while (read(sigfd, &info, sizeof(info)) == sizeof(info)) {
          if (info.ssi_signo != SIGUSR1) return 0;
          std::printf("rpcs=%llu cpu_us=%llu\n", static_cast<unsigned long long>(rpcs),
                      static_cast<unsigned long long>(CpuMicros()));
          std::fflush(stdout);
        }
        continue;
      }
      if (conn.fd < 0) continue;
      bool ok = true;
      if ((events[i].events & EPOLLIN) != 0) {
        const int64_t units = ReadUnits(conn, buffer, req);
        if (units < 0) {
          ok = false;
        } else {
          conn.owed += static_cast<uint64_t>(units);
          rpcs += static_cast<uint64_t>(units);
        }
      }
      if (ok) ok = WriteOwed(conn, response, epfd);
      if (!ok) {
        close(conn.fd);
        conn.fd = -1;
      }
    }
  }
}

int RunClient(int port, uint64_t req, uint64_t resp, int conns_wanted, int inflight,
              double seconds) {
  const int epfd = epoll_create1(0);
  std::vector<std::unique_ptr<Conn>> conns;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  for (int i = 0; i < conns_wanted; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) Die("socket");
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("connect");
    SetSocketOptions(fd);
    const int flags = 1;
    if (ioctl(fd, FIONBIO, &flags) != 0) Die("ioctl");
    conns.push_back(std::make_unique<Conn>(Conn{fd}));
    AddToEpoll(epfd, *conns.back());
  }
  std::vector<char> buffer(std::max<size_t>(kMinReadBuffer, resp));
  const std::vector<char> request(req, 'q');
  for (auto& conn : conns) {
    conn->owed = static_cast<uint64_t>(inflight);
    if (!WriteOwed(*conn, request, epfd)) Die("write");
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t rpcs = 0;
  epoll_event events[64];
  while (std::chrono::steady_clock::now() < end) {
    const int n = epoll_wait(epfd, events, 64, 100);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Die("epoll_wait");
    for (int i = 0; i < n; ++i) {
      Conn& conn = *static_cast<Conn*>(events[i].data.ptr);
      if ((events[i].events & EPOLLIN) != 0) {
        const int64_t units = ReadUnits(conn, buffer, resp);
        if (units < 0) Die("server closed the connection");
        conn.owed += static_cast<uint64_t>(units);
        rpcs += static_cast<uint64_t>(units);
      }
      if (!WriteOwed(conn, request, epfd)) Die("write");
    }
  }
  std::printf("rpcs=%llu\n", static_cast<unsigned long long>(rpcs));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Loopback TCP request/response floor: no protocol above the socket."};
  app.require_subcommand(1);
  int port = 0;
  uint64_t req = 1;
  uint64_t resp = 1;
  int conns = 1;
  int inflight = 1;
  double seconds = 3;
  CLI::App* server = app.add_subcommand("server", "answer requests; SIGUSR1 prints counters");
  CLI::App* client = app.add_subcommand("client", "keep requests in flight for --seconds");
  for (CLI::App* sub : {server, client}) {
    sub->add_option("--port", port, "TCP port on 127.0.0.1 (server: 0 picks one)");
    sub->add_option("--req", req, "request bytes")->check(CLI::PositiveNumber);
    sub->add_option("--resp", resp, "response bytes")->check(CLI::PositiveNumber);
  }
  client->add_option("--conns", conns, "connections")->check(CLI::PositiveNumber);
  client->add_option("--inflight", inflight, "requests outstanding per connection")
      ->check(CLI::PositiveNumber);
  client->add_option("--seconds", seconds, "how long to run")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  if (server->parsed()) return RunServer(port, req, resp);
  return RunClient(port, req, resp, conns, inflight, seconds);
}
