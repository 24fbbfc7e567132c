#include "rill/mem/protobuf_streams.h"

#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/struct.pb.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rill/mem/buffer_pool.h"
#include "tests/testing/bytes.h"
#include "tests/testing/pools.h"

namespace rill {
namespace {

using test::Pattern;
using test::Text;

// A FileDescriptorProto of a few hundred KiB: many messages and fields (short strings) and long
// comments (strings that cross chunk boundaries).
google::protobuf::FileDescriptorProto BigFileDescriptor() {
  google::protobuf::FileDescriptorProto file;
  file.set_name("big/test.proto");
  file.set_package("rill.test");
  for (int m = 0; m < 300; ++m) {
    google::protobuf::DescriptorProto* message = file.add_message_type();
    message->set_name("Message" + std::to_string(m));
    for (int f = 0; f < 12; ++f) {
      google::protobuf::FieldDescriptorProto* field = message->add_field();
      field->set_name("field_" + std::to_string(f));
      field->set_number(f + 1);
      field->set_type(google::protobuf::FieldDescriptorProto::TYPE_STRING);
      field->set_json_name("field" + std::to_string(f));
    }
  }
  google::protobuf::SourceCodeInfo* info = file.mutable_source_code_info();
  for (int i = 0; i < 200; ++i) {
    google::protobuf::SourceCodeInfo::Location* location = info->add_location();
    location->add_path(4);
    location->add_path(i);
    location->add_span(i);
    location->set_leading_comments(Text(static_cast<size_t>(i) * 37 % 5000, i));
  }
  return file;
}

// `bytes` cut into buffers of the given sizes, repeated until every byte is placed.
BufferSlice SliceAtOddSizes(const std::string& bytes, const std::vector<size_t>& sizes,
                            BufferPool& pool) {
  BufferSlice slice;
  size_t offset = 0;
  for (size_t i = 0; offset < bytes.size(); ++i) {
    const size_t n = std::min(sizes[i % sizes.size()], bytes.size() - offset);
    slice.Append(Buffer::Copy(std::string_view(bytes).substr(offset, n), pool));
    offset += n;
  }
  return slice;
}

const std::vector<size_t> kOddSizes = {1, 3, 7, 4097, 2, 16384, 1023, 1025, 65536, 5, 9999};

TEST(BufferSliceInputStreamTest, ParsesAMessageSpreadOverOddChunks) {
  TieredBufferPool pool;
  const google::protobuf::FileDescriptorProto original = BigFileDescriptor();
  const std::string wire = original.SerializeAsString();
  ASSERT_GT(wire.size(), 300u * 1024);
  BufferSlice slice = SliceAtOddSizes(wire, kOddSizes, pool);
  EXPECT_GT(slice.buffer_count(), 50u);

  google::protobuf::FileDescriptorProto parsed;
  BufferSliceInputStream stream(slice);
  ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&stream));
  EXPECT_EQ(stream.ByteCount(), static_cast<int64_t>(wire.size()));
  EXPECT_EQ(parsed.SerializeAsString(), wire);
  EXPECT_EQ(parsed.message_type_size(), 300);
  EXPECT_EQ(slice.size(), wire.size()) << "the stream does not consume the slice";
}

TEST(BufferSliceInputStreamTest, ParsesAStructOfOneByteChunks) {
  TieredBufferPool pool;
  google::protobuf::Struct original;
  for (int i = 0; i < 50; ++i) {
    google::protobuf::Value& value = (*original.mutable_fields())["key" + std::to_string(i)];
    if (i % 2 == 0) {
      value.set_string_value(Text(static_cast<size_t>(i) * 3));
    } else {
      value.set_number_value(i * 1.5);
    }
  }
  const std::string wire = original.SerializeAsString();
  BufferSlice slice = SliceAtOddSizes(wire, {1}, pool);
  google::protobuf::Struct parsed;
  BufferSliceInputStream stream(slice);
  ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&stream));
  ASSERT_EQ(parsed.fields_size(), 50);
  EXPECT_EQ(parsed.fields().at("key4").string_value(), Text(12));
  EXPECT_EQ(parsed.fields().at("key7").number_value(), 10.5);
}

TEST(BufferSliceInputStreamTest, FollowsTheZeroCopyContract) {
  TieredBufferPool pool;
  BufferSlice slice = SliceAtOddSizes(Pattern(10000), {3000, 5000, 2000}, pool);
  BufferSliceInputStream stream(slice);
  const void* data = nullptr;
  int size = 0;
  ASSERT_TRUE(stream.Next(&data, &size));
  EXPECT_EQ(size, 3000);
  EXPECT_EQ(data, slice.buffer(0).data());
  stream.BackUp(1000);
  EXPECT_EQ(stream.ByteCount(), 2000);
  ASSERT_TRUE(stream.Next(&data, &size));
  EXPECT_EQ(size, 1000) << "the backed-up bytes come again";
  EXPECT_EQ(data, slice.buffer(0).data() + 2000);
  ASSERT_TRUE(stream.Skip(5500));
  EXPECT_EQ(stream.ByteCount(), 8500);
  ASSERT_TRUE(stream.Next(&data, &size));
  EXPECT_EQ(size, 1500);
  EXPECT_EQ(static_cast<const std::byte*>(data), slice.buffer(2).data() + 500);
  EXPECT_FALSE(stream.Next(&data, &size));
  EXPECT_EQ(stream.ByteCount(), 10000);
  EXPECT_FALSE(stream.Skip(1));
  EXPECT_EQ(stream.ByteCount(), 10000);

  BufferSliceInputStream short_stream(slice);
  EXPECT_FALSE(short_stream.Skip(10001)) << "skipping past the end fails";
  EXPECT_EQ(short_stream.ByteCount(), 10000);
}

TEST(BufferSliceOutputStreamTest, SerializesIntoChunksOfOddSizes) {
  const google::protobuf::FileDescriptorProto message = BigFileDescriptor();
  const std::string expected = message.SerializeAsString();
  for (size_t chunk :
       {size_t{1}, size_t{7}, size_t{1000}, size_t{4097}, size_t{16384}, size_t{100000}}) {
    TieredBufferPool pool;
    BufferSlice out;
    {
      BufferSliceOutputStream stream(&out, pool, chunk);
      ASSERT_TRUE(message.SerializeToZeroCopyStream(&stream));
      EXPECT_EQ(stream.ByteCount(), static_cast<int64_t>(expected.size()));
    }
    EXPECT_EQ(out.size(), expected.size()) << chunk;
    EXPECT_EQ(out.Materialize(), expected) << chunk;
    google::protobuf::FileDescriptorProto parsed;
    BufferSliceInputStream in(out);
    ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&in)) << chunk;
  }
}

TEST(BufferSliceOutputStreamTest, BackUpTrimsWhatWasNotWritten) {
  TieredBufferPool pool;
  BufferSlice out;
  BufferSliceOutputStream stream(&out, pool, 4096);
  void* data = nullptr;
  int size = 0;
  ASSERT_TRUE(stream.Next(&data, &size));
  ASSERT_EQ(size, 4096);
  std::memcpy(data, "hello", 5);
  stream.BackUp(size - 5);
  EXPECT_EQ(stream.ByteCount(), 5);
  ASSERT_TRUE(stream.Next(&data, &size));
  EXPECT_EQ(size, 4091) << "the rest of the chunk comes again";
  std::memcpy(data, " world", 6);
  stream.BackUp(size - 6);
  stream.Flush();
  EXPECT_EQ(out.Materialize(), "hello world");
  EXPECT_EQ(stream.ByteCount(), 11);
}

}  // namespace
}  // namespace rill
