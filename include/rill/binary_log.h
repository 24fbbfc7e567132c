// rill::BinaryLog: gRPC binary logging (the grpc.binarylog.v1.GrpcLogEntry format) of the calls
// a server or channel makes, to a file, without slowing the calls down.
//
//   auto log = rill::BinaryLog::Create("/var/log/rpc.binlog", {.filter = "pkg.Svc/*{h:256;m:1024}"});
//   if (!log.ok()) return Fail(log.status());
//   builder.AddStatsHandler(*log);                  // a server
//   options.stats_handlers.push_back(*log);          // and/or a channel
//
// The file holds one GrpcLogEntry after another, each preceded by its length as a varint (the
// delimited form protobuf's writeDelimitedTo / parseDelimitedFrom use). `rill_binlog FILE`
// prints one as text.
//
// Filter (gRPC's binary logging syntax): comma-separated clauses, each
//   *                 every method           service/*         every method of a service
//   service/method    one method             -service/method   never this method
// optionally followed by limits: {h} headers only, {m} messages only, {h:N} / {m:N} at most N
// bytes of metadata / of each message, {h:N;m:M} both. Without limits everything is logged in
// full. A method's own clause wins over its service's, which wins over `*`. "" logs nothing.
// Metadata beyond the limit is dropped from the end and the entry marked truncated; a message
// beyond it is cut (the entry keeps its full length and the truncation mark).
//
// Entries are built on the call's reactor and queued to a writer thread of the log's own. The
// queue is bounded: when it is full an entry is dropped and counted (dropped()); a call never
// waits for the log. A logged message larger than 1 KiB refers to the call's pooled buffers (no
// copy) until the writer has written it; a smaller one is copied (cheaper than sharing it).
//
// Thread safety: thread-safe.
#ifndef RILL_BINARY_LOG_H_
#define RILL_BINARY_LOG_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "rill/stats.h"
#include "rill/status_or.h"

namespace rill {

// Which methods are logged, and how much of them.
class BinaryLogFilter {
 public:
  struct Limits {
    bool log = false;
    uint32_t header_bytes = 0;
    uint32_t message_bytes = 0;
  };
  static constexpr uint32_t kUnlimited = UINT32_MAX;

  // INVALID_ARGUMENT for a malformed filter (a clause twice, `-` with limits or a wildcard, ...).
  static StatusOr<BinaryLogFilter> Parse(std::string_view filter);
  // `method`: "/service/method" (or without the leading slash).
  [[nodiscard]] Limits For(std::string_view method) const;

  BinaryLogFilter();
  ~BinaryLogFilter();
  BinaryLogFilter(BinaryLogFilter&&) noexcept;
  BinaryLogFilter& operator=(BinaryLogFilter&&) noexcept;

 private:
  struct Rules;
  std::unique_ptr<Rules> rules_;
};

struct BinaryLogOptions {
  std::string filter = "*";
  // Entries waiting for the writer at most (twice this many slots are kept); more are dropped.
  size_t queue_capacity = 16384;
};

class BinaryLog final : public StatsHandler {
 public:
  // Opens (truncates) `path`. Errors: a malformed filter (INVALID_ARGUMENT), a file that cannot
  // be opened (UNAVAILABLE).
  static StatusOr<std::shared_ptr<BinaryLog>> Create(std::string_view path,
                                                     BinaryLogOptions options = {});
  // Writes what is queued and closes the file.
  ~BinaryLog() override;
  BinaryLog(const BinaryLog&) = delete;
  BinaryLog& operator=(const BinaryLog&) = delete;

  // Blocks until every entry queued before the call is in the file. Not on a reactor thread.
  void Flush();
  [[nodiscard]] uint64_t written() const noexcept;
  [[nodiscard]] uint64_t dropped() const noexcept;

  // StatsHandler.
  void* TagCall(const CallInfo& info) override;
  void HandleCall(void* tag, const CallEvent& event) override;

  struct Impl;

 private:
  explicit BinaryLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill

#endif  // RILL_BINARY_LOG_H_
