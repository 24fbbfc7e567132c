/*
 * copy_counter: an LD_PRELOAD library that counts the bytes a running process copies with
 * memcpy, memmove and mempcpy (and their _chk variants), to measure copies per payload byte.
 *
 *   COPY_COUNTER_FILE=/tmp/server.copies \
 *     LD_PRELOAD=build/release/bench/copy_counter/libcopy_counter.so ./server &
 *   od -An -t u8 -N 32 /tmp/server.copies     # read it twice and subtract
 *
 * What it sees: every call that goes through the dynamic linker, i.e. calls from the program
 * and from shared libraries (OpenSSL, protobuf, libstdc++) to glibc's copy functions. It does
 * not see copies a compiler inlined (small constant sizes), glibc's calls to itself, or copies
 * the kernel makes (send/recv). For payload-sized copies that is all of them: they are
 * variable-sized calls. It forwards to glibc's functions, found with dlsym(RTLD_NEXT) when
 * the library loads (a byte loop stands in until then).
 *
 * Counter file (COPY_COUNTER_FILE=path): created when missing and extended with zeros to 64
 * bytes, then mapped shared, so any process can read the counters at any time; never reset.
 * Layout, native-endian uint64 (alloc_counter's convention):
 *
 *   offset  0  bytes        bytes copied by all calls
 *   offset  8  calls        calls
 *   offset 16  large_bytes  bytes copied by calls of at least 4096 bytes (payload copies,
 *                           not frame headers and metadata)
 *   offset 24  large_calls  calls of at least 4096 bytes
 *
 * Without COPY_COUNTER_FILE, COPY_COUNTER_PRINT=1 prints the counters to stderr at exit.
 * Counters are relaxed atomic adds: exact, but they slow copy-heavy multithreaded programs; use
 * it for counting runs, not for timing ones. Thread-safe.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_COUNTER_FILE_SIZE 64
#define LARGE_COPY 4096

struct counters {
  uint64_t bytes;
  uint64_t calls;
  uint64_t large_bytes;
  uint64_t large_calls;
  uint64_t reserved[4];
};

static struct counters local_counters __attribute__((aligned(64)));
static struct counters* counters = &local_counters;

typedef void* (*copy_fn)(void*, const void*, size_t);
static copy_fn real_memcpy;
static copy_fn real_memmove;
static copy_fn real_mempcpy;

static inline void count(size_t n) {
  struct counters* c = __atomic_load_n(&counters, __ATOMIC_RELAXED);
  __atomic_fetch_add(&c->bytes, (uint64_t)n, __ATOMIC_RELAXED);
  __atomic_fetch_add(&c->calls, 1, __ATOMIC_RELAXED);
  if (n >= LARGE_COPY) {
    __atomic_fetch_add(&c->large_bytes, (uint64_t)n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->large_calls, 1, __ATOMIC_RELAXED);
  }
}

/* Until dlsym has answered: overlap-safe byte copies (volatile keeps the compiler from turning
 * them back into memmove calls). */
static void* slow_move(void* dst, const void* src, size_t n) {
  volatile unsigned char* d = dst;
  const unsigned char* s = src;
  if (d < s) {
    for (size_t i = 0; i < n; ++i) d[i] = s[i];
  } else {
    for (size_t i = n; i > 0; --i) d[i - 1] = s[i - 1];
  }
  return dst;
}

void* memcpy(void* dst, const void* src, size_t n) {
  count(n);
  copy_fn f = __atomic_load_n(&real_memcpy, __ATOMIC_RELAXED);
  return f ? f(dst, src, n) : slow_move(dst, src, n);
}

void* memmove(void* dst, const void* src, size_t n) {
  count(n);
  copy_fn f = __atomic_load_n(&real_memmove, __ATOMIC_RELAXED);
  return f ? f(dst, src, n) : slow_move(dst, src, n);
}

void* mempcpy(void* dst, const void* src, size_t n) {
  count(n);
  copy_fn f = __atomic_load_n(&real_mempcpy, __ATOMIC_RELAXED);
  if (f) return f(dst, src, n);
  return (unsigned char*)slow_move(dst, src, n) + n;
}

void* __memcpy_chk(void* dst, const void* src, size_t n, size_t dst_len) {
  if (n > dst_len) abort();
  return memcpy(dst, src, n);
}

void* __memmove_chk(void* dst, const void* src, size_t n, size_t dst_len) {
  if (n > dst_len) abort();
  return memmove(dst, src, n);
}

void* __mempcpy_chk(void* dst, const void* src, size_t n, size_t dst_len) {
  if (n > dst_len) abort();
  return mempcpy(dst, src, n);
}

static void print_at_exit(void) {
  fprintf(stderr, "copy_counter: bytes=%llu calls=%llu large_bytes=%llu large_calls=%llu\n",
          (unsigned long long)counters->bytes, (unsigned long long)counters->calls,
          (unsigned long long)counters->large_bytes, (unsigned long long)counters->large_calls);
}

__attribute__((constructor)) static void copy_counter_init(void) {
  __atomic_store_n(&real_memcpy, (copy_fn)dlsym(RTLD_NEXT, "memcpy"), __ATOMIC_RELAXED);
  __atomic_store_n(&real_memmove, (copy_fn)dlsym(RTLD_NEXT, "memmove"), __ATOMIC_RELAXED);
  __atomic_store_n(&real_mempcpy, (copy_fn)dlsym(RTLD_NEXT, "mempcpy"), __ATOMIC_RELAXED);
  const char* path = getenv("COPY_COUNTER_FILE");
  if (path != NULL && *path != '\0') {
    int fd = open(path, O_RDWR | O_CREAT, 0644);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 &&
        (st.st_size >= COPY_COUNTER_FILE_SIZE || ftruncate(fd, COPY_COUNTER_FILE_SIZE) == 0)) {
      void* mapped =
          mmap(NULL, COPY_COUNTER_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (mapped != MAP_FAILED) __atomic_store_n(&counters, mapped, __ATOMIC_RELAXED);
    }
    if (fd >= 0) close(fd);
  }
  const char* print = getenv("COPY_COUNTER_PRINT");
  if (print != NULL && strcmp(print, "1") == 0) atexit(print_at_exit);
}
