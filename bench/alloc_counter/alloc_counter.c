/*
 * alloc_counter: an LD_PRELOAD library that counts heap allocations of a running process.
 *
 *   ALLOC_COUNTER_FILE=/tmp/server.allocs \
 *     LD_PRELOAD=build/release/bench/alloc_counter/liballoc_counter.so ./server &
 *   python3 bench/alloc_counter/alloc_counter_read.py /tmp/server.allocs
 *
 * It interposes malloc, calloc, realloc, reallocarray, aligned_alloc, posix_memalign,
 * memalign, valloc, pvalloc and free, and forwards each to glibc's own entry points
 * (__libc_malloc and friends, so no dlsym bootstrap can recurse). C++ operator new reaches
 * malloc or aligned_alloc through libstdc++, so it is counted too.
 *
 * Counting rules: every call that asks for memory counts one allocation and the bytes it
 * asked for (calloc: nmemb * size; realloc: the new size), whether or not it succeeded;
 * free(NULL) counts nothing; realloc(p, 0) with p != NULL counts one free.
 *
 * Counter file (ALLOC_COUNTER_FILE=path): created when missing and extended with zeros to 64
 * bytes when shorter, then mapped shared, so any process can read the counters at any time.
 * The library never resets it: delete the file before starting the process, or subtract two
 * readings. Processes that share the file add up. Layout, native-endian (little-endian on
 * every platform rill supports), 8-byte aligned:
 *
 *   offset  0  uint64  allocs   allocation calls
 *   offset  8  uint64  bytes    bytes asked for by those calls
 *   offset 16  uint64  frees    free calls with a non-null pointer
 *   offset 24  40 bytes         reserved, zero
 *
 * Without ALLOC_COUNTER_FILE the counters live in the process; ALLOC_COUNTER_PRINT=1 prints
 * them to stderr at exit (for either kind).
 *
 * Counters are updated with relaxed atomic adds on one cache line: exact, but a contended
 * line slows allocation-heavy multithreaded programs a little. Thread-safe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ALLOC_COUNTER_FILE_SIZE 64

/* glibc's allocator, under the names it exports for exactly this kind of wrapper. */
extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t nmemb, size_t size);
extern void* __libc_realloc(void* ptr, size_t size);
extern void* __libc_memalign(size_t alignment, size_t size);
extern void* __libc_valloc(size_t size);
extern void* __libc_pvalloc(size_t size);
extern void __libc_free(void* ptr);

struct counters {
  uint64_t allocs;
  uint64_t bytes;
  uint64_t frees;
  uint64_t reserved[5];
};

/* Used until (and unless) the counter file is mapped; the file then starts where these are. */
static struct counters local_counters __attribute__((aligned(64)));
static struct counters* counters = &local_counters;

static inline struct counters* current(void) {
  return __atomic_load_n(&counters, __ATOMIC_RELAXED);
}

static inline void count_alloc(size_t size) {
  struct counters* c = current();
  __atomic_fetch_add(&c->allocs, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&c->bytes, (uint64_t)size, __ATOMIC_RELAXED);
}

static inline void count_free(void) {
  __atomic_fetch_add(&current()->frees, 1, __ATOMIC_RELAXED);
}

static int is_power_of_two(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

void* malloc(size_t size) {
  count_alloc(size);
  return __libc_malloc(size);
}

void free(void* ptr) {
  if (ptr != NULL) count_free();
  __libc_free(ptr);
}

void* calloc(size_t nmemb, size_t size) {
  size_t total = 0;
  if (__builtin_mul_overflow(nmemb, size, &total)) total = SIZE_MAX;
  count_alloc(total);
  return __libc_calloc(nmemb, size);
}

void* realloc(void* ptr, size_t size) {
  if (ptr != NULL && size == 0) {
    count_free();
  } else {
    count_alloc(size);
  }
  return __libc_realloc(ptr, size);
}

void* reallocarray(void* ptr, size_t nmemb, size_t size) {
  size_t total = 0;
  if (__builtin_mul_overflow(nmemb, size, &total)) {
    count_alloc(SIZE_MAX);
    errno = ENOMEM;
    return NULL;
  }
  return realloc(ptr, total);
}

void* memalign(size_t alignment, size_t size) {
  count_alloc(size);
  return __libc_memalign(alignment, size);
}

void* aligned_alloc(size_t alignment, size_t size) {
  count_alloc(size);
  if (!is_power_of_two(alignment)) {
    errno = EINVAL;
    return NULL;
  }
  return __libc_memalign(alignment, size);
}

int posix_memalign(void** memptr, size_t alignment, size_t size) {
  count_alloc(size);
  if (!is_power_of_two(alignment) || alignment % sizeof(void*) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (p == NULL) return ENOMEM;
  *memptr = p;
  return 0;
}

void* valloc(size_t size) {
  count_alloc(size);
  return __libc_valloc(size);
}

void* pvalloc(size_t size) {
  count_alloc(size);
  return __libc_pvalloc(size);
}

/* Maps the counter file; on any failure the in-process counters stay in use. */
static void map_counter_file(const char* path) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "alloc_counter: cannot open %s: %s\n", path, strerror(errno));
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 ||
      (st.st_size < ALLOC_COUNTER_FILE_SIZE && ftruncate(fd, ALLOC_COUNTER_FILE_SIZE) != 0)) {
    fprintf(stderr, "alloc_counter: cannot size %s: %s\n", path, strerror(errno));
    close(fd);
    return;
  }
  void* mapped =
      mmap(NULL, ALLOC_COUNTER_FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (mapped == MAP_FAILED) {
    fprintf(stderr, "alloc_counter: cannot map %s: %s\n", path, strerror(errno));
    return;
  }
  /* Allocations made before this point (by the loader and earlier constructors) carry over. */
  struct counters* file = mapped;
  __atomic_fetch_add(&file->allocs, __atomic_load_n(&local_counters.allocs, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
  __atomic_fetch_add(&file->bytes, __atomic_load_n(&local_counters.bytes, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
  __atomic_fetch_add(&file->frees, __atomic_load_n(&local_counters.frees, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
  __atomic_store_n(&counters, file, __ATOMIC_RELEASE);
}

static void print_counters(void) {
  struct counters* c = current();
  fprintf(stderr, "alloc_counter: allocs=%llu bytes=%llu frees=%llu\n",
          (unsigned long long)__atomic_load_n(&c->allocs, __ATOMIC_RELAXED),
          (unsigned long long)__atomic_load_n(&c->bytes, __ATOMIC_RELAXED),
          (unsigned long long)__atomic_load_n(&c->frees, __ATOMIC_RELAXED));
}

__attribute__((constructor)) static void alloc_counter_init(void) {
  const char* path = getenv("ALLOC_COUNTER_FILE");
  if (path != NULL && path[0] != '\0') map_counter_file(path);
  const char* print = getenv("ALLOC_COUNTER_PRINT");
  if (print != NULL && strcmp(print, "1") == 0) atexit(print_counters);
}
