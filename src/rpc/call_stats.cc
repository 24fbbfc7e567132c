#include "src/rpc/call_stats.h"

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
  queue_.clear();
  held_.clear();
  handlers_ = handlers != nullptr && !handlers->empty() ? handlers : nullptr;
  pool_ = &pool;
  client_ = client;
  constexpr CallEventMask kAlways =
      CallEventBit(CallEventType::kBegin) | CallEventBit(CallEventType::kEnd);
  wanted_ = kAlways;
  masks_.clear();
  if (handlers_ != nullptr) {
    for (const auto& handler : *handlers_) {
      CallEventMask mask = kAllCallEvents;
      try {
        mask = handler->call_events() | kAlways;
      } catch (...) {
        LogUserException("a stats handler's call_events");
      }
      masks_.push_back(mask);
      wanted_ |= mask;
    }
  }
  began_ = false;
  ended_ = false;
  hold_messages_ = client;
  tags_.clear();
  method_ = authority_ = peer_ = {};
  timeout_ = std::chrono::nanoseconds(-1);
  messages_sent_ = messages_received_ = 0;
  sent_bytes_ = received_bytes_ = 0;
}

CallStats::Pending& CallStats::Add(CallEventType type) {
  Pending& pending = queue_.emplace_back();
  pending.type = type;
  return pending;
}

bool CallStats::Commit() {
  if (queue_.empty()) return false;  // nothing recorded (no handler reads the event)
  if (InsideHttp2Session()) return true;
  if (batch_depth_ == 0) Flush();
  return false;
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

CallStats::Pending& CallStats::AddOrHold(CallEventType type) {
  if (!hold_messages_) return Add(type);
  Pending& pending = held_.emplace_back();
  pending.type = type;
  return pending;
}

bool CallStats::HalfClose() {
  if (ended_ || (!began_ && !client_) || !Wants(CallEventType::kHalfClose)) return false;
  AddOrHold(CallEventType::kHalfClose);
  if (hold_messages_) return false;
  return Commit();
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
  Add(CallEventType::kBegin);
  return Commit();
}

bool CallStats::Headers(bool out, const Metadata* metadata, std::string_view peer) {
  if (ended_) return false;
  if (!peer.empty()) {
    peer_copy_.assign(peer);
    peer_ = peer_copy_;
  }
  const CallEventType type = out ? CallEventType::kOutHeaders : CallEventType::kInHeaders;
  if (Wants(type)) Add(type).metadata = metadata;
  if (client_ && out && hold_messages_) {
    hold_messages_ = false;
    for (Pending& held : held_) queue_.push_back(std::move(held));
    held_.clear();
  }
  return Commit();
}

bool CallStats::OutMessage(const BufferSlice& framed, Compressor* compressor) {
  if (ended_ || framed.size() < kPrefixSize) return false;
  if (!Wants(CallEventType::kOutMessage)) {
    ++messages_sent_;
    sent_bytes_ += framed.size() - kPrefixSize;
    return false;
  }
  Pending& pending = AddOrHold(CallEventType::kOutMessage);
  // The body is a reference to the framed bytes past the prefix (usually in the same buffer):
  // no bytes copied, nothing cut from the caller's slice.
  size_t skip = kPrefixSize;
  bool flag_read = false;
  for (size_t i = 0; i < framed.buffer_count(); ++i) {
    const Buffer& buffer = framed.buffer(i);
    if (buffer.empty()) continue;
    if (!flag_read) {
      pending.compressed = buffer.data()[0] != std::byte{0};
      flag_read = true;
    }
    if (skip >= buffer.size()) {
      skip -= buffer.size();
      continue;
    }
    pending.payload.Append(skip > 0 ? buffer.Slice(skip, buffer.size()) : buffer.Ref());
    skip = 0;
  }
  const size_t body_size = framed.size() - kPrefixSize;
  pending.sequence = messages_sent_++;
  pending.wire_size = framed.size();
  pending.body_size = body_size;
  sent_bytes_ += body_size;
  pending.compressor = pending.compressed ? compressor : nullptr;
  if (hold_messages_) return false;
  return Commit();
}

bool CallStats::InMessage(const Message& message, Compressor* compressor) {
  if (ended_) return false;
  if (!Wants(CallEventType::kInMessage)) {
    ++messages_received_;
    received_bytes_ += message.body.size();
    return false;
  }
  Pending& pending = Add(CallEventType::kInMessage);
  const size_t body_size = message.body.size();
  pending.sequence = messages_received_++;
  pending.compressed = message.compressed;
  pending.wire_size = body_size + kPrefixSize;
  pending.body_size = body_size;
  received_bytes_ += body_size;
  pending.compressor = message.compressed ? compressor : nullptr;
  pending.payload = message.body.Ref();
  return Commit();
}

bool CallStats::Trailers(bool out, const Status& status, const Metadata* metadata,
                         bool trailers_only) {
  const CallEventType type = out ? CallEventType::kOutTrailers : CallEventType::kInTrailers;
  if (ended_ || !Wants(type)) return false;
  Pending& pending = Add(type);
  pending.status = status;
  pending.metadata = metadata;
  pending.trailers_only = trailers_only;
  return Commit();
}

bool CallStats::End(const Status& status) {
  if (ended_) return false;
  ended_ = true;
  held_.clear();  // never sent: the call ended before it had a stream
  if (!began_) {
    queue_.clear();  // not a call (a stream that ended inside its request headers)
    return false;
  }
  Pending& pending = Add(CallEventType::kEnd);
  pending.status = status;
  return Commit();
}

void CallStats::Flush() {
  if (handlers_ == nullptr) {
    queue_.clear();
    return;
  }
  // One event object for the whole flush: the call-wide fields once, the rest per event.
  CallEvent event;
  event.client = client_;
  event.time = CallEvent::Clock::now();
  event.method = method_;
  event.authority = authority_;
  // A handler never runs inside a session step, so nothing is recorded while this loops; the
  // index still tolerates growth.
  for (size_t i = 0; i < queue_.size(); ++i) Deliver(queue_[i], event);
  queue_.clear();
}

void CallStats::Deliver(Pending& pending, CallEvent& event) {
  const CallEventType type = pending.type;
  event.type = type;
  if (type == CallEventType::kBegin) [[unlikely]] {
    begin_time_ = event.time;
    TagCall();
  }
  // Request headers (client out, server in) and kBegin carry the peer and the timeout.
  const bool request_side = type == CallEventType::kBegin ||
                            (client_ ? type == CallEventType::kOutHeaders
                                     : type == CallEventType::kInHeaders);
  event.peer = request_side ? peer_ : std::string_view();
  event.timeout = request_side ? timeout_ : std::chrono::nanoseconds(-1);
  event.metadata = pending.metadata;
  event.trailers_only = pending.trailers_only;
  event.sequence = pending.sequence;
  event.compressed = pending.compressed;
  event.wire_size = pending.wire_size;
  event.compressed_size = pending.body_size;
  event.uncompressed_size = pending.body_size;
  event.payload = nullptr;
  event.status = nullptr;
  event.begin_time = {};
  event.messages_sent = event.messages_received = 0;
  event.sent_compressed_bytes = event.received_compressed_bytes = 0;
  switch (type) {
    case CallEventType::kOutMessage:
    case CallEventType::kInMessage:
      event.payload = &pending.payload;
      if (pending.compressor != nullptr) {
        BufferSlice plain;
        Status status = pending.compressor->Decompress(pending.payload, *pool_,
                                                       std::numeric_limits<uint32_t>::max(), plain);
        pending.payload = std::move(plain);
        if (!status.ok()) {
          pending.payload.Free();
          event.payload = nullptr;
        }
        event.uncompressed_size = pending.payload.size();
      }
      break;
    case CallEventType::kEnd:
      event.begin_time = begin_time_;
      event.messages_sent = messages_sent_;
      event.messages_received = messages_received_;
      event.sent_compressed_bytes = sent_bytes_;
      event.received_compressed_bytes = received_bytes_;
      event.status = &pending.status;
      break;
    case CallEventType::kOutTrailers:
    case CallEventType::kInTrailers:
      event.status = &pending.status;
      break;
    default:
      break;
  }
  const CallEventMask bit = CallEventBit(type);
  for (size_t i = 0; i < handlers_->size(); ++i) {
    if ((masks_[i] & bit) == 0) continue;
    try {
      (*handlers_)[i]->HandleCall(i < tags_.size() ? tags_[i] : nullptr, event);
    } catch (...) {
      LogUserException("a stats handler");
    }
  }
  pending.payload.Free();  // the handlers hold their own references if they kept it
}

void CallStats::TagCall() {
  CallInfo info{.client = client_, .method = method_, .authority = authority_};
  tags_.assign(handlers_->size(), nullptr);
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
