// Invariant checks. RILL_CHECK is always on; RILL_DCHECK only when RILL_DCHECK_IS_ON is 1
// (Debug builds, test builds and sanitizer builds). A failed check prints the message and the
// call site to stderr and aborts: a broken invariant is a bug, never an expected failure.
#ifndef RILL_DETAIL_CHECK_H_
#define RILL_DETAIL_CHECK_H_

#ifndef RILL_DCHECK_IS_ON
#define RILL_DCHECK_IS_ON 0
#endif

namespace rill::detail {

[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const char* message) noexcept;

}  // namespace rill::detail

#define RILL_PREDICT_FALSE(x) (__builtin_expect(static_cast<bool>(x), 0))
#define RILL_PREDICT_TRUE(x) (__builtin_expect(static_cast<bool>(x), 1))

#define RILL_CHECK_MSG(condition, message)                                  \
  do {                                                                      \
    if (RILL_PREDICT_FALSE(!(condition))) {                                 \
      ::rill::detail::CheckFailed(__FILE__, __LINE__, #condition, message); \
    }                                                                       \
  } while (false)

#define RILL_CHECK(condition) RILL_CHECK_MSG(condition, nullptr)

#if RILL_DCHECK_IS_ON
#define RILL_DCHECK_MSG(condition, message) RILL_CHECK_MSG(condition, message)
#else
#define RILL_DCHECK_MSG(condition, message) \
  do {                                      \
    if (false) {                            \
      (void)(condition);                    \
    }                                       \
  } while (false)
#endif
#define RILL_DCHECK(condition) RILL_DCHECK_MSG(condition, nullptr)

#endif  // RILL_DETAIL_CHECK_H_
