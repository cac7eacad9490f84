/* Where does glibc's memcpy, given overlapping buffers (undefined behaviour), give a
 * result other than memmove's? Prints the (n, dst-src) ranges that differ. */
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/auxv.h>
static void *(*volatile mc)(void *, const void *, size_t) = memcpy;
int main(void) {
  static uint8_t a[8192], b[8192];
  long diff = 0; int shown = 0;
  int minn = 1 << 30, maxn = 0;
  for (int n = 1; n <= 1024; n++)
    for (int off = -256; off <= 256; off++) {
      if (off == 0 || (off > 0 ? off : -off) >= n) continue;
      for (int i = 0; i < 8192; i++) a[i] = b[i] = (uint8_t)(i * 7 + 3);
      uint8_t *s1 = a + 2048, *s2 = b + 2048;
      mc(s1 + off, s1, n);
      /* reference memmove, byte by byte */
      if (off < 0) for (int k = 0; k < n; k++) s2[off + k] = s2[k]; else for (int k = n; k-- > 0;) s2[off + k] = s2[k];
      if (memcmp(a, b, sizeof a)) { diff++; if (n < minn) minn = n; if (n > maxn) maxn = n; if (shown++ < 6) printf("differs: n=%d dst-src=%d\n", n, off); }
    }
  printf("overlap: HWCAP_SVE %d: %ld of the overlapping (n <= 1024, |dst-src| <= 256) memcpy calls differ from memmove; n from %d to %d\n",
    !!(getauxval(AT_HWCAP) & HWCAP_SVE), diff, diff ? minn : 0, maxn);
  return 0;
}
