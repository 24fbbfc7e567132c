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
  began_ = false;
  ended_ = false;
  hold_messages_ = client;
  tags_.clear();
  timeout_ = std::chrono::nanoseconds(-1);
  messages_sent_ = messages_received_ = 0;
  sent_bytes_ = received_bytes_ = 0;
}

CallStats::Pending& CallStats::Add(CallEventType type) {
  Pending& pending = queue_.emplace_back();
  pending.event.type = type;
  pending.event.client = client_;
  return pending;
}

bool CallStats::Commit() {
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
                         std::chrono::nanoseconds timeout) {
  method_.assign(method);
  authority_.assign(authority);
  timeout_ = timeout;
}

CallStats::Pending& CallStats::AddOrHold(CallEventType type) {
  if (!hold_messages_) return Add(type);
  Pending& pending = held_.emplace_back();
  pending.event.type = type;
  pending.event.client = client_;
  return pending;
}

bool CallStats::HalfClose() {
  if (ended_ || (!began_ && !client_)) return false;
  AddOrHold(CallEventType::kHalfClose);
  if (hold_messages_) return false;
  return Commit();
}

bool CallStats::Begin(std::string_view peer) {
  if (began_ || ended_) return false;
  began_ = true;
  peer_.assign(peer);
  Add(CallEventType::kBegin);
  return Commit();
}

bool CallStats::Headers(bool out, const Metadata* metadata, std::string_view peer) {
  if (ended_) return false;
  if (!peer.empty()) peer_.assign(peer);
  Pending& pending = Add(out ? CallEventType::kOutHeaders : CallEventType::kInHeaders);
  pending.event.metadata = metadata;
  if (client_ && out && hold_messages_) {
    hold_messages_ = false;
    for (Pending& held : held_) queue_.push_back(std::move(held));
    held_.clear();
  }
  return Commit();
}

bool CallStats::OutMessage(const BufferSlice& framed, Compressor* compressor) {
  if (ended_ || framed.size() < kPrefixSize) return false;
  BufferSlice body = framed.Ref();
  std::byte flag{0};
  body.CopyTo(std::span(&flag, 1));
  body.TakeFront(kPrefixSize).Free();
  Pending* pending = &AddOrHold(CallEventType::kOutMessage);
  CallEvent& event = pending->event;
  event.sequence = messages_sent_++;
  event.compressed = flag != std::byte{0};
  event.wire_size = framed.size();
  event.compressed_size = body.size();
  event.uncompressed_size = body.size();
  sent_bytes_ += body.size();
  pending->compressor = event.compressed ? compressor : nullptr;
  pending->payload = std::move(body);
  if (hold_messages_) return false;
  return Commit();
}

bool CallStats::InMessage(const Message& message, Compressor* compressor) {
  if (ended_) return false;
  Pending& pending = Add(CallEventType::kInMessage);
  CallEvent& event = pending.event;
  event.sequence = messages_received_++;
  event.compressed = message.compressed;
  event.wire_size = message.body.size() + kPrefixSize;
  event.compressed_size = message.body.size();
  event.uncompressed_size = message.body.size();
  received_bytes_ += message.body.size();
  pending.compressor = message.compressed ? compressor : nullptr;
  pending.payload = message.body.Ref();
  return Commit();
}

bool CallStats::Trailers(bool out, const Status& status, const Metadata* metadata,
                         bool trailers_only) {
  if (ended_) return false;
  Pending& pending = Add(out ? CallEventType::kOutTrailers : CallEventType::kInTrailers);
  pending.status = status;
  pending.event.metadata = metadata;
  pending.event.trailers_only = trailers_only;
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
  CallEvent& event = pending.event;
  event.messages_sent = messages_sent_;
  event.messages_received = messages_received_;
  event.sent_compressed_bytes = sent_bytes_;
  event.received_compressed_bytes = received_bytes_;
  return Commit();
}

void CallStats::Flush() {
  if (handlers_ == nullptr) {
    queue_.clear();
    return;
  }
  // A handler never runs inside a session step, so nothing is recorded while this loops; the
  // index still tolerates growth.
  const CallEvent::Clock::time_point now = CallEvent::Clock::now();
  for (size_t i = 0; i < queue_.size(); ++i) {
    queue_[i].event.time = now;
    Deliver(queue_[i]);
  }
  queue_.clear();
}

void CallStats::Deliver(Pending& pending) {
  CallEvent& event = pending.event;
  if (event.type == CallEventType::kEnd) event.begin_time = begin_time_;
  if (event.type == CallEventType::kBegin) {
    begin_time_ = event.time;
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
  event.method = method_;
  event.authority = authority_;
  if (event.type == CallEventType::kBegin ||
      (client_ == (event.type == CallEventType::kOutHeaders) &&
       (event.type == CallEventType::kOutHeaders || event.type == CallEventType::kInHeaders))) {
    event.peer = peer_;
    event.timeout = timeout_;
  }
  if (event.type == CallEventType::kOutMessage || event.type == CallEventType::kInMessage) {
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
  }
  if (event.type == CallEventType::kOutTrailers || event.type == CallEventType::kInTrailers ||
      event.type == CallEventType::kEnd) {
    event.status = &pending.status;
  }
  for (size_t i = 0; i < handlers_->size(); ++i) {
    try {
      (*handlers_)[i]->HandleCall(i < tags_.size() ? tags_[i] : nullptr, event);
    } catch (...) {
      LogUserException("a stats handler");
    }
  }
  pending.payload.Free();  // the handlers hold their own references if they kept it
  pending.status = Status();
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
