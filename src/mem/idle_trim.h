// Giving idle buffer memory back to the system.
//
// Thread safety: call it on any thread; it trims that thread's caches (and every pool's shared
// caches), so each thread that allocates buffers should call it now and then — rill's reactor
// threads do, about once a second.
#ifndef RILL_SRC_MEM_IDLE_TRIM_H_
#define RILL_SRC_MEM_IDLE_TRIM_H_

#include <cstddef>

namespace rill::internal {

// Frees the calling thread's cached blocks of every TieredBufferPool it has not allocated from
// since its previous call, and the shared caches of every pool unused for a second; returns the
// bytes freed. When it freed anything, glibc's free heap pages go back too (malloc_trim).
size_t TrimIdleBufferCaches() noexcept;

}  // namespace rill::internal

#endif  // RILL_SRC_MEM_IDLE_TRIM_H_
