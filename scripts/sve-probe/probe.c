/* Says which memcpy and memmove glibc's IFUNCs chose for this process (offsets in
 * libc.so.6), and nothing else (diagnosis of the arm64 SVE crash). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void probe(void) {
  Dl_info i;
  void *mc = dlsym(RTLD_DEFAULT, "memcpy"), *mm = dlsym(RTLD_DEFAULT, "memmove");
  char b[200];
  if (dladdr(mc, &i)) {
    int n = snprintf(b, sizeof b, "probe: memcpy at libc+0x%lx, memmove at libc+0x%lx (%s)\n",
      (unsigned long)((char *)mc - (char *)i.dli_fbase), (unsigned long)((char *)mm - (char *)i.dli_fbase), i.dli_fname);
    (void)!write(2, b, n);
  }
}
