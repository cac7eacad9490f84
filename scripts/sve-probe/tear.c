/* Can another thread see a 64-bit word half written while glibc's memcpy copies over
 * it? One thread copies whole buffers of aligned 64-bit words (every word of a buffer
 * the same value, a different value each copy) with memcpy; another reads the
 * destination's words and checks that each is one of the values written, never a mix
 * of two (a torn word). A JavaScript engine's concurrent threads (its compiler, its
 * collector) read words that its main thread may be copying. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/auxv.h>

#define WORDS 32
static uint64_t dst[WORDS] __attribute__((aligned(64)));
static volatile int done;
static void *(*volatile mc)(void *, const void *, size_t) = memcpy;
static long copies;
static size_t nwords = WORDS;

static int valid(uint64_t v) { /* each value is a byte repeated: 0x0101..., 0x0202..., ... */
  uint8_t b = (uint8_t)v;
  return v == 0x0101010101010101ull * b;
}

static void *writer(void *arg) {
  (void)arg;
  uint64_t src[WORDS];
  for (unsigned k = 1; !done; k++) {
    uint64_t v = 0x0101010101010101ull * (uint8_t)(k % 255 + 1);
    for (int i = 0; i < WORDS; i++) src[i] = v;
    mc(dst, src, nwords * 8);
    copies++;
  }
  return 0;
}

int main(int argc, char **argv) {
  long reads = argc > 1 ? atol(argv[1]) : 20000000;
  if (argc > 2) nwords = (size_t)atoi(argv[2]);
  if (nwords < 1 || nwords > WORDS) nwords = WORDS;
  for (int i = 0; i < WORDS; i++) dst[i] = 0x0101010101010101ull;
  pthread_t t;
  pthread_create(&t, 0, writer, 0);
  long torn = 0; uint64_t example = 0;
  for (long r = 0; r < reads; r++) {
    uint64_t v = __atomic_load_n(&dst[r % nwords], __ATOMIC_RELAXED);
    if (!valid(v)) { if (!torn++) example = v; }
  }
  done = 1;
  pthread_join(t, 0);
  printf("tear: HWCAP_SVE %d, %ld copies of %zu bytes, %ld word reads, %ld torn words%s",
         !!(getauxval(AT_HWCAP) & HWCAP_SVE), copies, nwords * 8, reads, torn, torn ? "" : "\n");
  if (torn) printf(" (e.g. 0x%016llx): memcpy's 64-bit words are not single-copy atomic here\n", (unsigned long long)example);
  return torn != 0;
}
