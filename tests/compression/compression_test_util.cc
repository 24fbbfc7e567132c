#include "tests/compression/compression_test_util.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include "rill/detail/check.h"
#include "rill/mem/buffer.h"
#include "rill/server_stream.h"

namespace rill::test {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

// ---------------------------------------------------------------------------------------------
// Messages.

SimpleRequest ZerosRequest(size_t body_size, int32_t response_size) {
  SimpleRequest request;
  request.set_response_size(response_size);
  request.mutable_payload()->set_body(std::string(body_size, '\0'));
  return request;
}

namespace {

template <typename Message>
size_t BodySizeFor(size_t serialized_size) {
  // The body is the payload minus at most 1 + 1 + 2 * 5 bytes of tags and lengths.
  for (size_t overhead = 0; overhead <= 12 && overhead <= serialized_size; ++overhead) {
    Message message;
    message.mutable_payload()->set_body(std::string(serialized_size - overhead, '\0'));
    if (message.ByteSizeLong() == serialized_size) return serialized_size - overhead;
  }
  RILL_CHECK_MSG(false, "no payload body gives this serialized size");
  return 0;
}

}  // namespace

size_t BodySizeForSerializedRequest(size_t serialized_size) {
  return BodySizeFor<SimpleRequest>(serialized_size);
}

size_t BodySizeForSerializedResponse(size_t serialized_size) {
  return BodySizeFor<SimpleResponse>(serialized_size);
}

StreamingOutputCallRequest StreamRequest(size_t body_size,
                                         const std::vector<ResponseSpec>& responses) {
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body(std::string(body_size, '\0'));
  for (const ResponseSpec& spec : responses) {
    auto* parameters = request.add_response_parameters();
    parameters->set_size(spec.size);
    if (spec.compressed) parameters->mutable_compressed()->set_value(*spec.compressed);
  }
  return request;
}

bool AllZeros(const std::string& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == '\0'; });
}

std::string TrailerOf(const ClientContext& context, std::string_view key) {
  const std::optional<std::string_view> value = context.trailing_metadata().Get(key);
  return value ? std::string(*value) : std::string("<absent>");
}

// ---------------------------------------------------------------------------------------------
// The service.

namespace {

rill::Status CheckExpectation(const ServerContext& context, bool expect_compressed) {
  if (context.request_compressed() == expect_compressed) return rill::Status();
  return rill::Status(StatusCode::kInvalidArgument,
                      expect_compressed ? "request was not compressed" : "request was compressed");
}

void ApplyResponseEncodingHeader(ServerContext& context) {
  if (auto encoding = context.client_metadata().Get(kResponseEncodingKey)) {
    context.set_compression(*encoding);
  }
}

}  // namespace

void CompressionTestService::Saw(const ServerContext& context, std::string& flags) {
  ++requests_seen_;
  if (context.request_compressed()) ++compressed_requests_seen_;
  if (!flags.empty()) flags += ',';
  flags += context.request_compressed() ? '1' : '0';
}

rill::Status CompressionTestService::UnaryCall(ServerContext& context, const SimpleRequest& request,
                                               SimpleResponse& response) {
  std::string flags;
  Saw(context, flags);
  context.AddTrailingMetadata(kRequestCompressedKey, flags);
  context.AddTrailingMetadata(kRequestEncodingKey, context.request_encoding());
  if (request.has_expect_compressed()) {
    rill::Status status = CheckExpectation(context, request.expect_compressed().value());
    if (!status.ok()) return status;
  }
  if (request.response_size() < 0) {
    return rill::Status(StatusCode::kInvalidArgument, "negative response_size");
  }
  if (request.has_response_compressed()) {
    context.set_compression(request.response_compressed().value() ? "gzip" : "identity");
  }
  ApplyResponseEncodingHeader(context);
  response.mutable_payload()->set_body(std::string(request.response_size(), '\0'));
  return rill::Status();
}

Awaitable<rill::Status> CompressionTestService::StreamingOutputCall(
    ServerContext& context, const StreamingOutputCallRequest& request,
    ServerWriter<StreamingOutputCallResponse>& writer) {
  std::string flags;
  Saw(context, flags);
  context.AddTrailingMetadata(kRequestCompressedKey, flags);
  ApplyResponseEncodingHeader(context);
  const bool any_compressed =
      std::any_of(request.response_parameters().begin(), request.response_parameters().end(),
                  [](const auto& p) { return p.has_compressed() && p.compressed().value(); });
  if (any_compressed && context.compression().empty()) context.set_compression("gzip");
  StreamingOutputCallResponse response;
  for (const auto& parameters : request.response_parameters()) {
    response.mutable_payload()->set_body(std::string(std::max(parameters.size(), 0), '\0'));
    WriteOptions options;
    options.no_compression = parameters.has_compressed() && !parameters.compressed().value();
    if (!co_await writer.Write(response, options)) {
      co_return rill::Status(StatusCode::kCancelled, "the call ended while writing");
    }
  }
  co_return rill::Status();
}

Awaitable<rill::Status> CompressionTestService::StreamingInputCall(
    ServerContext& context, ServerReader<StreamingInputCallRequest>& reader,
    StreamingInputCallResponse& response) {
  std::string flags;
  StreamingInputCallRequest request;
  int32_t total = 0;
  rill::Status status;
  while (co_await reader.Read(&request)) {
    Saw(context, flags);
    if (status.ok() && request.has_expect_compressed()) {
      status = CheckExpectation(context, request.expect_compressed().value());
    }
    total += static_cast<int32_t>(request.payload().body().size());
  }
  context.AddTrailingMetadata(kRequestCompressedKey, flags);
  if (!status.ok()) co_return status;
  response.set_aggregated_payload_size(total);
  co_return rill::Status();
}

Awaitable<rill::Status> CompressionTestService::FullDuplexCall(
    ServerContext& context,
    ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>& stream) {
  ApplyResponseEncodingHeader(context);
  std::string flags;
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  while (co_await stream.Read(&request)) {
    Saw(context, flags);
    for (const auto& parameters : request.response_parameters()) {
      // The encoding is fixed once the response headers are out; before that a message that
      // asks for compression turns it on for the call.
      if (context.compression().empty() && parameters.has_compressed() &&
          parameters.compressed().value()) {
        context.set_compression("gzip");
      }
      response.mutable_payload()->set_body(std::string(std::max(parameters.size(), 0), '\0'));
      WriteOptions options;
      options.no_compression = parameters.has_compressed() && !parameters.compressed().value();
      if (!co_await stream.Write(response, options)) {
        co_return rill::Status(StatusCode::kCancelled, "the call ended while writing");
      }
    }
  }
  context.AddTrailingMetadata(kRequestCompressedKey, flags);
  co_return rill::Status();
}

rill::Status CallRecorder::OnCallStart(ServerContext& /*context*/) { return rill::Status(); }

void CallRecorder::OnCallEnd(ServerContext& context, rill::Status& status) {
  std::lock_guard lock(mu_);
  calls_.push_back(Call{std::string(context.method()), std::string(context.peer()), status.code(),
                        std::string(status.message())});
}

std::vector<CallRecorder::Call> CallRecorder::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

void CallRecorder::Clear() {
  std::lock_guard lock(mu_);
  calls_.clear();
}

// ---------------------------------------------------------------------------------------------
// Compressors.

rill::Status CountingCompressor::Compress(const BufferSlice& input, BufferPool& pool,
                                          BufferSlice& out) {
  ++compress_calls_;
  return inner_->Compress(input, pool, out);
}

rill::Status CountingCompressor::Decompress(const BufferSlice& input, BufferPool& pool,
                                            size_t limit, BufferSlice& out) {
  ++decompress_calls_;
  return inner_->Decompress(input, pool, limit, out);
}

CounterMap CountingBuiltIns() {
  CounterMap counters;
  for (auto& compressor : DefaultCompressors()) {
    std::string name(compressor->name());
    counters.emplace(std::move(name), std::make_shared<CountingCompressor>(std::move(compressor)));
  }
  return counters;
}

std::vector<std::shared_ptr<Compressor>> AsCompressors(const CounterMap& counters) {
  std::vector<std::shared_ptr<Compressor>> out;
  // The built-ins' order (gzip, deflate, zstd), so grpc-accept-encoding reads as usual.
  for (std::string_view name : {"gzip", "deflate", "zstd"}) {
    if (auto it = counters.find(name); it != counters.end()) out.push_back(it->second);
  }
  for (const auto& [name, counter] : counters) {
    if (name != "gzip" && name != "deflate" && name != "zstd") out.push_back(counter);
  }
  return out;
}

rill::Status BadCompressor::Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) {
  if (input.size() < min_size_) return real_->Compress(input, pool, out);
  if (bad_ == BadOutput::kGarbage) {
    std::string garbage(std::max<size_t>(input.size() / 2, 1), '\0');
    uint32_t state = 0x9E3779B9u;
    for (char& c : garbage) {
      state = state * 1664525u + 1013904223u;
      c = static_cast<char>(state >> 24);
    }
    garbage[0] = '\xFF';  // no gzip, zlib or zstd header starts with it
    out.Append(Buffer::Copy(garbage, pool));
    return rill::Status();
  }
  BufferSlice whole;
  rill::Status status = real_->Compress(input, pool, whole);
  if (!status.ok()) return status;
  BufferSlice half = whole.TakeFront(whole.size() / 2);
  whole.Free();
  out.Append(std::move(half));
  return rill::Status();
}

rill::Status BombCompressor::Compress(const BufferSlice& input, BufferPool& pool,
                                      BufferSlice& out) {
  if (input.size() < min_size_) return real_->Compress(input, pool, out);
  ++bombs_sent_;
  out.Append(Buffer::Copy(*bomb_, pool));
  return rill::Status();
}

namespace {

constexpr size_t kZeroBlock = 1 << 20;

std::shared_ptr<const std::string> Memoized(
    std::map<uint64_t, std::shared_ptr<const std::string>>& cache, std::mutex& mu, uint64_t size,
    std::string (*make)(uint64_t)) {
  std::lock_guard lock(mu);
  auto& slot = cache[size];
  if (slot == nullptr) slot = std::make_shared<const std::string>(make(size));
  return slot;
}

// Raw deflate output for `n` zeros ending on a byte boundary (Z_SYNC_FLUSH), compressed with
// the densest run-length matching (~1:1030). With `after_zeros` the window is preset with zeros,
// so that the segment may start with a match: it then decodes to `n` zeros wherever the output
// so far ends in zeros, and can be repeated.
std::string DeflateZerosSegment(size_t n, bool after_zeros) {
  const std::vector<unsigned char> zeros(std::max(n, size_t{32 * 1024}), 0);
  z_stream z{};
  RILL_CHECK(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 9, Z_RLE) == Z_OK);
  if (after_zeros) {
    RILL_CHECK(deflateSetDictionary(&z, zeros.data(), 32 * 1024) == Z_OK);
  }
  std::string out(deflateBound(&z, n) + 64, '\0');
  z.next_in = const_cast<unsigned char*>(zeros.data());
  z.avail_in = static_cast<uInt>(n);
  z.next_out = reinterpret_cast<unsigned char*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  RILL_CHECK(deflate(&z, Z_SYNC_FLUSH) == Z_OK && z.avail_in == 0 && z.avail_out > 0);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

// A gzip member of `size` zeros built without deflating them all: one segment made from scratch,
// then a segment that continues a run of zeros repeated as often as needed, then an empty final
// block and the trailer (CRC-32 of the zeros, combined arithmetically, and the size mod 2^32).
// zlib would emit the same kind of stream for the whole input, only ~100 times slower.
std::string MakeGzipOfZeros(uint64_t size) {
  RILL_CHECK(size > 0);
  const size_t first = size % kZeroBlock == 0 ? kZeroBlock : size % kZeroBlock;
  const uint64_t repeats = (size - first) / kZeroBlock;
  const std::string head = DeflateZerosSegment(first, /*after_zeros=*/false);
  const std::string body = DeflateZerosSegment(kZeroBlock, /*after_zeros=*/true);

  const std::vector<unsigned char> zeros(kZeroBlock, 0);
  const uLong crc_first = crc32(crc32(0L, Z_NULL, 0), zeros.data(), static_cast<uInt>(first));
  const uLong crc_block = crc32(crc32(0L, Z_NULL, 0), zeros.data(), kZeroBlock);
  uLong crc = crc_first;
  for (uint64_t i = 0; i < repeats; ++i) crc = crc32_combine(crc, crc_block, kZeroBlock);

  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);  // gzip, no name, unix
  out.reserve(10 + head.size() + repeats * body.size() + 2 + 8);
  out += head;
  for (uint64_t i = 0; i < repeats; ++i) out += body;
  out += std::string("\x03\x00", 2);  // a final fixed-Huffman block holding only end-of-block
  for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((crc >> shift) & 0xFF);
  for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((size >> shift) & 0xFF);
  return out;
}

std::string MakeZstdOfZeros(uint64_t size) {
  const std::vector<char> zeros(kZeroBlock, 0);
  std::vector<char> chunk(ZSTD_CStreamOutSize());
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  RILL_CHECK(cctx != nullptr);
  RILL_CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3)));
  // No pledged size: the frame does not declare its content size, as a hostile sender's would
  // not, so nothing but the output bound can stop the decompressor.
  std::string out;
  uint64_t left = size;
  while (true) {
    const size_t piece = static_cast<size_t>(std::min<uint64_t>(left, kZeroBlock));
    left -= piece;
    const ZSTD_EndDirective mode = left == 0 ? ZSTD_e_end : ZSTD_e_continue;
    ZSTD_inBuffer in{zeros.data(), piece, 0};
    size_t remaining;
    do {
      ZSTD_outBuffer o{chunk.data(), chunk.size(), 0};
      remaining = ZSTD_compressStream2(cctx, &o, &in, mode);
      RILL_CHECK(!ZSTD_isError(remaining));
      out.append(chunk.data(), o.pos);
    } while (mode == ZSTD_e_end ? remaining != 0 : in.pos < in.size);
    if (mode == ZSTD_e_end) break;
  }
  ZSTD_freeCCtx(cctx);
  return out;
}

}  // namespace

std::shared_ptr<const std::string> GzipOfZeros(uint64_t size) {
  static std::mutex mu;
  static std::map<uint64_t, std::shared_ptr<const std::string>> cache;
  return Memoized(cache, mu, size, &MakeGzipOfZeros);
}

std::shared_ptr<const std::string> ZstdOfZeros(uint64_t size) {
  static std::mutex mu;
  static std::map<uint64_t, std::shared_ptr<const std::string>> cache;
  return Memoized(cache, mu, size, &MakeZstdOfZeros);
}

// ---------------------------------------------------------------------------------------------
// Memory.

detail::BlockHeader* MeasuringPool::AllocateBlock(size_t size) {
  detail::BlockHeader* block = inner_.AllocateBlock(size);
  block->pool = this;
  std::lock_guard lock(mu_);
  ++blocks_out_;
  bytes_out_ += block->capacity;
  peak_ = std::max(peak_, bytes_out_);
  window_peak_ = std::max(window_peak_, bytes_out_);
  return block;
}

void MeasuringPool::ReleaseBlock(detail::BlockHeader* block) noexcept {
  {
    std::lock_guard lock(mu_);
    --blocks_out_;
    bytes_out_ -= block->capacity;
  }
  block->pool = &inner_;
  inner_.ReleaseBlock(block);
}

BufferPoolStats MeasuringPool::Stats() const {
  BufferPoolStats stats = inner_.Stats();
  std::lock_guard lock(mu_);
  stats.blocks_out = blocks_out_;
  stats.bytes_out = bytes_out_;
  return stats;
}

size_t MeasuringPool::bytes_out() const {
  std::lock_guard lock(mu_);
  return bytes_out_;
}

size_t MeasuringPool::peak_bytes_out() const {
  std::lock_guard lock(mu_);
  return peak_;
}

size_t MeasuringPool::StartWindow() {
  std::lock_guard lock(mu_);
  window_peak_ = bytes_out_;
  return bytes_out_;
}

size_t MeasuringPool::window_peak() const {
  std::lock_guard lock(mu_);
  return window_peak_;
}

rill::Status MeasuredDecompressor::Decompress(const BufferSlice& input, BufferPool& pool,
                                              size_t limit, BufferSlice& out) {
  Measurement m;
  m.compressed_size = input.size();
  m.out_at_entry = pool_.StartWindow();
  rill::Status status = real_->Decompress(input, pool, limit, out);
  m.peak_during = pool_.window_peak();
  m.code = status.code();
  m.measured = &pool == &pool_;
  std::lock_guard lock(mu_);
  last_ = m;
  return status;
}

MeasuredDecompressor::Measurement MeasuredDecompressor::last() const {
  std::lock_guard lock(mu_);
  return last_;
}

// ---------------------------------------------------------------------------------------------
// A server and a channel.

CompressionFixture::~CompressionFixture() { Stop(); }

bool CompressionFixture::Start() {
  ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", &port_)
      .RegisterService(&service_)
      .AddInterceptor(recorder_)
      .SetOptions(setup_.server_options)
      .SetReactorCount(setup_.server_reactors);
  if (setup_.server_compressors) {
    builder.ClearCompressors();
    for (const auto& compressor : *setup_.server_compressors) {
      builder.RegisterCompressor(compressor);
    }
  } else {
    server_counters_ = CountingBuiltIns();
    for (const auto& compressor : AsCompressors(server_counters_)) {
      builder.RegisterCompressor(compressor);
    }
  }
  if (setup_.server_pool != nullptr) builder.SetBufferPool(setup_.server_pool);
  auto server = builder.Build();
  if (!server.ok()) {
    ADD_FAILURE() << "cannot start the server: " << server.status();
    return false;
  }
  server_ = std::move(*server);

  ChannelOptions options = setup_.channel_options;
  if (setup_.channel_compressors) {
    options.compressors = *setup_.channel_compressors;
  } else {
    client_counters_ = CountingBuiltIns();
    options.compressors = AsCompressors(client_counters_);
  }
  channel_ = NewChannel(std::move(options));
  if (channel_ == nullptr) return false;
  stub_ = std::make_unique<grpc::testing::TestService::Stub>(channel_);
  return true;
}

std::shared_ptr<Channel> CompressionFixture::NewChannel(ChannelOptions options) const {
  auto channel = Channel::Create("127.0.0.1:" + std::to_string(port_), std::move(options));
  if (!channel.ok()) {
    ADD_FAILURE() << "cannot create a channel: " << channel.status();
    return nullptr;
  }
  return std::move(*channel);
}

void CompressionFixture::Stop() {
  stub_.reset();
  channel_.reset();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::milliseconds(0));
    server_.reset();
  }
}

CountingCompressor* CompressionFixture::server_counter(std::string_view name) {
  auto it = server_counters_.find(name);
  return it == server_counters_.end() ? nullptr : it->second.get();
}

CountingCompressor* CompressionFixture::client_counter(std::string_view name) {
  auto it = client_counters_.find(name);
  return it == client_counters_.end() ? nullptr : it->second.get();
}

void ExpectGoodUnaryCall(grpc::testing::TestService::Stub& stub, std::string_view encoding,
                         size_t size) {
  SCOPED_TRACE("a good call with encoding \"" + std::string(encoding) + "\"");
  ClientContext context;
  context.set_timeout(std::chrono::seconds(30));
  context.set_compression(encoding);
  const SimpleRequest request = ZerosRequest(size, static_cast<int32_t>(size));
  SimpleResponse response;
  const rill::Status status = stub.UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.payload().body().size(), size);
  EXPECT_TRUE(AllZeros(response.payload().body()));
  const bool compressed = !encoding.empty() && encoding != "identity";
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), compressed ? "1" : "0");
}

}  // namespace rill::test
