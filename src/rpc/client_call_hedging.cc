// ClientCall's hedging (gRFC A6 hedgingPolicy, unary calls): the user's call starting attempts,
// and deciding among them (see client_call.h). A translation unit of its own, so that the plain
// call's code in client_call.cc is compiled (and inlined) as it was before hedging existed.
#include "src/rpc/client_call.h"

#include <algorithm>
#include <string>

#include "src/rpc/channel_impl.h"
#include "src/rpc/client_transport.h"
#include "src/rpc/retry_throttle.h"

namespace rill::internal {

void ClientCall::InitHedge(ClientCall& parent, int index) {
  InitCommon(*parent.method_, *parent.context_, /*stream=*/false);
  stats_.Start(nullptr, /*client=*/true, channel_.pool());  // the user's call reports
  is_hedge_ = true;
  own_metadata_ = true;
  hedge_parent_ = &parent;
  response_ = parent.response_;  // only the committed attempt decodes into it
  wait_for_ready_ = parent.wait_for_ready_;
  call_credentials_.reset();  // the parent's headers carry their metadata already
  size_t limit = channel_.options().max_receive_message_size;
  if (const MethodConfig* config = channel_.MethodConfigFor(method_->path);
      config != nullptr && config->max_response_message_bytes) {
    limit = std::min(limit, *config->max_response_message_bytes);
  }
  inbound_.Reset(limit, /*credit_on_receipt=*/true);
  headers_ = parent.headers_;
  if (index > 0) headers_.AddStaticName("grpc-previous-rpc-attempts", std::to_string(index));
  // References to the one encoded request: one for a transparent retry, one to send.
  retained_request_ = parent.retained_request_.Ref();
  out_.Push(parent.retained_request_.Ref());
  out_.Finish();
}

void ClientCall::StartHedging() {
  if (completed_) return;
  SendHedge();
  const std::chrono::milliseconds delay = hedging_policy_->hedging_delay;
  if (delay.count() == 0) {
    while (CanHedge()) SendHedge();
  } else if (CanHedge()) {
    ArmHedgeTimer(delay);
  }
}

bool ClientCall::CanHedge() const {
  if (completed_ || hedge_winner_ != nullptr || hedging_stopped_ || channel_.closed() ||
      hedges_sent_ >= hedging_policy_->max_attempts) {
    return false;
  }
  // A throttled channel sends no further hedges (gRFC A6); the first attempt always goes.
  const RetryThrottle* throttle = channel_.retry_throttle();
  return hedges_sent_ == 0 || throttle == nullptr || throttle->RetryAllowed();
}

void ClientCall::SendHedge() {
  ClientCall* hedge = channel_.AcquireCall();
  hedge->InitHedge(*this, hedges_sent_);
  for (ClientCall*& slot : hedges_) {
    if (slot == nullptr) {
      slot = hedge;
      break;
    }
  }
  ++hedges_sent_;
  ++hedges_live_;
  // In the channel's hands like any call (it holds the gate, leaves the waiting queue when done),
  // but counted once, as the user's call, in channelz and stats.
  hedge->gate_holder_ = channel_.gate().Enter();
  channel_.OnCallAdmitted();
  channel_.Dispatch(hedge);  // a failure here reports from a fresh handler
}

void ClientCall::ArmHedgeTimer(std::chrono::milliseconds delay) {
  // Re-arming cancels the wait before (its handler finds a stale sequence number).
  ++hedge_timer_seq_;
  ++hedge_waits_;
  retry_pending_ = true;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait([this, seq = hedge_timer_seq_](const asio::error_code& ec) {
    retry_pending_ = --hedge_waits_ > 0;
    if (!ec && seq == hedge_timer_seq_ && !completed_) {
      if (CanHedge()) {
        SendHedge();
        if (CanHedge()) ArmHedgeTimer(hedging_policy_->hedging_delay);
      } else if (hedges_live_ == 0) {
        // Throttled meanwhile, with nothing left running: the last failure is the call's.
        EndHedging(hedge_last_status_, nullptr);
      }
    }
    MaybeRelease();
  });
}

void ClientCall::StopHedgeTimer() {
  if (hedge_waits_ == 0) return;
  ++hedge_timer_seq_;
  retry_timer_.cancel();
}

void ClientCall::OnHedgeCommitted(ClientCall* hedge) {
  if (completed_ || hedge_winner_ != nullptr) return;
  CommitHedge(hedge);
  hedge_headers_ = true;
  if (hedge->transport_ != nullptr) {
    std::lock_guard lock(context_->mu_);
    context_->peer_ = hedge->transport_->connection().peer();
  }
}

void ClientCall::CommitHedge(ClientCall* hedge) {
  hedge_winner_ = hedge;
  CommitAttempt();  // no further attempt needs the request
  StopHedgeTimer();
  // Cancelling completes each attempt, which reports from a handler of its own: the list does
  // not change under this loop.
  for (ClientCall* other : hedges_) {
    if (other != nullptr && other != hedge) {
      other->Cancel(Status(StatusCode::kCancelled, "another attempt of the hedged call won"));
    }
  }
}

void ClientCall::TakeHedgeMetadata(ClientCall* hedge) {
  std::swap(stream_initial_metadata_, hedge->stream_initial_metadata_);
  std::swap(stream_trailing_metadata_, hedge->stream_trailing_metadata_);
  hedge->stream_initial_metadata_.Clear();
  hedge->stream_trailing_metadata_.Clear();
}

void ClientCall::EndHedging(Status status, const ClientCall* hedge) {
  std::swap(context_->initial_metadata_, stream_initial_metadata_);
  std::swap(context_->trailing_metadata_, stream_trailing_metadata_);
  if (stats_.active() && hedge != nullptr && hedge->http_status_ != 0) {
    // The deciding attempt's exchange, reported once for the call (its response message is not).
    StatsQueued(stats_.Headers(/*out=*/true, &context_->metadata(), context_->peer()));
    const bool headers = hedge == hedge_winner_ && hedge_headers_;
    if (headers) StatsQueued(stats_.Headers(/*out=*/false, &context_->initial_metadata_));
    if (hedge->have_grpc_status_) {
      StatsQueued(stats_.Trailers(/*out=*/false, hedge->TrailerStatus(),
                                  &context_->trailing_metadata_, /*trailers_only=*/!headers));
    }
  }
  Complete(std::move(status));
}

void ClientCall::OnHedgeEnded(ClientCall* hedge, Status status) {
  for (ClientCall*& slot : hedges_) {
    if (slot == hedge) slot = nullptr;
  }
  --hedges_live_;
  // Over already, or a loser's report: nothing more to decide.
  if (completed_ || (hedge_winner_ != nullptr && hedge_winner_ != hedge)) {
    MaybeRelease();
    return;
  }
  const auto& codes = hedging_policy_->non_fatal_status_codes;
  const bool non_fatal = hedge_winner_ == nullptr && !status.ok() &&
                         std::find(codes.begin(), codes.end(), status.code()) != codes.end();
  TakeHedgeMetadata(hedge);
  if (!non_fatal) {
    // OK, a fatal status, or the end of the attempt whose response began: the call's outcome.
    if (hedge_winner_ == nullptr) CommitHedge(hedge);
    EndHedging(std::move(status), hedge);
    MaybeRelease();
    return;
  }
  // A non-fatal failure counts against the throttle like a failed retry; the next attempt goes
  // at once (the hedging delay starts over), or after the server's pushback, or never.
  hedge_last_status_ = std::move(status);
  if (RetryThrottle* throttle = channel_.retry_throttle();
      throttle != nullptr && !throttle->RecordFailure()) {
    hedging_stopped_ = true;
  }
  std::chrono::milliseconds delay(0);
  if (hedge->retry_pushback_ms_) {
    if (*hedge->retry_pushback_ms_ < 0) {
      hedging_stopped_ = true;
    } else {
      delay = std::chrono::milliseconds(*hedge->retry_pushback_ms_);
    }
  }
  if (CanHedge()) {
    ArmHedgeTimer(delay);
  } else {
    StopHedgeTimer();
    if (hedges_live_ == 0) EndHedging(hedge_last_status_, hedge);
  }
  MaybeRelease();
}

}  // namespace rill::internal
