/* Code written by one thread with glibc's memcpy (the way a JIT's compiler thread
 * copies finished code into executable memory), run by another thread after a release/
 * acquire handoff and the cache maintenance, into slots of one RWX region that are
 * reused over and over (a JIT's executable allocator reuses freed code memory).
 * Each function is `mov w0, #0; add w0, w0, #1 (N times); ret` and must return N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/auxv.h>

#define REGION (64 * 1024)
#define SLOTS 64
typedef int (*fn)(void);
static uint8_t *region;
static _Atomic int ready_slot = -1, done_slot = -1;
static int expect[SLOTS];
static void *(*volatile libc_memcpy)(void *, const void *, size_t) = memcpy;
static int rounds;
static long stale;

static void *writer(void *arg) {
  (void)arg;
  uint32_t buf[1024];
  unsigned seed = 1;
  for (int r = 0; r < rounds; r++) {
    int slot = r % SLOTS;
    int n = 1 + (rand_r(&seed) % 200);          /* 8 .. 808 bytes of code */
    buf[0] = 0x52800000u;                         /* mov w0, #0 */
    for (int i = 1; i <= n; i++) buf[i] = 0x11000400u; /* add w0, w0, #1 */
    buf[n + 1] = 0xd65f03c0u;                     /* ret */
    uint8_t *dst = region + slot * (REGION / SLOTS);
    libc_memcpy(dst, buf, (n + 2) * 4);
    __builtin___clear_cache((char *)dst, (char *)dst + (n + 2) * 4);
    expect[slot] = n;
    __atomic_store_n(&ready_slot, r, __ATOMIC_RELEASE);
    while (__atomic_load_n(&done_slot, __ATOMIC_ACQUIRE) != r) { }
  }
  return 0;
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? atoi(argv[1]) : 20000;
  region = mmap(0, REGION, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  pthread_t t;
  pthread_create(&t, 0, writer, 0);
  for (int r = 0; r < rounds; r++) {
    while (__atomic_load_n(&ready_slot, __ATOMIC_ACQUIRE) != r) { }
    int slot = r % SLOTS;
    __asm__ volatile("isb" ::: "memory");
    int got = ((fn)(region + slot * (REGION / SLOTS)))();
    if (got != expect[slot]) { if (stale < 5) printf("smc2: round %d slot %d returned %d, expected %d\n", r, slot, got, expect[slot]); stale++; }
    __atomic_store_n(&done_slot, r, __ATOMIC_RELEASE);
  }
  pthread_join(t, 0);
  printf("smc2: HWCAP_SVE %d rounds %d stale %ld: %s\n", !!(getauxval(AT_HWCAP) & HWCAP_SVE), rounds, stale, stale ? "STALE CODE RAN" : "every call ran the code just written");
  return stale != 0;
}
