// Message compression, in the style of grpc-go's compressor benchmarks: gzip, deflate and zstd
// next to a "copy" compressor (bytes copied through the Compressor interface, no coding) and
// next to what a naive implementation does per message: flatten, then zlib's compress2() or
// ZSTD_compress() into a fresh heap buffer, and uncompress()/ZSTD_decompress() into a fresh heap
// buffer sized from the known length.
//
//   compress/{gzip,deflate,zstd,copy,naive_zlib,naive_zstd}/SIZE
//   decompress/{gzip,deflate,zstd,copy,naive_zlib,naive_zstd}/SIZE
//
// SIZE is the payload body: 1 KiB, 10 KiB, 512000 B. The payload is what grpc-go's benchmark
// sends: a SimpleRequest whose Payload body is SIZE zero bytes (PayloadType COMPRESSABLE), so it
// compresses extremely well; the results measure the per-message overhead and the coding of
// long runs, not a typical ratio.
//
// Counters per message: allocs (heap allocations, from the malloc hook), alloc_bytes, and
// wire_bytes (the compressed size). After the table, ratios of CPU time (variant / baseline).
//
//   taskset -c 1 build/release/bench/compress/compress_benchmark --benchmark_min_time=0.2
#include <benchmark/benchmark.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/alloc_hook/alloc_hook.h"
#include "rill/compression.h"
#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"

namespace rill {
namespace {

constexpr size_t kSizes[] = {1024, 10 * 1024, 512000};

// "1KiB", "10KiB", "512000B": KiB only for the sizes grpc-go's benchmark names that way.
std::string SizeName(size_t size) {
  return size % 1024 == 0 && size <= 64 * 1024 ? std::to_string(size / 1024) + "KiB"
                                               : std::to_string(size) + "B";
}

// "family/variant/SIZE"
std::string BenchmarkName(std::string_view family, std::string_view variant, size_t size) {
  std::string name;
  name.append(family).append("/").append(variant).append("/").append(SizeName(size));
  return name;
}

void AppendVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// grpc.testing.SimpleRequest{payload: Payload{type: COMPRESSABLE, body: `size` zero bytes}}.
std::string GrpcGoPayload(size_t size) {
  std::string payload;
  payload.push_back(0x12);  // Payload.body
  AppendVarint(payload, size);
  payload.append(size, '\0');
  std::string request;
  request.push_back(0x1a);  // SimpleRequest.payload
  AppendVarint(request, payload.size());
  request += payload;
  return request;
}

// Copies bytes through the interface without coding them: the floor for a compressor.
class CopyCompressor final : public Compressor {
 public:
  std::string_view name() const override { return "copy"; }
  Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override {
    BufferSliceWriter writer(&out, pool);
    for (const Buffer& buffer : input) writer.Write(buffer.span());
    return OkStatus();
  }
  Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                    BufferSlice& out) override {
    if (input.size() > limit) return Status(StatusCode::kResourceExhausted, "too large");
    return Compress(input, pool, out);
  }
};

// Heap allocations per iteration, from the malloc hook.
class AllocationScope {
 public:
  explicit AllocationScope(benchmark::State& state)
      : state_(state), start_(bench::AllocationCounts()) {}
  ~AllocationScope() {
    const bench::AllocationTotals end = bench::AllocationCounts();
    state_.counters["allocs"] = benchmark::Counter(static_cast<double>(end.allocs - start_.allocs),
                                                   benchmark::Counter::kAvgIterations);
    state_.counters["alloc_bytes"] = benchmark::Counter(
        static_cast<double>(end.bytes - start_.bytes), benchmark::Counter::kAvgIterations);
  }
  AllocationScope(const AllocationScope&) = delete;
  AllocationScope& operator=(const AllocationScope&) = delete;

 private:
  benchmark::State& state_;
  bench::AllocationTotals start_;
};

// The message as the codec hands it over: one pooled buffer.
BufferSlice MessageSlice(const std::string& message) {
  return BufferSlice(Buffer::Copy(message, DefaultBufferPool()));
}

void RillCompress(benchmark::State& state, Compressor* compressor, const std::string* message) {
  BufferPool& pool = DefaultBufferPool();
  const BufferSlice input = MessageSlice(*message);
  size_t wire = 0;
  {
    AllocationScope allocations(state);
    for (auto _ : state) {
      BufferSlice out;
      if (!compressor->Compress(input, pool, out).ok()) state.SkipWithError("compress failed");
      wire = out.size();
      benchmark::DoNotOptimize(out);
    }
  }
  state.counters["wire_bytes"] = static_cast<double>(wire);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * message->size()));
}

void RillDecompress(benchmark::State& state, Compressor* compressor, const std::string* message) {
  BufferPool& pool = DefaultBufferPool();
  BufferSlice compressed;
  if (!compressor->Compress(MessageSlice(*message), pool, compressed).ok()) {
    state.SkipWithError("compress failed");
    return;
  }
  {
    AllocationScope allocations(state);
    for (auto _ : state) {
      BufferSlice out;
      if (!compressor->Decompress(compressed, pool, message->size(), out).ok()) {
        state.SkipWithError("decompress failed");
      }
      benchmark::DoNotOptimize(out);
    }
  }
  state.counters["wire_bytes"] = static_cast<double>(compressed.size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * message->size()));
}

// Flat input, a fresh heap buffer of compressBound() bytes per message.
void NaiveZlibCompress(benchmark::State& state, const std::string* message) {
  size_t wire = 0;
  {
    AllocationScope allocations(state);
    for (auto _ : state) {
      uLongf size = compressBound(message->size());
      auto out = std::make_unique<Bytef[]>(size);
      if (compress2(out.get(), &size, reinterpret_cast<const Bytef*>(message->data()),
                    message->size(), Z_DEFAULT_COMPRESSION) != Z_OK) {
        state.SkipWithError("compress2 failed");
      }
      wire = size;
      benchmark::DoNotOptimize(out.get());
    }
  }
  state.counters["wire_bytes"] = static_cast<double>(wire);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * message->size()));
}

void NaiveZlibDecompress(benchmark::State& state, const std::string* message) {
  uLongf wire_size = compressBound(message->size());
  std::vector<Bytef> wire(wire_size);
  compress2(wire.data(), &wire_size, reinterpret_cast<const Bytef*>(message->data()),
            message->size(), Z_DEFAULT_COMPRESSION);
  {
    AllocationScope allocations(state);
    for (auto _ : state) {
      uLongf size = message->size();
      auto out = std::make_unique<Bytef[]>(size);
      if (uncompress(out.get(), &size, wire.data(), wire_size) != Z_OK) {
        state.SkipWithError("uncompress failed");
      }
      benchmark::DoNotOptimize(out.get());
    }
  }
  state.counters["wire_bytes"] = static_cast<double>(wire_size);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * message->size()));
}

void NaiveZstdCompress(benchmark::State& state, const std::string* message) {
  size_t wire = 0;
  {
    AllocationScope allocations(state);
    for (auto _ : state) {
      const size_t bound = ZSTD_compressBound(message->size());
      auto out = std::make_unique<char[]>(bound);
      wire = ZSTD_compress(out.get(), bound, message->data(), message->size(), 3);
      if (ZSTD_isError(wire)) state.SkipWithError("ZSTD_compress failed");
      benchmark::DoNotOptimize(out.get());
    }
  }
  state.counters["wire_bytes"] = static_cast<double>(wire);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * message->size()));
}

void NaiveZstdDecompress(benchmark::State& state, const std::string* message) {
  std::string wire(ZSTD_compressBound(message->size()), '\0');
  wire.resize(ZSTD_compress(wire.data(), wire.size(), message->data(), message->size(), 3));
  {
    AllocationScope allocations(state);
    for (auto _ : state) {
      auto out = std::make_unique<char[]>(message->size());
      if (ZSTD_isError(ZSTD_decompress(out.get(), message->size(), wire.data(), wire.size()))) {
        state.SkipWithError("ZSTD_decompress failed");
      }
      benchmark::DoNotOptimize(out.get());
    }
  }
  state.counters["wire_bytes"] = static_cast<double>(wire.size());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * message->size()));
}

// Prints CPU-time ratios of chosen pairs after the usual table.
class RatioReporter final : public benchmark::ConsoleReporter {
 public:
  struct Pair {
    std::string variant;
    std::string baseline;
  };
  explicit RatioReporter(std::vector<Pair> pairs) : pairs_(std::move(pairs)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.error_occurred) continue;
      const std::string& name = run.run_name.function_name;
      if (run.run_type == Run::RT_Aggregate) {
        if (run.aggregate_name == "median") medians_[name] = run.GetAdjustedCPUTime();
      } else {
        times_[name] = run.GetAdjustedCPUTime();
      }
    }
  }

  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\nRatios (variant / baseline, CPU time; below 1 the variant is faster)\n");
    for (const char* family : {"compress", "decompress"}) {
      for (const Pair& pair : pairs_) {
        for (size_t size : kSizes) {
          const double* variant = Find(BenchmarkName(family, pair.variant, size));
          const double* baseline = Find(BenchmarkName(family, pair.baseline, size));
          if (variant == nullptr || baseline == nullptr) continue;
          std::printf("  %-10s %-8s %-10s / %-10s = %7.3f\n", family, SizeName(size).c_str(),
                      pair.variant.c_str(), pair.baseline.c_str(), *variant / *baseline);
        }
      }
    }
    std::fflush(stdout);
  }

 private:
  const double* Find(const std::string& name) const {
    if (auto it = medians_.find(name); it != medians_.end()) return &it->second;
    if (auto it = times_.find(name); it != times_.end()) return &it->second;
    return nullptr;
  }

  std::vector<Pair> pairs_;
  std::map<std::string, double> times_;
  std::map<std::string, double> medians_;
};

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!rill::bench::AllocationCountingEnabled()) {
    std::fprintf(stderr, "note: allocation counters are off (sanitizer build)\n");
  }

  static const std::shared_ptr<rill::Compressor> compressors[] = {
      rill::GzipCompressor(), rill::DeflateCompressor(), rill::ZstdCompressor(),
      std::make_shared<rill::CopyCompressor>()};
  static std::map<size_t, std::string> messages;
  for (size_t size : rill::kSizes) messages[size] = rill::GrpcGoPayload(size);

  for (const char* family : {"compress", "decompress"}) {
    const bool compress = std::string_view(family) == "compress";
    for (size_t size : rill::kSizes) {
      const std::string* message = &messages[size];
      for (const auto& compressor : compressors) {
        rill::Compressor* c = compressor.get();
        const std::string name = rill::BenchmarkName(family, c->name(), size);
        if (compress) {
          benchmark::RegisterBenchmark(name.c_str(), rill::RillCompress, c, message);
        } else {
          benchmark::RegisterBenchmark(name.c_str(), rill::RillDecompress, c, message);
        }
      }
      benchmark::RegisterBenchmark(rill::BenchmarkName(family, "naive_zlib", size).c_str(),
                                   compress ? rill::NaiveZlibCompress : rill::NaiveZlibDecompress,
                                   message);
      benchmark::RegisterBenchmark(rill::BenchmarkName(family, "naive_zstd", size).c_str(),
                                   compress ? rill::NaiveZstdCompress : rill::NaiveZstdDecompress,
                                   message);
    }
  }

  rill::RatioReporter reporter({
      {"deflate", "naive_zlib"},  // same format and level
      {"gzip", "naive_zlib"},
      {"zstd", "naive_zstd"},
      {"gzip", "copy"},
      {"zstd", "copy"},
  });
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
