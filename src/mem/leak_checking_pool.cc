#include "rill/mem/leak_checking_pool.h"

#include <cxxabi.h>
#include <execinfo.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "src/mem/block_memory.h"

namespace rill {
namespace {

constexpr int kMaxFrames = 32;
// Frames printed per stack in a report.
constexpr int kPrintedFrames = 16;
// Released blocks stay poisoned (and, under AddressSanitizer, unaddressable) in a quarantine of
// this many blocks or bytes before they are really freed, so that a late access or a second
// release of a recently released block is recognized.
constexpr size_t kQuarantineBlocks = 4096;
constexpr size_t kQuarantineBytes = 64 << 20;

struct Stack {
  std::array<void*, kMaxFrames> frames{};
  int depth = 0;

  // Captures the caller's stack, leaving out this function's frame and the caller's.
  [[gnu::noinline]] static Stack Capture() {
    Stack stack;
    void* raw[kMaxFrames + 2];
    const int depth = backtrace(raw, kMaxFrames + 2);
    const int skip = std::min(depth, 2);
    stack.depth = depth - skip;
    std::copy(raw + skip, raw + depth, stack.frames.begin());
    return stack;
  }

  friend bool operator<(const Stack& a, const Stack& b) {
    return std::lexicographical_compare(a.frames.begin(), a.frames.begin() + a.depth,
                                        b.frames.begin(), b.frames.begin() + b.depth);
  }
};

// "  #1 rill::Buffer::Allocate(unsigned long, rill::BufferPool&)" lines, one per frame.
void PrintStack(std::ostream& out, const Stack& stack) {
  const int depth = std::min(stack.depth, kPrintedFrames);
  char** symbols = backtrace_symbols(stack.frames.data(), depth);
  for (int i = 0; i < depth; ++i) {
    out << "    #" << i << ' ';
    const char* line = symbols != nullptr ? symbols[i] : nullptr;
    if (line == nullptr) {
      out << stack.frames[i] << '\n';
      continue;
    }
    // glibc prints "object(mangled+0x1f) [0xaddress]"; demangle the name when there is one.
    const char* open = std::strchr(line, '(');
    const char* plus = open != nullptr ? std::strchr(open, '+') : nullptr;
    if (open != nullptr && plus != nullptr && plus > open + 1) {
      std::string mangled(open + 1, plus);
      int status = 0;
      char* demangled = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
      out << (status == 0 && demangled != nullptr ? demangled : mangled.c_str());
      std::free(demangled);  // allocated by the demangler
      out << "  [" << std::string_view(line, open) << "]\n";
    } else {
      out << line << '\n';
    }
  }
  if (stack.depth > depth) out << "    ...\n";
  std::free(symbols);  // allocated by backtrace_symbols
}

struct LiveBlock {
  uint64_t serial;
  size_t capacity;
  Stack taken_at;
};

}  // namespace

struct LeakCheckingBufferPool::State {
  mutable std::mutex mu;
  uint64_t next_serial = 1;                                  // guarded by mu
  std::unordered_map<detail::BlockHeader*, LiveBlock> live;  // guarded by mu
  uint64_t bytes_out = 0;                                    // guarded by mu
  uint64_t allocations = 0;                                  // guarded by mu
  // Blocks that were out at a CheckAndReset: already reported; releasing them later is fine.
  std::unordered_set<detail::BlockHeader*> abandoned;    // guarded by mu
  std::deque<detail::BlockHeader*> quarantine;           // guarded by mu
  std::unordered_set<detail::BlockHeader*> quarantined;  // guarded by mu
  size_t quarantine_bytes = 0;                           // guarded by mu
  std::vector<std::string> problems;                     // guarded by mu
};

LeakCheckingBufferPool::LeakCheckingBufferPool() : state_(std::make_unique<State>()) {}

LeakCheckingBufferPool::~LeakCheckingBufferPool() {
  std::lock_guard lock(state_->mu);
  for (detail::BlockHeader* block : state_->quarantine) DeleteBlock(block);
  // Blocks still out are left alone: someone may still use them.
}

detail::BlockHeader* LeakCheckingBufferPool::AllocateBlock(size_t size) {
  Stack stack = Stack::Capture();
  detail::BlockHeader* block = NewBlock(size);
  std::lock_guard lock(state_->mu);
  const uint64_t serial = state_->next_serial++;
  block->pool_tag = static_cast<uint32_t>(serial);
  state_->live.emplace(block, LiveBlock{serial, size, stack});
  state_->bytes_out += size;
  ++state_->allocations;
  return block;
}

void LeakCheckingBufferPool::ReleaseBlock(detail::BlockHeader* block) noexcept {
  State& state = *state_;
  std::vector<detail::BlockHeader*> to_delete;
  {
    std::lock_guard lock(state.mu);
    size_t capacity = 0;
    if (auto it = state.live.find(block); it != state.live.end()) {
      capacity = it->second.capacity;
      state.bytes_out -= capacity;
      state.live.erase(it);
    } else if (state.abandoned.erase(block) != 0) {
      capacity = block->capacity;
    } else {
      // Never dereferenced: it may not be a block at all.
      std::ostringstream out;
      if (state.quarantined.count(block) != 0) {
        out << "double release of block " << static_cast<const void*>(block) << " ("
            << block->capacity << " bytes), released again at:\n";
      } else {
        out << "release of " << static_cast<const void*>(block)
            << ", a block this pool never handed out, at:\n";
      }
      PrintStack(out, Stack::Capture());
      state.problems.push_back(out.str());
      return;
    }
    // Poisoned in every build: a stale reader sees 0xDD, never the old payload.
    block->magic = detail::kFreedMagic;
    ++block->generation;
    std::memset(block->data(), internal::kPoisonByte, capacity);
    RILL_ASAN_POISON(block->data(), capacity);
    state.quarantine.push_back(block);
    state.quarantined.insert(block);
    state.quarantine_bytes += capacity;
    while (state.quarantine.size() > kQuarantineBlocks ||
           (state.quarantine_bytes > kQuarantineBytes && state.quarantine.size() > 1)) {
      detail::BlockHeader* oldest = state.quarantine.front();
      state.quarantine.pop_front();
      state.quarantined.erase(oldest);
      state.quarantine_bytes -= oldest->capacity;
      to_delete.push_back(oldest);
    }
  }
  for (detail::BlockHeader* old : to_delete) DeleteBlock(old);
}

BufferPoolStats LeakCheckingBufferPool::Stats() const {
  std::lock_guard lock(state_->mu);
  BufferPoolStats stats;
  stats.blocks_out = state_->live.size();
  stats.bytes_out = state_->bytes_out;
  stats.misses = state_->allocations;
  return stats;
}

std::string LeakCheckingBufferPool::CheckAndReset() {
  std::lock_guard lock(state_->mu);
  State& state = *state_;
  std::ostringstream out;
  if (!state.live.empty()) {
    struct Group {
      size_t blocks = 0;
      size_t bytes = 0;
      uint64_t first_serial = 0;
    };
    std::map<Stack, Group> groups;
    for (const auto& [block, live] : state.live) {
      Group& group = groups[live.taken_at];
      ++group.blocks;
      group.bytes += live.capacity;
      if (group.first_serial == 0 || live.serial < group.first_serial) {
        group.first_serial = live.serial;
      }
      state.abandoned.insert(block);
    }
    std::vector<std::pair<const Stack*, Group>> ordered;
    ordered.reserve(groups.size());
    for (const auto& [stack, group] : groups) ordered.emplace_back(&stack, group);
    std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
      return a.second.first_serial < b.second.first_serial;
    });
    out << state.live.size() << " buffer block(s) never released, from " << groups.size()
        << " call stack(s):\n";
    for (const auto& [stack, group] : ordered) {
      out << "  " << group.blocks << " block(s), " << group.bytes << " bytes, taken at:\n";
      PrintStack(out, *stack);
    }
    state.live.clear();
    state.bytes_out = 0;
  }
  for (const std::string& problem : state.problems) out << problem;
  state.problems.clear();
  return out.str();
}

}  // namespace rill
