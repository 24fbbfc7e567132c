#include "src/rpc/call_stats.h"

#include <algorithm>
#include <limits>

#include "rill/compression.h"
#include "src/base/user_code.h"
#include "src/http2/http2_session.h"
#include "src/rpc/deframer.h"

namespace rill {

std::string_view CallEventTypeName(CallEventType type) {
  switch (type) {
    case CallEventType::kBegin:
      return "begin";
    case CallEventType::kOutHeaders:
      return "out_headers";
    case CallEventType::kInHeaders:
      return "in_headers";
    case CallEventType::kOutMessage:
      return "out_message";
    case CallEventType::kInMessage:
      return "in_message";
    case CallEventType::kHalfClose:
      return "half_close";
    case CallEventType::kOutTrailers:
      return "out_trailers";
    case CallEventType::kInTrailers:
      return "in_trailers";
    case CallEventType::kEnd:
      return "end";
  }
  return "unknown";
}

}  // namespace rill

namespace rill::internal {

namespace {
constexpr size_t kPrefixSize = 5;
}  // namespace

void CallStats::Start(const StatsHandlers* handlers, bool client, BufferPool& pool) {
  queued_ = 0;
  for (size_t i = 0; i < payload_count_; ++i) payloads_[i].Free();
  payload_count_ = 0;
  batch_inside_ = -1;
  held_.clear();
  held_payloads_.clear();
  handlers_ = handlers != nullptr && !handlers->empty() ? handlers : nullptr;
  pool_ = &pool;
  client_ = client;
  constexpr CallEventMask kAlways =
      CallEventBit(CallEventType::kBegin) | CallEventBit(CallEventType::kEnd);
  wanted_ = kAlways;
  if (handlers_ != nullptr) {
    const size_t count = handlers_->size();
    if (masks_.size() != count) {  // sized once for the handlers a pooled object serves
      masks_.resize(count);
      tags_.resize(count);
    }
    for (size_t i = 0; i < count; ++i) {
      CallEventMask mask = kAllCallEvents;
      try {
        mask = (*handlers_)[i]->call_events() | kAlways;
      } catch (...) {
        LogUserException("a stats handler's call_events");
      }
      masks_[i] = mask;
      wanted_ |= mask;
      tags_[i] = nullptr;
    }
  }
  began_ = false;
  ended_ = false;
  hold_messages_ = client;
  method_ = authority_ = peer_ = {};
  timeout_ = std::chrono::nanoseconds(-1);
  messages_sent_ = messages_received_ = 0;
  sent_bytes_ = received_bytes_ = 0;
}

void CallStats::GrowQueue() { queue_.resize(std::max<size_t>(8, queue_.size() * 2)); }

void CallStats::GrowPayloads() {
  // Moved, not copied: the bodies of queued messages stay where their records point.
  payloads_.resize(std::max<size_t>(4, payloads_.size() * 2));
}

bool CallStats::CommitOutsideBatch() {
  if (InsideHttp2Session()) return true;
  Flush();
  return false;
}

void CallStats::Hold(const Record& record) { held_.push_back(record); }

BufferSlice& CallStats::AddBody(Record& record) {
  if (hold_messages_ && record.type == CallEventType::kOutMessage) {
    record.payload = static_cast<uint32_t>(held_payloads_.size());
    return held_payloads_.emplace_back();
  }
  record.payload = static_cast<uint32_t>(payload_count_);
  if (payload_count_ == payloads_.size()) [[unlikely]] {
    GrowPayloads();
  }
  return payloads_[payload_count_++];
}

CallStats::Batch::~Batch() {
  if (--stats_.batch_depth_ == 0 && stats_.has_queued() && !InsideHttp2Session()) {
    stats_.Flush();
  }
}

void CallStats::Describe(std::string_view method, std::string_view authority,
                         std::chrono::nanoseconds timeout, bool borrow) {
  if (borrow) {
    method_ = method;
    authority_ = authority;
  } else {
    method_copy_.assign(method);
    authority_copy_.assign(authority);
    method_ = method_copy_;
    authority_ = authority_copy_;
  }
  timeout_ = timeout;
}

bool CallStats::HalfClose() {
  if (ended_ || (!began_ && !client_) || !Wants(CallEventType::kHalfClose)) return false;
  return Queue(Record{.type = CallEventType::kHalfClose});
}

bool CallStats::Begin(std::string_view peer, bool borrow) {
  if (began_ || ended_) return false;
  began_ = true;
  if (borrow) {
    peer_ = peer;
  } else {
    peer_copy_.assign(peer);
    peer_ = peer_copy_;
  }
  return Queue(Record{.type = CallEventType::kBegin});
}

bool CallStats::Headers(bool out, const Metadata* metadata, std::string_view peer) {
  if (ended_) return false;
  if (!peer.empty()) [[unlikely]] {
    peer_copy_.assign(peer);
    peer_ = peer_copy_;
  }
  const CallEventType type = out ? CallEventType::kOutHeaders : CallEventType::kInHeaders;
  if (Wants(type)) Push(Record{.type = type, .metadata = metadata});
  if (client_ && out && hold_messages_) [[unlikely]] {
    ReleaseHeld();
  }
  if (queued_ == 0) return false;  // nothing recorded (no handler reads the event)
  return Commit();
}

void CallStats::ReleaseHeld() {
  hold_messages_ = false;
  const auto base = static_cast<uint32_t>(payload_count_);
  for (Record& held : held_) {
    if (held.type == CallEventType::kOutMessage) held.payload += base;
    Push(held);
  }
  for (BufferSlice& body : held_payloads_) {
    if (payload_count_ == payloads_.size()) GrowPayloads();
    payloads_[payload_count_++] = std::move(body);
  }
  held_.clear();
  held_payloads_.clear();
}

bool CallStats::OutMessage(const BufferSlice& framed, Compressor* compressor) {
  if (ended_ || framed.size() < kPrefixSize) return false;
  const size_t body_size = framed.size() - kPrefixSize;
  if (!Wants(CallEventType::kOutMessage)) {
    ++messages_sent_;
    sent_bytes_ += body_size;
    return false;
  }
  Record record{.type = CallEventType::kOutMessage,
                .sequence = messages_sent_++,
                .wire_size = framed.size(),
                .body_size = body_size};
  sent_bytes_ += body_size;
  // The body is a reference to the framed bytes past the prefix (usually in the same buffer):
  // no bytes copied, nothing cut from the caller's slice.
  BufferSlice& body = AddBody(record);
  const Buffer& first = framed.buffer(0);
  if (framed.buffer_count() == 1) {
    record.compressed = first.data()[0] != std::byte{0};
    body.Append(first.Slice(kPrefixSize, first.size()));
  } else {
    size_t skip = kPrefixSize;
    bool flag_read = false;
    for (const Buffer& buffer : framed) {
      if (buffer.empty()) continue;
      if (!flag_read) {
        record.compressed = buffer.data()[0] != std::byte{0};
        flag_read = true;
      }
      if (skip >= buffer.size()) {
        skip -= buffer.size();
        continue;
      }
      body.Append(skip > 0 ? buffer.Slice(skip, buffer.size()) : buffer.Ref());
      skip = 0;
    }
  }
  if (record.compressed) record.compressor = compressor;
  return Queue(record);
}

bool CallStats::InMessage(const Message& message, Compressor* compressor) {
  if (ended_) return false;
  const size_t body_size = message.body.size();
  received_bytes_ += body_size;
  if (!Wants(CallEventType::kInMessage)) {
    ++messages_received_;
    return false;
  }
  Record record{.type = CallEventType::kInMessage,
                .compressed = message.compressed,
                .sequence = messages_received_++,
                .wire_size = body_size + kPrefixSize,
                .body_size = body_size,
                .compressor = message.compressed ? compressor : nullptr};
  BufferSlice& body = AddBody(record);
  for (const Buffer& buffer : message.body) body.Append(buffer.Ref());
  return Queue(record);
}

namespace {
// Copies a status; an OK one (almost every call's) without the out-of-line copy.
void SetStatus(Status& to, const Status& from) {
  if (from.ok()) {
    to = Status();
  } else {
    to = from;
  }
}
}  // namespace

bool CallStats::Trailers(bool out, const Status& status, const Metadata* metadata,
                         bool trailers_only) {
  const CallEventType type = out ? CallEventType::kOutTrailers : CallEventType::kInTrailers;
  if (ended_ || !Wants(type)) return false;
  SetStatus(trailers_status_, status);
  return Queue(Record{.type = type, .trailers_only = trailers_only, .metadata = metadata});
}

bool CallStats::End(const Status& status) {
  if (ended_) return false;
  ended_ = true;
  held_.clear();  // never sent: the call ended before it had a stream
  held_payloads_.clear();
  if (!began_) {
    queued_ = 0;  // not a call (a stream that ended inside its request headers)
    for (size_t i = 0; i < payload_count_; ++i) payloads_[i].Free();
    payload_count_ = 0;
    return false;
  }
  SetStatus(end_status_, status);
  return Queue(Record{.type = CallEventType::kEnd});
}

void CallStats::Flush() {
  if (handlers_ != nullptr) {
    CallEvent& event = event_;
    event.client = client_;
    event.time = CallEvent::Clock::now();  // one reading for the events delivered together
    event.method = method_;
    event.authority = authority_;
    const size_t count = handlers_->size();
    const std::shared_ptr<StatsHandler>* handlers = handlers_->data();
    const CallEventMask* masks = masks_.data();
    void* const* tags = tags_.data();
    // Each case sets the fields its event carries, runs the handlers and puts those fields
    // back to their defaults, so the other fields always read as defaults.
    const auto deliver = [&](CallEventType type) __attribute__((always_inline)) {
      const CallEventMask bit = CallEventBit(type);
      for (size_t i = 0; i < count; ++i) {
        if ((masks[i] & bit) == 0) continue;
        try {
          handlers[i]->HandleCall(tags[i], event);
        } catch (...) {
          LogUserException("a stats handler");
        }
      }
    };
    // A handler never runs inside a session step, so nothing is recorded while this loops; the
    // index still tolerates growth.
    for (size_t r = 0; r < queued_; ++r) {
      const Record& record = queue_[r];
      const CallEventType type = record.type;
      event.type = type;
      switch (type) {
        case CallEventType::kBegin:
          begin_time_ = event.time;
          TagCall();
          event.peer = peer_;
          event.timeout = timeout_;
          deliver(type);
          event.peer = {};
          event.timeout = std::chrono::nanoseconds(-1);
          break;
        case CallEventType::kOutHeaders:
        case CallEventType::kInHeaders:
          // The request headers (client out, server in) carry the peer and the timeout.
          if ((type == CallEventType::kOutHeaders) == client_) {
            event.peer = peer_;
            event.timeout = timeout_;
          }
          event.metadata = record.metadata;
          deliver(type);
          event.peer = {};
          event.timeout = std::chrono::nanoseconds(-1);
          event.metadata = nullptr;
          break;
        case CallEventType::kOutMessage:
        case CallEventType::kInMessage: {
          BufferSlice& payload = payloads_[record.payload];
          event.sequence = record.sequence;
          event.compressed = record.compressed;
          event.wire_size = record.wire_size;
          event.compressed_size = record.body_size;
          event.uncompressed_size = record.body_size;
          event.payload = &payload;
          if (record.compressor != nullptr) [[unlikely]] {
            event.payload = Decompress(record, payload);
            event.uncompressed_size = payload.size();
          }
          deliver(type);
          event.sequence = 0;
          event.compressed = false;
          event.wire_size = event.compressed_size = event.uncompressed_size = 0;
          event.payload = nullptr;
          // Back to the pool unless a handler kept a reference.
          payload.Free();
          break;
        }
        case CallEventType::kOutTrailers:
        case CallEventType::kInTrailers:
          event.status = &trailers_status_;
          event.metadata = record.metadata;
          event.trailers_only = record.trailers_only;
          deliver(type);
          event.status = nullptr;
          event.metadata = nullptr;
          event.trailers_only = false;
          break;
        case CallEventType::kEnd:
          event.begin_time = begin_time_;
          event.messages_sent = messages_sent_;
          event.messages_received = messages_received_;
          event.sent_compressed_bytes = sent_bytes_;
          event.received_compressed_bytes = received_bytes_;
          event.status = &end_status_;
          deliver(type);
          event.status = nullptr;
          event.begin_time = {};
          event.messages_sent = event.messages_received = 0;
          event.sent_compressed_bytes = event.received_compressed_bytes = 0;
          break;
        case CallEventType::kHalfClose:
          deliver(type);
          break;
      }
    }
  }
  queued_ = 0;
  // Delivered bodies were freed above; without handlers they are freed here.
  for (size_t i = 0; i < payload_count_; ++i) payloads_[i].Free();
  payload_count_ = 0;
  batch_inside_ = -1;
}

const BufferSlice* CallStats::Decompress(const Record& record, BufferSlice& payload) {
  BufferSlice plain;
  Status status =
      record.compressor->Decompress(payload, *pool_, std::numeric_limits<uint32_t>::max(), plain);
  payload = std::move(plain);
  if (!status.ok()) {
    payload.Free();
    return nullptr;
  }
  return &payload;
}

void CallStats::TagCall() {
  CallInfo info{.client = client_, .method = method_, .authority = authority_};
  for (size_t i = 0; i < handlers_->size(); ++i) {
    try {
      tags_[i] = (*handlers_)[i]->TagCall(info);
    } catch (...) {
      LogUserException("a stats handler's TagCall");
    }
  }
}

void ConnectionStats::Begin(const StatsHandlers* handlers, bool client, std::string_view peer) {
  handlers_ = handlers != nullptr && !handlers->empty() ? handlers : nullptr;
  if (handlers_ == nullptr) return;
  client_ = client;
  peer_.assign(peer);
  tags_.assign(handlers_->size(), nullptr);
  ConnectionInfo info{.client = client, .peer = peer_};
  ConnectionEvent event{.type = ConnectionEventType::kBegin,
                        .client = client,
                        .time = std::chrono::steady_clock::now(),
                        .peer = peer_};
  for (size_t i = 0; i < handlers_->size(); ++i) {
    try {
      tags_[i] = (*handlers_)[i]->TagConnection(info);
      (*handlers_)[i]->HandleConnection(tags_[i], event);
    } catch (...) {
      LogUserException("a stats handler's connection hook");
    }
  }
}

void ConnectionStats::End() {
  if (handlers_ == nullptr) return;
  ConnectionEvent event{.type = ConnectionEventType::kEnd,
                        .client = client_,
                        .time = std::chrono::steady_clock::now(),
                        .peer = peer_};
  for (size_t i = 0; i < handlers_->size(); ++i) {
    try {
      (*handlers_)[i]->HandleConnection(tags_[i], event);
    } catch (...) {
      LogUserException("a stats handler's connection hook");
    }
  }
  handlers_ = nullptr;
}

}  // namespace rill::internal
