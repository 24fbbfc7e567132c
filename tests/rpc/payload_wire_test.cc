// PayloadField at the wire level: what ExtractPayload leaves for protobuf and takes out must be
// what protobuf itself would have parsed, over every way the bytes can be split into buffers,
// with unknown fields, groups and repeated occurrences around the field; malformed messages are
// refused; the headers appended on send parse back as the field.
#include "src/rpc/payload_wire.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

#include "grpc/testing/messages.pb.h"
#include "rill/mem/buffer_pool.h"

namespace rill::internal {
namespace {

using grpc::testing::Payload;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

constexpr PayloadField kRequestBody{SimpleRequest::kPayloadFieldNumber, Payload::kBodyFieldNumber};

// `bytes` as a slice of buffers cut at `cuts` (offsets, ascending).
BufferSlice SliceOf(const std::string& bytes, const std::vector<size_t>& cuts = {}) {
  BufferSlice slice;
  size_t at = 0;
  for (size_t cut : cuts) {
    if (cut <= at || cut >= bytes.size()) continue;
    slice.Append(Buffer::Copy(std::string_view(bytes).substr(at, cut - at), DefaultBufferPool()));
    at = cut;
  }
  if (at < bytes.size()) {
    slice.Append(Buffer::Copy(std::string_view(bytes).substr(at), DefaultBufferPool()));
  }
  return slice;
}

std::string Pattern(size_t size) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i * 131 + 7);
  return s;
}

SimpleRequest FullRequest(size_t body_size) {
  SimpleRequest request;
  request.set_response_type(grpc::testing::COMPRESSABLE);
  request.set_response_size(314159);
  request.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
  request.mutable_payload()->set_body(Pattern(body_size));
  request.set_fill_username(true);
  request.mutable_response_status()->set_message("after the payload");
  return request;
}

// Extracts kRequestBody from `wire` cut at `cuts`; expects the payload to be `body` and the rest
// to parse as `expected`.
void ExpectExtracts(const std::string& wire, const std::vector<size_t>& cuts,
                    const std::string& body, const SimpleRequest& expected) {
  BufferSlice message = SliceOf(wire, cuts);
  BufferSlice payload;
  ASSERT_TRUE(ExtractPayload(kRequestBody, DefaultBufferPool(), message, payload));
  EXPECT_EQ(payload.Materialize(), body);
  SimpleRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(message.Materialize()));
  EXPECT_EQ(parsed.SerializeAsString(), expected.SerializeAsString());
}

TEST(PayloadWireTest, TakesTheBodyOutOfANestedFieldAtEveryCut) {
  const SimpleRequest request = FullRequest(300);
  const std::string wire = request.SerializeAsString();
  SimpleRequest expected = request;
  expected.mutable_payload()->clear_body();
  // Every single cut, and the message in one-byte buffers.
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    SCOPED_TRACE(cut);
    ExpectExtracts(wire, {cut}, request.payload().body(), expected);
  }
  std::vector<size_t> every;
  for (size_t i = 1; i < wire.size(); ++i) every.push_back(i);
  ExpectExtracts(wire, every, request.payload().body(), expected);
}

TEST(PayloadWireTest, PayloadIsViewsOfTheMessageBuffers) {
  const SimpleRequest request = FullRequest(64 * 1024);
  BufferSlice message = SliceOf(request.SerializeAsString(), {1000, 30000});
  std::vector<std::pair<const std::byte*, const std::byte*>> received;
  for (const Buffer& buffer : message) {
    received.emplace_back(buffer.data(), buffer.data() + buffer.size());
  }
  const uint64_t copied_before = CopiedPayloadBytes();
  BufferSlice payload;
  ASSERT_TRUE(ExtractPayload(kRequestBody, DefaultBufferPool(), message, payload));
  ASSERT_EQ(payload.size(), 64u * 1024);
  ASSERT_EQ(payload.buffer_count(), 3u);  // one view into each received buffer
  for (size_t i = 0; i < 3; ++i) {
    const Buffer& view = payload.buffer(i);
    EXPECT_GE(view.data(), received[i].first);
    EXPECT_LE(view.data() + view.size(), received[i].second);
  }
  // Only the new header of the `payload` field was written (a few bytes).
  EXPECT_LT(CopiedPayloadBytes() - copied_before, 16u);
}

TEST(PayloadWireTest, AbsentFieldLeavesTheMessageAsItIs) {
  SimpleRequest request = FullRequest(0);
  request.clear_payload();
  const std::string wire = request.SerializeAsString();
  BufferSlice message = SliceOf(wire, {3});
  const Buffer* first = message.begin();
  const std::byte* first_data = first->data();
  BufferSlice payload;
  ASSERT_TRUE(ExtractPayload(kRequestBody, DefaultBufferPool(), message, payload));
  EXPECT_TRUE(payload.empty());
  EXPECT_EQ(message.begin()->data(), first_data);
  EXPECT_EQ(message.Materialize(), wire);

  // A `payload` without a body: the field stays, the payload is empty.
  request.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
  ExpectExtracts(request.SerializeAsString(), {}, "", request);
}

TEST(PayloadWireTest, EmptyFieldPathTakesNothing) {
  const std::string wire = FullRequest(10).SerializeAsString();
  BufferSlice message = SliceOf(wire);
  BufferSlice payload;
  ASSERT_TRUE(ExtractPayload(PayloadField(), DefaultBufferPool(), message, payload));
  EXPECT_TRUE(payload.empty());
  EXPECT_EQ(message.Materialize(), wire);
}

TEST(PayloadWireTest, LastOccurrenceWinsAndMessageFieldsMerge) {
  // Two serialized messages back to back parse as their merge: the second body wins, the first
  // `payload`'s type stays unless the second sets it, and both sets of other fields merge.
  SimpleRequest first = FullRequest(50);
  SimpleRequest second;
  second.mutable_payload()->set_body(Pattern(70).substr(3));
  second.set_response_size(9);
  const std::string wire = first.SerializeAsString() + second.SerializeAsString();
  SimpleRequest merged;
  ASSERT_TRUE(merged.ParseFromString(wire));
  SimpleRequest expected = merged;
  expected.mutable_payload()->clear_body();
  ExpectExtracts(wire, {17, 90}, second.payload().body(), expected);
}

TEST(PayloadWireTest, TopLevelFieldAndDeeperPaths) {
  // Path of one: Payload.body.
  Payload payload;
  payload.set_type(grpc::testing::COMPRESSABLE);
  payload.set_body(Pattern(1000));
  BufferSlice message = SliceOf(payload.SerializeAsString(), {500});
  BufferSlice body;
  ASSERT_TRUE(ExtractPayload(PayloadField{Payload::kBodyFieldNumber}, DefaultBufferPool(),
                             message, body));
  EXPECT_EQ(body.Materialize(), payload.body());
  Payload rest;
  ASSERT_TRUE(rest.ParseFromString(message.Materialize()));
  EXPECT_EQ(rest.type(), grpc::testing::COMPRESSABLE);
  EXPECT_TRUE(rest.body().empty());

  // Path of three through a message field that is itself repeated in the wire bytes:
  // SimpleResponse { payload(1) } inside a wrapper field 7 of an unknown message.
  SimpleResponse inner;
  inner.set_username("u");
  inner.mutable_payload()->set_body(Pattern(200));
  const std::string inner_wire = inner.SerializeAsString();
  std::string outer;
  outer.push_back(static_cast<char>((7 << 3) | 2));
  outer.push_back(static_cast<char>((inner_wire.size() & 0x7f) | 0x80));
  outer.push_back(static_cast<char>(inner_wire.size() >> 7));
  outer += inner_wire;
  outer.push_back(static_cast<char>((9 << 3) | 0));  // field 9, varint 5 after it
  outer.push_back(5);
  BufferSlice wrapped = SliceOf(outer, {2, 40});
  BufferSlice taken;
  ASSERT_TRUE(ExtractPayload(PayloadField{7, 1, 2}, DefaultBufferPool(), wrapped, taken));
  EXPECT_EQ(taken.Materialize(), inner.payload().body());
  // What is left: field 7 holding the response without the body, then field 9.
  SimpleResponse without_body = inner;
  without_body.mutable_payload()->clear_body();
  const std::string rest_inner = without_body.SerializeAsString();
  std::string expected;
  expected.push_back(static_cast<char>((7 << 3) | 2));
  expected.push_back(static_cast<char>(rest_inner.size()));
  expected += rest_inner;
  expected.push_back(static_cast<char>((9 << 3) | 0));
  expected.push_back(5);
  EXPECT_EQ(wrapped.Materialize(), expected);
}

TEST(PayloadWireTest, UnknownFieldsAndGroupsAroundTheFieldStay) {
  // Before the payload: an unknown group (field 20) holding a varint, a fixed32, a fixed64, a
  // nested group and a length-delimited field; after it: an unknown fixed64 (field 21).
  std::string group;
  group.push_back(static_cast<char>(0xa3));  // field 20, start group: (20 << 3) | 3 = 163
  group.push_back(0x01);
  group.push_back(0x08);  // field 1 varint
  group.push_back(static_cast<char>(0x96));
  group.push_back(0x01);
  group.push_back(0x15);  // field 2 fixed32
  group.append(4, 'x');
  group.push_back(0x19);  // field 3 fixed64
  group.append(8, 'y');
  group.push_back(0x23);  // field 4 start group
  group.push_back(0x24);  // field 4 end group
  group.push_back(0x2a);  // field 5 length-delimited
  group.push_back(0x02);
  group.append("zz");
  group.push_back(static_cast<char>(0xa4));  // field 20 end group
  group.push_back(0x01);
  std::string fixed;
  fixed.push_back(static_cast<char>(0xa9));  // field 21, fixed64
  fixed.push_back(0x01);
  fixed.append(8, 'w');
  SimpleRequest request = FullRequest(100);
  const std::string wire = group + request.SerializeAsString() + fixed;
  SimpleRequest parsed_whole;
  ASSERT_TRUE(parsed_whole.ParseFromString(wire));
  SimpleRequest expected = parsed_whole;
  expected.mutable_payload()->clear_body();
  ExpectExtracts(wire, {5, 19, 60}, request.payload().body(), expected);
}

TEST(PayloadWireTest, MalformedMessagesAreRefused) {
  const std::string body_field = std::string("\x1a\x05\x12\x03", 4) + "abc";
  const std::string cases[] = {
      std::string("\x1a", 1),                              // tag, no length
      std::string("\x1a\x80", 2),                          // truncated length varint
      std::string("\x1a\x09\x12\x03", 4) + "abc",          // outer length past the end
      std::string("\x1a\x05\x12\x07", 4) + "abc",          // inner length past its message
      std::string("\x10\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 12),  // 11-byte varint
      std::string("\x0c", 1),                              // end group at the top
      std::string("\x0b\x10\x01", 3),                      // group never ended
      std::string("\x0b\x14", 2),                          // group ended by another number
      std::string("\x0e", 1),                              // wire type 6
      std::string("\x00\x01", 2),                          // field number 0
      std::string("\x0d\x01\x02", 3),                      // truncated fixed32
      body_field + "\x11\x01",                             // truncated fixed64 after the field
  };
  for (const std::string& wire : cases) {
    SCOPED_TRACE(testing::PrintToString(wire));
    BufferSlice message = SliceOf(wire);
    BufferSlice payload;
    EXPECT_FALSE(ExtractPayload(kRequestBody, DefaultBufferPool(), message, payload));
    // Protobuf refuses each of them too.
    SimpleRequest request;
    EXPECT_FALSE(request.ParseFromString(wire));
  }
}

TEST(PayloadWireTest, NeverAcceptsWhatProtobufRejectsNorDisagreesWithIt) {
  // Truncations and byte changes of a valid message: whenever the extraction succeeds and
  // protobuf parses the rest, protobuf parses the original too, to the same message and body.
  const std::string wire = FullRequest(40).SerializeAsString();
  std::minstd_rand rng(12345);
  std::vector<std::string> inputs;
  for (size_t n = 0; n <= wire.size(); ++n) inputs.push_back(wire.substr(0, n));
  for (int i = 0; i < 3000; ++i) {
    std::string changed = wire;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      changed[rng() % changed.size()] = static_cast<char>(rng());
    }
    inputs.push_back(std::move(changed));
  }
  size_t accepted = 0;
  for (const std::string& input : inputs) {
    BufferSlice message = SliceOf(input, {input.size() / 3, input.size() / 2});
    BufferSlice payload;
    if (!ExtractPayload(kRequestBody, DefaultBufferPool(), message, payload)) continue;
    SimpleRequest rest;
    if (!rest.ParseFromString(message.Materialize())) continue;
    SimpleRequest whole;
    ASSERT_TRUE(whole.ParseFromString(input)) << testing::PrintToString(input);
    EXPECT_EQ(payload.Materialize(), whole.payload().body());
    if (whole.has_payload()) whole.mutable_payload()->clear_body();
    EXPECT_EQ(rest.SerializeAsString(), whole.SerializeAsString()) << testing::PrintToString(input);
    ++accepted;
  }
  EXPECT_GT(accepted, 100u);  // the property was checked on many inputs, not vacuously
}

// The flat form (small messages) must give what the views give: same verdict, same bytes left,
// same payload.
void ExpectFlatAgrees(const PayloadField& field, const std::string& wire,
                      const std::vector<size_t>& cuts) {
  ASSERT_LE(wire.size(), kFlatExtractMax);
  BufferSlice viewed = SliceOf(wire, cuts);
  BufferSlice viewed_payload;
  const bool viewed_ok = ExtractPayload(field, DefaultBufferPool(), viewed, viewed_payload);
  const BufferSlice flat_input = SliceOf(wire, cuts);
  std::byte kept[kFlatExtractBuffer];
  size_t kept_size;
  BufferSlice flat_payload;
  const bool flat_ok = ExtractPayloadFlat(field, flat_input, kept, &kept_size, flat_payload);
  ASSERT_EQ(flat_ok, viewed_ok);
  if (!flat_ok) return;
  const std::string left = kept_size == kNotExtracted
                               ? flat_input.Materialize()
                               : std::string(reinterpret_cast<const char*>(kept), kept_size);
  EXPECT_EQ(left, viewed.Materialize());
  EXPECT_EQ(flat_payload.Materialize(), viewed_payload.Materialize());
}

TEST(PayloadWireTest, FlatExtractionAgreesWithViews) {
  const std::string wire = FullRequest(40).SerializeAsString();
  for (size_t cut = 0; cut <= wire.size(); ++cut) {
    SCOPED_TRACE(cut);
    ExpectFlatAgrees(kRequestBody, wire, {cut});
  }
  std::minstd_rand rng(777);
  for (int i = 0; i < 3000; ++i) {
    std::string changed = wire.substr(0, rng() % (wire.size() + 1));
    if (!changed.empty()) changed[rng() % changed.size()] = static_cast<char>(rng());
    SCOPED_TRACE(testing::PrintToString(changed));
    ExpectFlatAgrees(kRequestBody, changed, {changed.size() / 2});
  }
  // Nested three deep, rewritten at every level, twice; and the largest flat message.
  const PayloadField deep{7, 1, 2};
  std::string inner;
  inner.push_back(0x12);
  inner.push_back(0x03);
  inner += "abc";
  inner.push_back(0x18);  // field 3 varint
  inner.push_back(0x01);
  std::string middle;
  middle.push_back(0x0a);
  middle.push_back(static_cast<char>(inner.size()));
  middle += inner;
  std::string outer;
  outer.push_back(0x3a);
  outer.push_back(static_cast<char>(middle.size()));
  outer += middle;
  ExpectFlatAgrees(deep, outer + outer, {3});
  SimpleRequest largest = FullRequest(0);
  for (size_t body = kFlatExtractMax; largest.ByteSizeLong() != kFlatExtractMax; --body) {
    ASSERT_GT(body, 0u);
    largest.mutable_payload()->set_body(Pattern(body));
  }
  ExpectFlatAgrees(kRequestBody, largest.SerializeAsString(), {100, 900});
}

TEST(PayloadWireTest, AppendedHeadersParseBackAsTheField) {
  const size_t sizes[] = {0, 1, 127, 128, 16383, 16384, (size_t{1} << 21) + 5};
  for (size_t size : sizes) {
    SCOPED_TRACE(size);
    const std::string body = Pattern(size);
    SimpleResponse response;
    response.set_username("before");
    response.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
    response.mutable_payload()->set_body("replaced");
    const PayloadField field{SimpleResponse::kPayloadFieldNumber, Payload::kBodyFieldNumber};
    std::string headers(PayloadHeaderSize(field, size), '\0');
    std::byte* end = WritePayloadHeaders(field, size, reinterpret_cast<std::byte*>(headers.data()));
    EXPECT_EQ(end, reinterpret_cast<std::byte*>(headers.data()) + headers.size());
    SimpleResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(response.SerializeAsString() + headers + body));
    EXPECT_EQ(parsed.payload().body(), body);
    EXPECT_EQ(parsed.payload().type(), grpc::testing::COMPRESSABLE);
    EXPECT_EQ(parsed.username(), "before");

    // And the extraction takes exactly those bytes back out.
    BufferSlice message = SliceOf(response.SerializeAsString() + headers + body);
    BufferSlice payload;
    ASSERT_TRUE(ExtractPayload(field, DefaultBufferPool(), message, payload));
    EXPECT_EQ(payload.Materialize(), body);
  }
  // Deep paths with large field numbers (5-byte tags).
  const PayloadField deep{PayloadField::kMaxFieldNumber, 1, 2, 3, 4, 5, 6, 7};
  std::string headers(PayloadHeaderSize(deep, 300), '\0');
  WritePayloadHeaders(deep, 300, reinterpret_cast<std::byte*>(headers.data()));
  BufferSlice message = SliceOf(headers + Pattern(300), {7});
  BufferSlice payload;
  ASSERT_TRUE(ExtractPayload(deep, DefaultBufferPool(), message, payload));
  EXPECT_EQ(payload.Materialize(), Pattern(300));
}

TEST(PayloadFieldTest, RejectsBadPaths) {
  EXPECT_THROW((PayloadField{0}), std::invalid_argument);
  EXPECT_THROW((PayloadField{PayloadField::kMaxFieldNumber + 1}), std::invalid_argument);
  EXPECT_THROW((PayloadField{1, 2, 3, 4, 5, 6, 7, 8, 9}), std::invalid_argument);
  EXPECT_TRUE(PayloadField().empty());
  EXPECT_EQ((PayloadField{3, 2}).depth(), 2u);
  EXPECT_EQ((PayloadField{3, 2}), kRequestBody);
}

}  // namespace
}  // namespace rill::internal
