// LeakCheckingBufferPool: the pool every rill test runs with.
//
// It records the call stack of each block it hands out. At the end of a test the test main
// calls CheckAndReset(): blocks still out are reported with their stacks and fail the test.
// Releasing a block twice or releasing a block it never handed out is reported the same way.
// Released blocks are poisoned (filled with 0xDD) so a stale reader sees garbage, not data,
// and under AddressSanitizer they are quarantined and marked unaddressable.
//
//   rill::LeakCheckingBufferPool pool;
//   rill::SetDefaultBufferPool(&pool);
//   ... run the test ...
//   std::string report = pool.CheckAndReset();   // empty when clean
//
// Thread safety: thread-safe.
#ifndef RILL_MEM_LEAK_CHECKING_POOL_H_
#define RILL_MEM_LEAK_CHECKING_POOL_H_

#include <memory>
#include <string>

#include "rill/mem/buffer_pool.h"

namespace rill {

class LeakCheckingBufferPool final : public BufferPool {
 public:
  LeakCheckingBufferPool();
  ~LeakCheckingBufferPool() override;
  LeakCheckingBufferPool(const LeakCheckingBufferPool&) = delete;
  LeakCheckingBufferPool& operator=(const LeakCheckingBufferPool&) = delete;

  detail::BlockHeader* AllocateBlock(size_t size) override;
  void ReleaseBlock(detail::BlockHeader* block) noexcept override;
  BufferPoolStats Stats() const override;

  // Returns a report of every problem seen since the last call (blocks still out with the
  // stacks that took them, double releases, foreign releases) and forgets the blocks still out
  // (they are not freed: a leaked block might still be in use). Empty when there is nothing.
  std::string CheckAndReset();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace rill

#endif  // RILL_MEM_LEAK_CHECKING_POOL_H_
