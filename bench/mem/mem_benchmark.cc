// Microbenchmarks of rill's memory layer, each next to the baseline it must beat. After the
// usual table a second one prints ratios of CPU time (variant / baseline; below 1 is faster).
// CPU time, not wall time, so that other load on the machine does not skew the ratios; the
// cross-thread cases count the CPU time of both threads.
//
//   get_put/same_thread/{pool,malloc}/SIZE     one block taken and given back on one thread
//   get_put/cross_thread/{pool,malloc}/SIZE    taken on this thread, given back on another
//                                              (batches through a ring; time is per batch,
//                                              per_block per block; misses: pool misses/block)
//   buffer_alloc_free/{tiered,heap}/SIZE       Buffer::Allocate + Free through each pool
//   small_alloc_free/{rill,malloc}/SIZE        the small-block path against malloc/free
//   buffer_ref_free                            Ref() + Free() of a shared view (two atomics)
//   parse/{flat,slice_16k,slice_odd}/SIZE      protobuf parse from one array or from a
//                                              BufferSlice of 16 KiB or odd-sized chunks
//   serialize/{flat,slice}/SIZE                protobuf serialize into one array or into pooled
//                                              16 KiB chunks
//
//   taskset -c 1 build/release/bench/mem/mem_benchmark --benchmark_min_time=0.1
#include <benchmark/benchmark.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/coded_stream.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "rill/mem/buffer.h"
#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"
#include "rill/mem/protobuf_streams.h"

namespace rill {
namespace {

constexpr size_t kBlockSizes[] = {256, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20};

std::string SizeName(size_t size) {
  if (size >= (1 << 20) && size % (1 << 20) == 0) return std::to_string(size >> 20) + "MiB";
  if (size >= 1024 && size % 1024 == 0) return std::to_string(size >> 10) + "KiB";
  return std::to_string(size) + "B";
}

// "a/b/c"
std::string Join(std::initializer_list<std::string_view> parts) {
  std::string joined;
  for (std::string_view part : parts) {
    if (!joined.empty()) joined += '/';
    joined.append(part);
  }
  return joined;
}

// --- block get/put ------------------------------------------------------------------------

struct PoolOps {
  TieredBufferPool* pool;
  size_t size;
  void* Get() const { return pool->AllocateBlock(size); }
  void Put(void* block) const { pool->ReleaseBlock(static_cast<detail::BlockHeader*>(block)); }
  uint64_t Misses() const { return pool->Stats().misses; }
};

struct MallocOps {
  size_t size;
  void* Get() const {
    void* p = std::malloc(size);  // NOLINT: the baseline being measured
    if (p == nullptr) std::abort();
    return p;
  }
  void Put(void* p) const { std::free(p); }  // NOLINT: the baseline being measured
  uint64_t Misses() const { return 0; }
};

template <typename Ops>
void SameThreadGetPut(benchmark::State& state, Ops ops) {
  for (auto _ : state) {
    void* block = ops.Get();
    benchmark::DoNotOptimize(block);
    ops.Put(block);
  }
  state.SetItemsProcessed(state.iterations());
}

// Blocks go from this thread to a consumer thread in batches through a ring of slots; the
// consumer frees them. One iteration is one batch. Waiting uses futexes, so the pair also works
// (and measures the same work) when both threads share one core.
template <typename Ops>
void CrossThreadGetPut(benchmark::State& state, Ops ops, size_t batch) {
  constexpr size_t kSlots = 4;
  struct Slot {
    std::atomic<uint32_t> state{0};  // 0 empty, 1 full, 2 stop
    std::vector<void*> items;
  };
  std::vector<Slot> slots(kSlots);
  for (Slot& slot : slots) slot.items.resize(batch);
  const uint64_t misses_before = ops.Misses();
  std::thread consumer([&] {
    for (size_t i = 0;; ++i) {
      Slot& slot = slots[i % kSlots];
      slot.state.wait(0, std::memory_order_acquire);
      if (slot.state.load(std::memory_order_acquire) == 2) return;
      for (void* block : slot.items) ops.Put(block);
      slot.state.store(0, std::memory_order_release);
      slot.state.notify_one();
    }
  });
  size_t i = 0;
  for (auto _ : state) {
    Slot& slot = slots[i++ % kSlots];
    slot.state.wait(1, std::memory_order_acquire);
    for (void*& item : slot.items) item = ops.Get();
    slot.state.store(1, std::memory_order_release);
    slot.state.notify_one();
  }
  Slot& last = slots[i % kSlots];
  last.state.wait(1, std::memory_order_acquire);
  last.state.store(2, std::memory_order_release);
  last.state.notify_one();
  consumer.join();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
  state.counters["misses"] = static_cast<double>(ops.Misses() - misses_before) /
                             static_cast<double>(state.iterations() * batch);
  state.counters["per_block"] =
      benchmark::Counter(static_cast<double>(state.iterations() * batch),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// At most 16 MiB per batch (4 batches in flight).
size_t BatchFor(size_t size) { return std::clamp<size_t>((16 << 20) / size, 16, 256); }

// --- buffers ------------------------------------------------------------------------------

void BufferAllocateFree(benchmark::State& state, BufferPool* pool, size_t size) {
  for (auto _ : state) {
    Buffer buffer = Buffer::Allocate(size, *pool);
    benchmark::DoNotOptimize(buffer.data());
    buffer.Free();
  }
  state.SetItemsProcessed(state.iterations());
}

void BufferRefFree(benchmark::State& state, BufferPool* pool) {
  Buffer buffer = Buffer::Allocate(64 << 10, *pool);
  Buffer keep = buffer.Ref();  // shared, so Free() takes the atomic decrement
  for (auto _ : state) {
    Buffer ref = buffer.Ref();
    benchmark::DoNotOptimize(ref.data());
    ref.Free();
  }
  state.SetItemsProcessed(state.iterations());
}

// --- protobuf -----------------------------------------------------------------------------

// A FileDescriptorProto of about `target` bytes: messages with fields (short strings, varints)
// and comments (longer strings), the mix of a typical RPC payload.
std::string SerializedMessage(size_t target) {
  google::protobuf::FileDescriptorProto file;
  file.set_name("bench/payload.proto");
  file.set_package("rill.bench");
  int m = 0;
  while (file.ByteSizeLong() < target) {
    google::protobuf::DescriptorProto* message = file.add_message_type();
    message->set_name("Message" + std::to_string(m));
    for (int f = 0; f < 4; ++f) {
      google::protobuf::FieldDescriptorProto* field = message->add_field();
      field->set_name("field_" + std::to_string(f));
      field->set_number(f + 1);
      field->set_type(google::protobuf::FieldDescriptorProto::TYPE_BYTES);
    }
    google::protobuf::SourceCodeInfo::Location* location =
        file.mutable_source_code_info()->add_location();
    location->add_path(4);
    location->add_path(m);
    location->set_leading_comments(std::string(static_cast<size_t>(64 + (m * 97) % 900), 'c'));
    ++m;
  }
  return file.SerializeAsString();
}

BufferSlice Chunked(const std::string& bytes, const std::vector<size_t>& sizes, BufferPool& pool) {
  BufferSlice slice;
  size_t offset = 0;
  for (size_t i = 0; offset < bytes.size(); ++i) {
    const size_t n = std::min(sizes[i % sizes.size()], bytes.size() - offset);
    slice.Append(Buffer::Copy(std::string_view(bytes).substr(offset, n), pool));
    offset += n;
  }
  return slice;
}

void ParseFlat(benchmark::State& state, const std::string* wire) {
  google::protobuf::FileDescriptorProto message;
  for (auto _ : state) {
    if (!message.ParseFromArray(wire->data(), static_cast<int>(wire->size()))) std::abort();
    benchmark::DoNotOptimize(message);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire->size()));
}

void ParseSlice(benchmark::State& state, const std::string* wire, std::vector<size_t> chunks) {
  TieredBufferPool pool;
  BufferSlice slice = Chunked(*wire, chunks, pool);
  state.counters["buffers"] = static_cast<double>(slice.buffer_count());
  google::protobuf::FileDescriptorProto message;
  for (auto _ : state) {
    BufferSliceInputStream stream(slice);
    if (!message.ParseFromZeroCopyStream(&stream)) std::abort();
    benchmark::DoNotOptimize(message);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire->size()));
}

void SerializeFlat(benchmark::State& state, const std::string* wire) {
  google::protobuf::FileDescriptorProto message;
  message.ParseFromString(*wire);
  std::string out(message.ByteSizeLong(), '\0');
  for (auto _ : state) {
    message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data()));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire->size()));
}

void SerializeSlice(benchmark::State& state, const std::string* wire) {
  TieredBufferPool pool;
  google::protobuf::FileDescriptorProto message;
  message.ParseFromString(*wire);
  (void)message.ByteSizeLong();
  for (auto _ : state) {
    BufferSlice out;
    {
      BufferSliceOutputStream stream(&out, pool);
      google::protobuf::io::CodedOutputStream coded(&stream);
      message.SerializeWithCachedSizes(&coded);
    }
    benchmark::DoNotOptimize(out.size());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire->size()));
}

// --- ratios -------------------------------------------------------------------------------

// Prints the normal table, remembers each benchmark's CPU time per iteration (the median when
// repeated), and prints variant/baseline ratios at the end.
class RatioReporter final : public benchmark::ConsoleReporter {
 public:
  struct Pair {
    std::string family;
    std::string variant;
    std::string baseline;
  };
  RatioReporter(std::vector<Pair> pairs, OutputOptions options)
      : ConsoleReporter(options), pairs_(std::move(pairs)) {}

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
    for (const Pair& pair : pairs_) {
      for (size_t size : sizes_) {
        const double* variant = Find(Join({pair.family, pair.variant, SizeName(size)}));
        const double* baseline = Find(Join({pair.family, pair.baseline, SizeName(size)}));
        if (variant == nullptr || baseline == nullptr) continue;
        std::printf("  %-26s %-8s %-10s / %-8s = %6.3f\n", pair.family.c_str(),
                    SizeName(size).c_str(), pair.variant.c_str(), pair.baseline.c_str(),
                    *variant / *baseline);
      }
    }
    std::fflush(stdout);
  }

  void AddSize(size_t size) { sizes_.push_back(size); }

 private:
  const double* Find(const std::string& name) const {
    if (auto it = medians_.find(name); it != medians_.end()) return &it->second;
    if (auto it = times_.find(name); it != times_.end()) return &it->second;
    return nullptr;
  }

  std::vector<Pair> pairs_;
  std::vector<size_t> sizes_;
  std::map<std::string, double> times_;
  std::map<std::string, double> medians_;
};

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  using rill::SizeName;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  // Pools live for the whole run; each benchmark family has its own.
  static rill::TieredBufferPool get_put_pool;
  static rill::TieredBufferPool cross_pool;
  static rill::TieredBufferPool buffer_pool;
  static rill::HeapBufferPool heap_pool;

  for (size_t size : rill::kBlockSizes) {
    const std::string s = SizeName(size);
    benchmark::RegisterBenchmark(("get_put/same_thread/pool/" + s).c_str(),
                                 [size](benchmark::State& st) {
                                   rill::SameThreadGetPut(st, rill::PoolOps{&get_put_pool, size});
                                 });
    benchmark::RegisterBenchmark(
        ("get_put/same_thread/malloc/" + s).c_str(),
        [size](benchmark::State& st) { rill::SameThreadGetPut(st, rill::MallocOps{size}); });
  }
  for (size_t size : rill::kBlockSizes) {
    const std::string s = SizeName(size);
    const size_t batch = rill::BatchFor(size);
    benchmark::RegisterBenchmark(
        ("get_put/cross_thread/pool/" + s).c_str(),
        [size, batch](benchmark::State& st) {
          rill::CrossThreadGetPut(st, rill::PoolOps{&cross_pool, size}, batch);
        })
        ->MeasureProcessCPUTime();
    benchmark::RegisterBenchmark(("get_put/cross_thread/malloc/" + s).c_str(),
                                 [size, batch](benchmark::State& st) {
                                   rill::CrossThreadGetPut(st, rill::MallocOps{size}, batch);
                                 })
        ->MeasureProcessCPUTime();
  }
  for (size_t size : {size_t{4} << 10, size_t{64} << 10, size_t{1} << 20}) {
    const std::string s = SizeName(size);
    benchmark::RegisterBenchmark(
        ("buffer_alloc_free/tiered/" + s).c_str(),
        [size](benchmark::State& st) { rill::BufferAllocateFree(st, &buffer_pool, size); });
    benchmark::RegisterBenchmark(
        ("buffer_alloc_free/heap/" + s).c_str(),
        [size](benchmark::State& st) { rill::BufferAllocateFree(st, &heap_pool, size); });
  }
  for (size_t size : {size_t{64}, size_t{256}, size_t{1024}}) {
    const std::string s = SizeName(size);
    benchmark::RegisterBenchmark(
        ("small_alloc_free/rill/" + s).c_str(),
        [size](benchmark::State& st) { rill::BufferAllocateFree(st, &buffer_pool, size); });
    benchmark::RegisterBenchmark(
        ("small_alloc_free/malloc/" + s).c_str(),
        [size](benchmark::State& st) { rill::SameThreadGetPut(st, rill::MallocOps{size}); });
  }
  benchmark::RegisterBenchmark("buffer_ref_free",
                               [](benchmark::State& st) { rill::BufferRefFree(st, &buffer_pool); });

  static std::map<size_t, std::string> messages;
  const std::vector<size_t> odd_chunks = {1021, 4099, 16381, 8191, 2053, 12289, 777};
  for (size_t size : {size_t{1} << 10, size_t{64} << 10, size_t{1} << 20}) {
    const std::string* wire = &(messages[size] = rill::SerializedMessage(size));
    const std::string s = SizeName(size);
    benchmark::RegisterBenchmark(("parse/flat/" + s).c_str(),
                                 [wire](benchmark::State& st) { rill::ParseFlat(st, wire); });
    benchmark::RegisterBenchmark(("parse/slice_16k/" + s).c_str(), [wire](benchmark::State& st) {
      rill::ParseSlice(st, wire, {16 << 10});
    });
    benchmark::RegisterBenchmark(
        ("parse/slice_odd/" + s).c_str(),
        [wire, odd_chunks](benchmark::State& st) { rill::ParseSlice(st, wire, odd_chunks); });
    benchmark::RegisterBenchmark(("serialize/flat/" + s).c_str(),
                                 [wire](benchmark::State& st) { rill::SerializeFlat(st, wire); });
    benchmark::RegisterBenchmark(("serialize/slice/" + s).c_str(),
                                 [wire](benchmark::State& st) { rill::SerializeSlice(st, wire); });
  }

  // A reporter passed in ignores --benchmark_color: colour only on a terminal.
  const auto output = isatty(STDOUT_FILENO) != 0 ? benchmark::ConsoleReporter::OO_ColorTabular
                                                 : benchmark::ConsoleReporter::OO_Tabular;
  rill::RatioReporter reporter({{"get_put/same_thread", "pool", "malloc"},
                                {"get_put/cross_thread", "pool", "malloc"},
                                {"buffer_alloc_free", "tiered", "heap"},
                                {"small_alloc_free", "rill", "malloc"},
                                {"parse", "slice_16k", "flat"},
                                {"parse", "slice_odd", "flat"},
                                {"serialize", "slice", "flat"}},
                               output);
  for (size_t size : {size_t{64}, size_t{256}, size_t{1024}, size_t{4} << 10, size_t{16} << 10,
                      size_t{64} << 10, size_t{256} << 10, size_t{1} << 20}) {
    reporter.AddSize(size);
  }
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
