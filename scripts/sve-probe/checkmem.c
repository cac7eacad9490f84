/* memcpy and memmove that call glibc's (the IFUNC's choice: __memcpy_sve and
 * __memmove_sve on an SVE CPU) and check the result against a byte-by-byte copy
 * (diagnosis of the arm64 SVE crash). Each wrong result is reported on stderr with its
 * size, alignments and first differing byte, and mended; memcpy calls whose buffers
 * overlap (undefined behaviour) are counted and the first few reported with their
 * caller; both are copied with memmove semantics. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

typedef void *(*copy_fn)(void *, const void *, size_t);
static copy_fn real_memcpy, real_memmove;
static long wrong, overlaps, racy;
static _Thread_local int busy;

static void put(const char *s) { size_t n = 0; while (s[n]) n++; (void)!write(2, s, n); }
static void putnum(const char *label, unsigned long v, int hex) {
  char b[32]; int i = 31; b[i] = 0;
  do { b[--i] = "0123456789abcdef"[v % (hex ? 16 : 10)]; v /= hex ? 16 : 10; } while (v);
  if (hex) { b[--i] = 'x'; b[--i] = '0'; }
  put(label); put(b + i);
}
static void init(void) {
  if (!real_memcpy) real_memcpy = (copy_fn)dlsym(RTLD_NEXT, "memcpy");
  if (!real_memmove) real_memmove = (copy_fn)dlsym(RTLD_NEXT, "memmove");
}
__attribute__((constructor)) static void announce(void) {
  init();
  put("checkmem: loaded; memcpy at "); putnum("", (unsigned long)real_memcpy, 1);
  putnum(" memmove at ", (unsigned long)real_memmove, 1); put("\n");
}
static void bytes(uint8_t *d, const uint8_t *s, size_t n) {
  if (d < s) for (size_t i = 0; i < n; i++) d[i] = s[i];
  else for (size_t i = n; i-- > 0;) d[i] = s[i];
}
static void *checked(const char *what, copy_fn real, void *d, const void *s, size_t n, void *caller) {
  if (!real || busy || n == 0 || n > 4096) { if (!real) bytes(d, s, n); else real(d, s, n); return d; }
  busy = 1;
  uint8_t want[4096];
  for (size_t i = 0; i < n; i++) want[i] = ((const uint8_t *)s)[i];
  real(d, s, n);
  size_t bad = n;
  for (size_t i = 0; i < n; i++) if (((uint8_t *)d)[i] != want[i]) { bad = i; break; }
  /* A byte that differs from the snapshot but equals the source as it is now was
   * changed by another thread during the copy (a racy source), not copied wrong. */
  if (bad < n && d != s && ((uint8_t *)d)[bad] == ((const uint8_t *)s)[bad]) {
    if (racy++ < 20) {
      putnum("checkmem: source changed during the copy: n=", n, 0); put(" "); put(what);
      putnum(" byte ", bad, 0); putnum(" caller ", (unsigned long)caller, 1); put("\n");
    }
    busy = 0;
    return d;
  }
  if (bad < n) {
    if (wrong++ < 20) {
      put("checkmem: WRONG "); put(what); putnum(" n=", n, 0); putnum(" dst%64=", (uintptr_t)d % 64, 0);
      putnum(" src%64=", (uintptr_t)s % 64, 0); putnum(" first differing byte ", bad, 0);
      putnum(" got ", ((uint8_t *)d)[bad], 1); putnum(" want ", want[bad], 1);
      putnum(" dst-src=", (unsigned long)((uint8_t *)d - (const uint8_t *)s), 1); putnum(" caller ", (unsigned long)caller, 1); put("\n");
    }
    for (size_t i = 0; i < n; i++) ((uint8_t *)d)[i] = want[i];
  }
  busy = 0;
  return d;
}
void *memcpy(void *d, const void *s, size_t n) {
  init();
  const uint8_t *a = d, *b = s;
  if (n && a < b + n && b < a + n && a != b) {
    if (overlaps++ < 20) { putnum("checkmem: overlapping memcpy n=", n, 0); putnum(" dst-src=", (unsigned long)(a - b), 1); putnum(" caller ", (unsigned long)__builtin_return_address(0), 1); put("\n"); }
    return checked("memcpy(overlap)", real_memmove, d, s, n, __builtin_return_address(0));
  }
  return checked("memcpy", real_memcpy, d, s, n, __builtin_return_address(0));
}
void *memmove(void *d, const void *s, size_t n) {
  init();
  return checked("memmove", real_memmove, d, s, n, __builtin_return_address(0));
}
