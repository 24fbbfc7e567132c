// Whether the last message a libgrpc++ call received was compressed on the wire.
//
// The compression tests of the interop suite assert the compressed-flag byte of individual
// messages. libgrpc++ has no public API for it; libgrpc exports two test-only functions
// (declared in its internal `call_test_only.h`, with C++ linkage) that report the flags of
// the last message received on a call. This header declares them and wraps them.
//
//   stream->Read(&response);
//   bool compressed = peer::LastMessageWasCompressed(context.c_call());
#ifndef RILL_TESTS_PEERS_CPP_MESSAGE_FLAGS_H_
#define RILL_TESTS_PEERS_CPP_MESSAGE_FLAGS_H_

#include <grpc/grpc.h>

#include <cstdint>

// Exported by libgrpc 1.51 (symbols _Z37grpc_call_test_only_get_message_flagsP9grpc_call and
// _Z45grpc_call_test_only_get_compression_algorithmP9grpc_call).
uint32_t grpc_call_test_only_get_message_flags(grpc_call* call);
grpc_compression_algorithm grpc_call_test_only_get_compression_algorithm(grpc_call* call);

namespace peer {

// Bits of libgrpc's internal message flags. The transport marks a message that arrived with
// the compressed flag with kInternalCompress; the decompression filter, once it has inflated
// the message, replaces that bit with kInternalWasCompressed.
inline constexpr uint32_t kInternalCompress = 0x80000000u;
inline constexpr uint32_t kInternalWasCompressed = 0x40000000u;

// Thread-compatible with the call: use it from the thread that completed the read.
inline bool LastMessageWasCompressed(grpc_call* call) {
  return (grpc_call_test_only_get_message_flags(call) &
          (kInternalCompress | kInternalWasCompressed)) != 0;
}

}  // namespace peer

#endif  // RILL_TESTS_PEERS_CPP_MESSAGE_FLAGS_H_
