/* memcpy and memmove without SVE, to take glibc's SVE versions out of a process (diagnosis). */
typedef unsigned long size_t; typedef unsigned long uintptr_t; typedef unsigned long uint64_t;
void *memmove(void *d, const void *s, size_t n) {
  unsigned char *dp = d; const unsigned char *sp = s;
  if (dp == sp || n == 0) return d;
  if (dp < sp || dp >= sp + n) {
    while (n >= 8 && (((uintptr_t)dp | (uintptr_t)sp) & 7) == 0) { *(uint64_t *)dp = *(const uint64_t *)sp; dp += 8; sp += 8; n -= 8; }
    while (n--) *dp++ = *sp++;
  } else {
    dp += n; sp += n;
    while (n--) *--dp = *--sp;
  }
  return d;
}
void *memcpy(void *d, const void *s, size_t n) { return memmove(d, s, n); }
