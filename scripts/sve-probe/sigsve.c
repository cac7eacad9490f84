/* Are a thread's SVE registers kept across the signals it takes? One thread fills
 * z0-z31 with known bytes, spins (no memory access, no system call: only preemption and
 * signals can touch its registers), stores z0-z31 and checks every byte; other threads
 * send it signals whose handler overwrites every z register and copies with glibc's
 * memcpy (SVE on an SVE CPU). The kernel must give the interrupted code its registers
 * back as they were. Prints the rounds, the signals taken and the rounds with a wrong
 * byte. Needs SVE (exits 2 without). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

static volatile long signals;
static pthread_t target;
static volatile int done;
static char scratch[2][256];

static void handler(int s) {
  (void)s;
  __asm__ volatile(
    "dup z0.b, #-1\n"
    "dup z1.b, #-1\n"
    "dup z2.b, #-1\n"
    "dup z3.b, #-1\n"
    "dup z4.b, #-1\n"
    "dup z5.b, #-1\n"
    "dup z6.b, #-1\n"
    "dup z7.b, #-1\n"
    "dup z8.b, #-1\n"
    "dup z9.b, #-1\n"
    "dup z10.b, #-1\n"
    "dup z11.b, #-1\n"
    "dup z12.b, #-1\n"
    "dup z13.b, #-1\n"
    "dup z14.b, #-1\n"
    "dup z15.b, #-1\n"
    "dup z16.b, #-1\n"
    "dup z17.b, #-1\n"
    "dup z18.b, #-1\n"
    "dup z19.b, #-1\n"
    "dup z20.b, #-1\n"
    "dup z21.b, #-1\n"
    "dup z22.b, #-1\n"
    "dup z23.b, #-1\n"
    "dup z24.b, #-1\n"
    "dup z25.b, #-1\n"
    "dup z26.b, #-1\n"
    "dup z27.b, #-1\n"
    "dup z28.b, #-1\n"
    "dup z29.b, #-1\n"
    "dup z30.b, #-1\n"
    "dup z31.b, #-1\n"
    ::: "z0", "z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9", "z10", "z11", "z12", "z13", "z14", "z15", "z16", "z17", "z18", "z19", "z20", "z21", "z22", "z23", "z24", "z25", "z26", "z27", "z28", "z29", "z30", "z31");
  memcpy(scratch[0], scratch[1], 1 + (signals & 127));
  signals++;
}

static void *sender(void *arg) {
  (void)arg;
  while (!done) { pthread_kill(target, SIGUSR1); for (volatile int i = 0; i < 2000; i++) { } }
  return 0;
}

int main(int argc, char **argv) {
  if (!(getauxval(AT_HWCAP) & HWCAP_SVE)) { printf("sigsve: no SVE\n"); return 2; }
  long rounds = argc > 1 ? atol(argv[1]) : 20000;
  int vl = prctl(PR_SVE_GET_VL) & 0xffff;
  unsigned char *buf = aligned_alloc(64, 32 * 256);
  struct sigaction sa = { 0 };
  sa.sa_handler = handler;
  sigaction(SIGUSR1, &sa, 0);
  target = pthread_self();
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], 0, sender, 0);
  long bad = 0; int shown = 0;
  for (long r = 0; r < rounds; r++) {
    memset(buf, 0x55, 32 * vl);
    __asm__ volatile(
    "dup z0.b, #0\n"
    "dup z1.b, #3\n"
    "dup z2.b, #6\n"
    "dup z3.b, #9\n"
    "dup z4.b, #12\n"
    "dup z5.b, #15\n"
    "dup z6.b, #18\n"
    "dup z7.b, #21\n"
    "dup z8.b, #24\n"
    "dup z9.b, #27\n"
    "dup z10.b, #30\n"
    "dup z11.b, #33\n"
    "dup z12.b, #36\n"
    "dup z13.b, #39\n"
    "dup z14.b, #42\n"
    "dup z15.b, #45\n"
    "dup z16.b, #48\n"
    "dup z17.b, #51\n"
    "dup z18.b, #54\n"
    "dup z19.b, #57\n"
    "dup z20.b, #60\n"
    "dup z21.b, #63\n"
    "dup z22.b, #66\n"
    "dup z23.b, #69\n"
    "dup z24.b, #72\n"
    "dup z25.b, #75\n"
    "dup z26.b, #78\n"
    "dup z27.b, #81\n"
    "dup z28.b, #84\n"
    "dup z29.b, #87\n"
    "dup z30.b, #90\n"
    "dup z31.b, #93\n"
    "mov x9, #20000\n"
    "1: subs x9, x9, #1\n b.ne 1b\n"
    "ptrue p0.b\n mov x10, %[buf]\n"
    "st1b {z0.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z1.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z2.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z3.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z4.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z5.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z6.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z7.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z8.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z9.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z10.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z11.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z12.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z13.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z14.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z15.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z16.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z17.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z18.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z19.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z20.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z21.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z22.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z23.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z24.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z25.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z26.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z27.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z28.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z29.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z30.b}, p0, [x10]\n addvl x10, x10, #1\n"
    "st1b {z31.b}, p0, [x10]\n addvl x10, x10, #1\n"
    :: [buf] "r"(buf) : "x9", "x10", "p0", "memory", "z0", "z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9", "z10", "z11", "z12", "z13", "z14", "z15", "z16", "z17", "z18", "z19", "z20", "z21", "z22", "z23", "z24", "z25", "z26", "z27", "z28", "z29", "z30", "z31");
    for (int z = 0; z < 32; z++) for (int b = 0; b < vl; b++)
      if (buf[z * vl + b] != (unsigned char)(z * 3)) {
        if (shown++ < 5) printf("sigsve: round %ld: z%d byte %d is 0x%02x, want 0x%02x\n", r, z, b, buf[z * vl + b], (unsigned char)(z * 3));
        bad++; z = 32; break;
      }
  }
  done = 1;
  for (int i = 0; i < 2; i++) pthread_join(t[i], 0);
  printf("sigsve: vector length %d bytes, %ld rounds, %ld signals taken, %ld rounds with a wrong register byte: %s\n",
    vl, rounds, signals, bad, bad ? "REGISTERS CHANGED" : "every register kept");
  return bad != 0;
}
