// protobuf ZeroCopy streams over BufferSlice: messages parse from and serialize into pooled
// buffers with no flattening.
//
//   rill::BufferSliceInputStream in(slice);
//   bool ok = msg.ParseFromZeroCopyStream(&in);
//
//   rill::BufferSlice out;
//   {
//     rill::BufferSliceOutputStream stream(&out, pool);
//     msg.SerializeToZeroCopyStream(&stream);
//   }  // `out` holds the bytes once the stream is destroyed (or Flush()ed)
//
// Thread safety: thread-compatible.
#ifndef RILL_MEM_PROTOBUF_STREAMS_H_
#define RILL_MEM_PROTOBUF_STREAMS_H_

#include <google/protobuf/io/zero_copy_stream.h>

#include <cstdint>

#include "rill/mem/buffer_slice.h"

namespace rill {

// Reads a slice that must outlive the stream. Does not consume or free it.
class BufferSliceInputStream final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit BufferSliceInputStream(const BufferSlice& slice) : slice_(&slice) {}

  bool Next(const void** data, int* size) override;
  void BackUp(int count) override;
  bool Skip(int count) override;
  int64_t ByteCount() const override { return byte_count_; }

 private:
  const BufferSlice* slice_;
  size_t index_ = 0;     // next buffer to return
  size_t position_ = 0;  // bytes of buffer(index_) already returned (after a BackUp)
  int64_t byte_count_ = 0;
};

// Appends pooled chunks to `out`. The bytes are in `out` after Flush() or destruction.
class BufferSliceOutputStream final : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  BufferSliceOutputStream(BufferSlice* out, BufferPool& pool,
                          size_t chunk_size = BufferSliceWriter::kDefaultChunkSize)
      : writer_(out, pool, chunk_size) {}
  ~BufferSliceOutputStream() override { Flush(); }
  BufferSliceOutputStream(const BufferSliceOutputStream&) = delete;
  BufferSliceOutputStream& operator=(const BufferSliceOutputStream&) = delete;

  bool Next(void** data, int* size) override;
  void BackUp(int count) override;
  int64_t ByteCount() const override { return byte_count_; }
  // Appends everything written so far to the output slice.
  void Flush();

 private:
  BufferSliceWriter writer_;
  // Size of the span returned by the last Next(); its bytes count as written (the protobuf
  // contract) and are committed to the writer on the next Next(), BackUp() or Flush().
  int last_size_ = 0;
  int64_t byte_count_ = 0;
};

}  // namespace rill

#endif  // RILL_MEM_PROTOBUF_STREAMS_H_
