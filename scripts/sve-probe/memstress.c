/* glibc's memcpy and memmove (on an SVE CPU: __memcpy_sve, __memmove_sve) against a
 * byte-by-byte reference, on the conditions a JS runtime's allocators make: copies
 * crossing page boundaries, into and out of pages never touched (the zero page, copy
 * on write) and pages given back with MADV_DONTNEED, two threads at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/auxv.h>

#define PAGES 512
#define PG 4096
static void *(*volatile mc)(void *, const void *, size_t) = memcpy;
static void *(*volatile mm)(void *, const void *, size_t) = memmove;
static long iters;
struct res { long bad, checked; char first[200]; };

static void *work(void *arg) {
  struct res *r = arg;
  unsigned seed = (unsigned)(uintptr_t)arg;
  uint8_t *a = mmap(0, PAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  uint8_t *ref = malloc(PAGES * PG);
  memset(ref, 0, PAGES * PG);
  for (long i = 0; i < iters; i++) {
    int op = rand_r(&seed) % 16;
    if (op == 0) { /* give a few pages back: they read as zero again */
      size_t p = rand_r(&seed) % (PAGES - 4), n = 1 + rand_r(&seed) % 4;
      madvise(a + p * PG, n * PG, MADV_DONTNEED);
      for (size_t k = p * PG; k < (p + n) * PG; k++) ref[k] = 0;
      continue;
    }
    if (op == 1) { /* fill some bytes */
      size_t o = rand_r(&seed) % (PAGES * PG - 4096), n = 1 + rand_r(&seed) % 4096;
      for (size_t k = 0; k < n; k++) { uint8_t v = (uint8_t)rand_r(&seed); a[o + k] = v; ref[o + k] = v; }
      continue;
    }
    size_t n = 1 + (op < 10 ? rand_r(&seed) % 256 : rand_r(&seed) % 4096);
    size_t s, d;
    if (rand_r(&seed) % 2) { /* around a page boundary */
      size_t pb = (1 + rand_r(&seed) % (PAGES - 3)) * PG;
      s = pb - rand_r(&seed) % 200; d = (1 + rand_r(&seed) % (PAGES - 3)) * PG - rand_r(&seed) % 200;
    } else { s = rand_r(&seed) % (PAGES * PG - 8192); d = rand_r(&seed) % (PAGES * PG - 8192); }
    int overlap = (s < d + n && d < s + n);
    if (overlap && op < 12) continue; /* memcpy: no overlap */
    if (op < 12) mc(a + d, a + s, n); else mm(a + d, a + s, n);
    if (d < s) for (size_t k = 0; k < n; k++) ref[d + k] = ref[s + k]; /* the reference: byte by byte */
    else for (size_t k = n; k-- > 0;) ref[d + k] = ref[s + k];
    r->checked++;
    for (size_t k = 0; k < n; k++) if (a[d + k] != ref[d + k]) {
      if (!r->bad++) snprintf(r->first, sizeof r->first, "%s n=%zu dst%%64=%zu src%%64=%zu dst-src=%ld byte %zu got %02x want %02x",
        op < 12 ? "memcpy" : "memmove", n, d % 64, s % 64, (long)d - (long)s, k, a[d + k], ref[d + k]);
      for (size_t j = 0; j < n; j++) a[d + j] = ref[d + j];
      break;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  iters = argc > 1 ? atol(argv[1]) : 200000;
  pthread_t t[2]; struct res r[2] = {0};
  for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, work, &r[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
  long bad = r[0].bad + r[1].bad;
  printf("memstress: HWCAP_SVE %d, %ld copies checked, %ld wrong%s%s\n", !!(getauxval(AT_HWCAP) & HWCAP_SVE),
         r[0].checked + r[1].checked, bad, bad ? ": first " : "", r[0].bad ? r[0].first : r[1].first);
  return bad != 0;
}
