/* Whether this build runs under AddressSanitizer or MemorySanitizer (gcc's
 * __SANITIZE_ADDRESS__, clang's __has_feature): DSQ_SANITIZED is 1 then, else 0. Code
 * that reads past a buffer within its page, or allocates outside malloc, does neither
 * under them, so their checks cover it. */
#ifndef DSQ_SANITIZER_H
#define DSQ_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define DSQ_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define DSQ_SANITIZED 1
#endif
#endif
#ifndef DSQ_SANITIZED
#define DSQ_SANITIZED 0
#endif

#endif
