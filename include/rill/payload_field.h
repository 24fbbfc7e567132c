// rill::PayloadField: a `bytes` field that travels outside the protobuf message, as pooled,
// reference-counted buffers. A received payload stays a view of the connection's receive blocks
// (or of the decompressed chunks); a sent payload is referenced, not copied. Protobuf would copy
// the bytes into a std::string on parse and out of it on serialize; for large messages those two
// copies are most of what the call costs.
//
// A field is named by its path of field numbers from the message down: every number but the
// last names a singular message field, the last a `bytes` (or `string`) field. Generated code
// has the numbers as constants:
//
//   // message SimpleRequest { Payload payload = 3; ... }   message Payload { bytes body = 2; }
//   constexpr rill::PayloadField kBody{SimpleRequest::kPayloadFieldNumber,
//                                      Payload::kBodyFieldNumber};
//
// Server: a service names the field of a method's request and response once, in its constructor
// (rill::Service::CarryPayload); handlers then read the request's payload and set the response's
// on the ServerContext (rill/server_context.h). Client: per call, on the ClientContext
// (rill/client_context.h). The bytes on the wire are the same either way: the peer sees an
// ordinary message and needs no support of its own.
//
// Receiving: the field's bytes (the last occurrence's, as protobuf keeps) become the payload and
// the message is parsed without them, so the message's field reads empty. A message without the
// field gives an empty payload. Sending: a non-empty payload is appended to the serialized
// message as that field (with the enclosing message fields' headers), so receivers take it over
// any value the message itself holds there (protobuf's rule: the last value of a singular field
// wins, message fields merge). An empty payload adds nothing.
//
// The path is not checked against the schema (the lite runtime has no descriptors): a path that
// ends at a field of another length-delimited type (a string, a message, a repeated field) takes
// those bytes out all the same.
//
// Thread safety: a value type.
#ifndef RILL_PAYLOAD_FIELD_H_
#define RILL_PAYLOAD_FIELD_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>

namespace rill {

class PayloadField {
 public:
  static constexpr size_t kMaxDepth = 8;
  // Field numbers are 1 .. 2^29 - 1.
  static constexpr uint32_t kMaxFieldNumber = (uint32_t{1} << 29) - 1;

  // No field: messages are sent and parsed whole.
  constexpr PayloadField() noexcept = default;
  // Throws std::invalid_argument for more than kMaxDepth numbers or a number out of range.
  constexpr PayloadField(std::initializer_list<uint32_t> numbers) {
    if (numbers.size() > kMaxDepth) throw std::invalid_argument("payload field path too deep");
    for (uint32_t number : numbers) {
      if (number == 0 || number > kMaxFieldNumber) {
        throw std::invalid_argument("payload field number out of range");
      }
      numbers_[depth_++] = number;
    }
  }

  [[nodiscard]] constexpr bool empty() const noexcept { return depth_ == 0; }
  [[nodiscard]] constexpr size_t depth() const noexcept { return depth_; }
  [[nodiscard]] constexpr uint32_t operator[](size_t i) const noexcept { return numbers_[i]; }

  friend constexpr bool operator==(const PayloadField&, const PayloadField&) noexcept = default;

 private:
  std::array<uint32_t, kMaxDepth> numbers_{};
  uint8_t depth_ = 0;
};

}  // namespace rill

#endif  // RILL_PAYLOAD_FIELD_H_
