/* Does code rewritten with a store instruction run as rewritten (after the cache
 * maintenance a JIT does)? Rewrites `mov w0, #N; ret` in an RWX page N times and
 * calls it after each rewrite, with three kinds of store:
 *   libc:  glibc's memcpy of 4 bytes (on an SVE CPU glibc 2.36 picks __memcpy_sve);
 *   sve:   one SVE st1b of 4 bytes (whilelo/ld1b/st1b, as __memcpy_sve's short path);
 *   plain: one 32-bit str.
 * Prints, per kind, how many calls returned a value other than the one just written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

typedef int (*fn)(void);
static uint32_t mov(int v) { return 0x52800000u | ((uint32_t)(v & 0xffff) << 5); }
static void *(*volatile libc_memcpy)(void *, const void *, size_t) = memcpy;

__attribute__((target("+sve"), noinline))
static void sve_copy(void *d, const void *s, size_t n) {
  __asm__ volatile("whilelo p0.b, xzr, %2\n\tld1b {z0.b}, p0/z, [%1]\n\tst1b {z0.b}, p0, [%0]"
                   :: "r"(d), "r"(s), "r"(n) : "memory", "z0", "p0");
}
__attribute__((noinline)) static void plain_copy(void *d, const void *s, size_t n) {
  (void)n; *(volatile uint32_t *)d = *(const uint32_t *)s;
}

static int run(const char *kind, void (*copy)(void *, const void *, size_t), int rounds) {
  uint32_t *p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) { perror("mmap"); return -1; }
  p[0] = mov(1); p[1] = 0xd65f03c0u; /* ret */
  __builtin___clear_cache((char *)p, (char *)p + 8);
  int stale = 0, first = -1;
  for (int i = 2; i < rounds + 2; i++) {
    (void)((fn)p)();                       /* run the old code: it is translated now */
    uint32_t ins = mov(i);
    copy(p, &ins, 4);
    __builtin___clear_cache((char *)p, (char *)p + 4);
    int r = ((fn)p)();
    if (r != (i & 0xffff)) { stale++; if (first < 0) first = i; }
  }
  printf("smc %-5s rounds %d stale %d%s", kind, rounds, stale, stale ? "" : "\n");
  if (stale) printf(" (first at %d)\n", first);
  munmap(p, 4096);
  return stale;
}

static void libc_copy(void *d, const void *s, size_t n) { libc_memcpy(d, s, n); }

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 10000;
  unsigned long hw = getauxval(AT_HWCAP);
  int sve = !!(hw & HWCAP_SVE);
  printf("smc: HWCAP_SVE %d", sve);
  if (sve) printf(" vector length %d bytes", prctl(PR_SVE_GET_VL) & 0xffff);
  printf("\n");
  int bad = 0;
  bad += run("plain", plain_copy, rounds);
  bad += run("libc", libc_copy, rounds);
  if (sve) bad += run("sve", sve_copy, rounds);
  printf("smc: %s\n", bad ? "STALE CODE RAN" : "every call ran the code just written");
  return bad ? 1 : 0;
}
