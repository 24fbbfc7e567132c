#include "rill/binary_log.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "grpc/binlog/v1/binarylog.pb.h"
#include "rill/mem/buffer.h"
#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"
#include "rill/metadata.h"
#include "rill/status.h"
#include "src/base/varint.h"

namespace rill {

namespace {

namespace pb = grpc::binarylog::v1;
using internal::VarintSize;
using internal::WriteVarint;
using Limits = BinaryLogFilter::Limits;

Status BadFilter(std::string_view clause, std::string_view why) {
  return Status(StatusCode::kInvalidArgument,
                "binary log filter clause \"" + std::string(clause) + "\": " + std::string(why));
}

// "h", "h:N", "m", "m:N".
bool ParseLimit(std::string_view part, char which, uint32_t* out) {
  if (part.empty() || part[0] != which) return false;
  if (part.size() == 1) {
    *out = BinaryLogFilter::kUnlimited;
    return true;
  }
  if (part[1] != ':' || part.size() == 2) return false;
  const char* begin = part.data() + 2;
  const char* end = part.data() + part.size();
  const auto [ptr, ec] = std::from_chars(begin, end, *out);
  return ec == std::errc() && ptr == end;
}

// "" (everything in full), "{h...}", "{m...}", "{h...;m...}".
bool ParseLimits(std::string_view options, Limits* limits) {
  limits->log = true;
  if (options.empty()) {
    limits->header_bytes = limits->message_bytes = BinaryLogFilter::kUnlimited;
    return true;
  }
  if (options.size() < 3 || options.front() != '{' || options.back() != '}') return false;
  std::string_view inner = options.substr(1, options.size() - 2);
  limits->header_bytes = limits->message_bytes = 0;
  const size_t semicolon = inner.find(';');
  if (semicolon != std::string_view::npos) {
    return ParseLimit(inner.substr(0, semicolon), 'h', &limits->header_bytes) &&
           ParseLimit(inner.substr(semicolon + 1), 'm', &limits->message_bytes);
  }
  return ParseLimit(inner, 'h', &limits->header_bytes) ||
         ParseLimit(inner, 'm', &limits->message_bytes);
}

// Keys never logged (transport and gRPC-reserved headers), as the spec lists them.
bool OmittedKey(std::string_view key) {
  if (key.starts_with("grpc-")) return key != "grpc-trace-bin";
  return key == "user-agent" || key == "te" || key == "content-type" || key == ":path" ||
         key == ":authority" || key == "lb-token" || key == "content-encoding";
}

void SetPeer(std::string_view peer, pb::Address* address) {
  address->Clear();
  auto split_port = [&](std::string_view host_port, bool bracketed) {
    const size_t colon = host_port.rfind(':');
    std::string_view host = host_port.substr(0, colon);
    if (bracketed && host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    address->mutable_address()->assign(host);
    uint32_t port = 0;
    if (colon != std::string_view::npos) {
      std::string_view digits = host_port.substr(colon + 1);
      std::from_chars(digits.data(), digits.data() + digits.size(), port);
    }
    address->set_ip_port(port);
  };
  if (peer.starts_with("ipv4:")) {
    address->set_type(pb::Address::TYPE_IPV4);
    split_port(peer.substr(5), false);
  } else if (peer.starts_with("ipv6:")) {
    address->set_type(pb::Address::TYPE_IPV6);
    split_port(peer.substr(5), true);
  } else if (peer.starts_with("unix:")) {
    address->set_type(pb::Address::TYPE_UNIX);
    address->mutable_address()->assign(peer.substr(5));
  } else {
    address->set_type(pb::Address::TYPE_UNKNOWN);
  }
}

// Copies `metadata` into `out` (omitting reserved keys), keeping entries in order while they fit
// in `limit` bytes (key + value; grpc-trace-bin is kept and not counted). True when some were
// left out.
bool SetMetadata(const Metadata* metadata, uint32_t limit, pb::Metadata* out) {
  out->Clear();
  if (metadata == nullptr) return false;
  uint64_t budget = limit;
  bool truncated = false;
  for (const auto& [key, value] : *metadata) {
    if (OmittedKey(key)) continue;
    if (key != "grpc-trace-bin") {
      const uint64_t size = key.size() + value.size();
      if (truncated || (limit != BinaryLogFilter::kUnlimited && size > budget)) {
        truncated = true;
        continue;
      }
      if (limit != BinaryLogFilter::kUnlimited) budget -= size;
    }
    pb::MetadataEntry* entry = out->add_entry();
    entry->mutable_key()->assign(key);
    entry->mutable_value()->assign(value);
  }
  return truncated;
}

// One call's logging state: the handler's tag. Recycled per thread (a call's events all run on
// its reactor), so steady-state calls allocate none.
struct CallLog {
  uint64_t id = 0;
  uint64_t sequence = 0;
  Limits limits;
  bool client = false;
  bool trailer_logged = false;
};

struct CallLogFreeList {
  std::vector<CallLog*> logs;
  ~CallLogFreeList() {
    for (CallLog* log : logs) delete log;
  }
};
thread_local CallLogFreeList t_free_call_logs;

// Entries reused per thread, one per (event type, with peer): switching a oneof or clearing a
// sub-message frees it, so each shape keeps its own.
struct EntryCache {
  pb::GrpcLogEntry entries[8][2];
};
thread_local std::unique_ptr<EntryCache> t_entry_cache;

pb::GrpcLogEntry& CachedEntry(pb::GrpcLogEntry::EventType type, bool with_peer) {
  if (t_entry_cache == nullptr) t_entry_cache = std::make_unique<EntryCache>();
  return t_entry_cache->entries[type][with_peer ? 1 : 0];
}

}  // namespace

struct BinaryLogFilter::Rules {
  bool has_global = false;
  Limits global;
  std::map<std::string, Limits, std::less<>> services;
  std::map<std::string, Limits, std::less<>> methods;
  std::set<std::string, std::less<>> blocked;
};

BinaryLogFilter::BinaryLogFilter() : rules_(std::make_unique<Rules>()) {}
BinaryLogFilter::~BinaryLogFilter() = default;
BinaryLogFilter::BinaryLogFilter(BinaryLogFilter&&) noexcept = default;
BinaryLogFilter& BinaryLogFilter::operator=(BinaryLogFilter&&) noexcept = default;

StatusOr<BinaryLogFilter> BinaryLogFilter::Parse(std::string_view filter) {
  BinaryLogFilter result;
  Rules& rules = *result.rules_;
  while (!filter.empty()) {
    const size_t comma = filter.find(',');
    const std::string_view clause = filter.substr(0, comma);
    filter = comma == std::string_view::npos ? std::string_view() : filter.substr(comma + 1);
    if (clause.empty()) return BadFilter(clause, "empty");
    if (clause[0] == '-') {
      const std::string_view name = clause.substr(1);
      const size_t slash = name.find('/');
      if (name.find_first_of("{*") != std::string_view::npos || slash == std::string_view::npos ||
          slash == 0 || slash + 1 == name.size()) {
        return BadFilter(clause, "an exclusion names one method, without limits");
      }
      if (!rules.blocked.emplace(name).second || rules.methods.contains(name)) {
        return BadFilter(clause, "the method is named twice");
      }
      continue;
    }
    const size_t brace = clause.find('{');
    const std::string_view name = clause.substr(0, brace);
    Limits limits;
    if (!ParseLimits(brace == std::string_view::npos ? "" : clause.substr(brace), &limits)) {
      return BadFilter(clause, "limits must read {h}, {m}, {h:N}, {m:N} or {h:N;m:M}");
    }
    if (name == "*") {
      if (rules.has_global) return BadFilter(clause, "`*` appears twice");
      rules.has_global = true;
      rules.global = limits;
      continue;
    }
    const size_t slash = name.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == name.size()) {
      return BadFilter(clause, "expected service/method, service/* or *");
    }
    const std::string_view method = name.substr(slash + 1);
    if (method == "*") {
      if (!rules.services.emplace(std::string(name.substr(0, slash)), limits).second) {
        return BadFilter(clause, "the service is named twice");
      }
    } else if (method.find('*') != std::string_view::npos) {
      return BadFilter(clause, "a method name has no wildcards");
    } else if (rules.blocked.contains(name) ||
               !rules.methods.emplace(std::string(name), limits).second) {
      return BadFilter(clause, "the method is named twice");
    }
  }
  return result;
}

BinaryLogFilter::Limits BinaryLogFilter::For(std::string_view method) const {
  if (method.starts_with('/')) method.remove_prefix(1);
  if (rules_->blocked.contains(method)) return Limits();
  if (auto it = rules_->methods.find(method); it != rules_->methods.end()) return it->second;
  const size_t slash = method.find('/');
  if (slash != std::string_view::npos) {
    if (auto it = rules_->services.find(method.substr(0, slash)); it != rules_->services.end()) {
      return it->second;
    }
  }
  return rules_->has_global ? rules_->global : Limits();
}

struct BinaryLog::Impl {
  // One queued entry. Slots are reused: `head` keeps its capacity, so a steady stream of
  // entries allocates nothing.
  struct Slot {
    std::string head;     // length prefix and the entry up to (or with) its message data
    BufferSlice payload;  // message data too large to copy: views of the call's buffers
  };
  // Message data up to this size is copied into the head: referencing tiny buffers costs more
  // than copying them, and would hand the call's small blocks to the writer thread.
  static constexpr size_t kCopyMax = kSmallBufferMax;

  BinaryLogFilter filter;
  int fd = -1;
  size_t capacity = 0;
  std::atomic<uint64_t> next_call_id{1};

  std::mutex mu;
  std::condition_variable wake;     // the writer: entries, or stop
  std::condition_variable written;  // Flush(): the writer wrote a batch
  // Producers fill `filling` (slots [0, filled)); the writer swaps it with `writing`.
  std::vector<Slot> filling;
  size_t filled = 0;
  uint64_t accepted = 0;  // entries queued so far
  uint64_t done = 0;      // entries written (or failed) so far
  bool stopping = false;
  std::atomic<uint64_t> written_count{0};
  std::atomic<uint64_t> dropped_count{0};
  std::thread writer;

  void WriterLoop() {
    std::vector<Slot> writing(capacity);
    std::vector<iovec> iov;
    for (;;) {
      size_t n;
      {
        std::unique_lock lock(mu);
        wake.wait(lock, [&] { return filled > 0 || stopping; });
        if (filled == 0) return;
        std::swap(filling, writing);
        n = std::exchange(filled, 0);
      }
      for (size_t i = 0; i < n; ++i) {
        const Slot& slot = writing[i];
        iov.push_back({const_cast<char*>(slot.head.data()), slot.head.size()});
        for (const Buffer& piece : slot.payload) iov.push_back(piece.AsIovec());
        if (iov.size() >= IOV_MAX - BufferSlice::kInlineBuffers * 4) {
          WriteAll(iov);
          iov.clear();
        }
      }
      WriteAll(iov);
      iov.clear();
      for (size_t i = 0; i < n; ++i) writing[i].payload.Free();  // back to their pools
      written_count.fetch_add(n, std::memory_order_relaxed);
      {
        std::lock_guard lock(mu);
        done += n;
      }
      written.notify_all();
    }
  }

  void WriteAll(std::vector<iovec>& iov) {
    size_t first = 0;
    while (first < iov.size()) {
      const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
      const ssize_t n = ::writev(fd, iov.data() + first, count);
      if (n < 0) {
        if (errno == EINTR) continue;
        return;  // a full disk loses entries; the calls never notice
      }
      size_t left = static_cast<size_t>(n);
      while (first < iov.size() && left >= iov[first].iov_len) {
        left -= iov[first].iov_len;
        ++first;
      }
      if (left > 0) {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
      }
    }
  }

  // Serializes `entry` (plus, for a message, its data) into a free slot and wakes the writer;
  // with no free slot the entry is dropped and counted.
  void Log(const pb::GrpcLogEntry& entry, const CallEvent* message_event, uint32_t message_limit) {
    const size_t entry_size = entry.ByteSizeLong();
    size_t size = entry_size;
    size_t data_size = 0;
    size_t inner = 0;
    uint32_t length = 0;
    if (message_event != nullptr) {
      length = static_cast<uint32_t>(message_event->uncompressed_size);
      const size_t available =
          message_event->payload != nullptr ? message_event->payload->size() : 0;
      data_size = std::min<size_t>(available, message_limit);
      if (length != 0) inner += 1 + VarintSize(length);
      if (data_size != 0) inner += 1 + VarintSize(data_size) + data_size;
      size += 1 + VarintSize(inner) + inner;
    }
    const bool copy_data = data_size <= kCopyMax;
    const size_t head_size = VarintSize(size) + size - (copy_data ? 0 : data_size);
    bool wake_writer = false;
    {
      std::lock_guard lock(mu);
      if (filled == filling.size()) {
        dropped_count.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      Slot& slot = filling[filled];
      slot.head.resize(head_size);
      auto* out = reinterpret_cast<std::byte*>(slot.head.data());
      out = WriteVarint(size, out);
      out = reinterpret_cast<std::byte*>(
          entry.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out)));
      if (message_event != nullptr) {
        *out++ = std::byte{0x42};  // field 8 (message), length-delimited
        out = WriteVarint(inner, out);
        if (length != 0) {
          *out++ = std::byte{0x08};  // field 1 (length), varint
          out = WriteVarint(length, out);
        }
        if (data_size != 0) {
          *out++ = std::byte{0x12};  // field 2 (data), length-delimited
          out = WriteVarint(data_size, out);
          if (copy_data) {
            message_event->payload->CopyTo(std::span(out, data_size));
          } else {
            slot.payload = message_event->payload->Ref();
            if (slot.payload.size() > data_size) slot.payload = slot.payload.TakeFront(data_size);
          }
        }
      }
      wake_writer = filled++ == 0;
      ++accepted;
    }
    if (wake_writer) wake.notify_one();
  }
};

StatusOr<std::shared_ptr<BinaryLog>> BinaryLog::Create(std::string_view path,
                                                       BinaryLogOptions options) {
  StatusOr<BinaryLogFilter> filter = BinaryLogFilter::Parse(options.filter);
  if (!filter.ok()) return filter.status();
  const std::string file(path);
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status(StatusCode::kUnavailable,
                  "cannot open binary log " + file + ": " + std::strerror(errno));
  }
  auto impl = std::make_unique<Impl>();
  impl->filter = std::move(*filter);
  impl->fd = fd;
  impl->capacity = std::max<size_t>(options.queue_capacity, 1);
  impl->filling.resize(impl->capacity);
  Impl* raw = impl.get();
  impl->writer = std::thread([raw] { raw->WriterLoop(); });
  return std::shared_ptr<BinaryLog>(new BinaryLog(std::move(impl)));
}

BinaryLog::BinaryLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

BinaryLog::~BinaryLog() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_one();
  impl_->writer.join();
  ::close(impl_->fd);
}

void BinaryLog::Flush() {
  std::unique_lock lock(impl_->mu);
  const uint64_t target = impl_->accepted;
  impl_->written.wait(lock, [&] { return impl_->done >= target; });
}

uint64_t BinaryLog::written() const noexcept {
  return impl_->written_count.load(std::memory_order_relaxed);
}

uint64_t BinaryLog::dropped() const noexcept {
  return impl_->dropped_count.load(std::memory_order_relaxed);
}

void* BinaryLog::TagCall(const CallInfo& info) {
  const Limits limits = impl_->filter.For(info.method);
  if (!limits.log) return nullptr;
  CallLog* log;
  if (!t_free_call_logs.logs.empty()) {
    log = t_free_call_logs.logs.back();
    t_free_call_logs.logs.pop_back();
  } else {
    log = new CallLog();
  }
  log->id = impl_->next_call_id.fetch_add(1, std::memory_order_relaxed);
  log->sequence = 0;
  log->limits = limits;
  log->client = info.client;
  log->trailer_logged = false;
  return log;
}

void BinaryLog::HandleCall(void* tag, const CallEvent& event) {
  auto* log = static_cast<CallLog*>(tag);
  if (log == nullptr) return;
  // The trailer ends a call's log; a server may still hear the client's half-close after it.
  if (log->trailer_logged && event.type != CallEventType::kEnd) return;
  const bool client = log->client;
  pb::GrpcLogEntry::EventType type = pb::GrpcLogEntry::EVENT_TYPE_UNKNOWN;
  bool with_peer = false;
  switch (event.type) {
    case CallEventType::kOutHeaders:
    case CallEventType::kInHeaders: {
      const bool request = client == (event.type == CallEventType::kOutHeaders);
      type = request ? pb::GrpcLogEntry::EVENT_TYPE_CLIENT_HEADER
                     : pb::GrpcLogEntry::EVENT_TYPE_SERVER_HEADER;
      // The peer is the other side: a server logs it with the client's headers, a client with
      // the server's.
      with_peer = request != client;
      break;
    }
    case CallEventType::kOutMessage:
    case CallEventType::kInMessage:
      type = client == (event.type == CallEventType::kOutMessage)
                 ? pb::GrpcLogEntry::EVENT_TYPE_CLIENT_MESSAGE
                 : pb::GrpcLogEntry::EVENT_TYPE_SERVER_MESSAGE;
      break;
    case CallEventType::kHalfClose:
      type = pb::GrpcLogEntry::EVENT_TYPE_CLIENT_HALF_CLOSE;
      break;
    case CallEventType::kOutTrailers:
    case CallEventType::kInTrailers:
      type = pb::GrpcLogEntry::EVENT_TYPE_SERVER_TRAILER;
      with_peer = client && event.trailers_only;  // a client's only look at the server
      log->trailer_logged = true;
      break;
    case CallEventType::kEnd: {
      const StatusCode code = event.status->code();
      const bool cancelled = code == StatusCode::kCancelled || code == StatusCode::kDeadlineExceeded;
      if (cancelled && !log->trailer_logged) type = pb::GrpcLogEntry::EVENT_TYPE_CANCEL;
      break;
    }
    case CallEventType::kBegin:
      break;
  }
  if (type != pb::GrpcLogEntry::EVENT_TYPE_UNKNOWN) {
    pb::GrpcLogEntry& entry = CachedEntry(type, with_peer);
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(now);
    entry.mutable_timestamp()->set_seconds(seconds.count());
    entry.mutable_timestamp()->set_nanos(static_cast<int32_t>((now - seconds).count()));
    entry.set_call_id(log->id);
    entry.set_sequence_id_within_call(++log->sequence);
    entry.set_type(type);
    entry.set_logger(client ? pb::GrpcLogEntry::LOGGER_CLIENT : pb::GrpcLogEntry::LOGGER_SERVER);
    if (with_peer) SetPeer(event.peer, entry.mutable_peer());
    bool truncated = false;
    const CallEvent* message = nullptr;
    switch (type) {
      case pb::GrpcLogEntry::EVENT_TYPE_CLIENT_HEADER: {
        pb::ClientHeader* header = entry.mutable_client_header();
        truncated = SetMetadata(event.metadata, log->limits.header_bytes, header->mutable_metadata());
        header->mutable_method_name()->assign(event.method);
        header->mutable_authority()->assign(event.authority);
        if (event.timeout.count() >= 0) {
          header->mutable_timeout()->set_seconds(event.timeout.count() / 1000000000);
          header->mutable_timeout()->set_nanos(
              static_cast<int32_t>(event.timeout.count() % 1000000000));
        } else {
          header->clear_timeout();
        }
        break;
      }
      case pb::GrpcLogEntry::EVENT_TYPE_SERVER_HEADER:
        truncated = SetMetadata(event.metadata, log->limits.header_bytes,
                                entry.mutable_server_header()->mutable_metadata());
        break;
      case pb::GrpcLogEntry::EVENT_TYPE_SERVER_TRAILER: {
        pb::Trailer* trailer = entry.mutable_trailer();
        truncated =
            SetMetadata(event.metadata, log->limits.header_bytes, trailer->mutable_metadata());
        trailer->set_status_code(static_cast<uint32_t>(event.status->code()));
        trailer->mutable_status_message()->assign(event.status->message());
        trailer->mutable_status_details()->assign(event.status->details());
        break;
      }
      case pb::GrpcLogEntry::EVENT_TYPE_CLIENT_MESSAGE:
      case pb::GrpcLogEntry::EVENT_TYPE_SERVER_MESSAGE:
        message = &event;
        truncated = event.uncompressed_size > log->limits.message_bytes;
        break;
      default:
        break;
    }
    entry.set_payload_truncated(truncated);
    impl_->Log(entry, message, log->limits.message_bytes);
  }
  if (event.type == CallEventType::kEnd) t_free_call_logs.logs.push_back(log);
}

}  // namespace rill
