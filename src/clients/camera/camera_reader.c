/*
 * camera_reader: an example C client of the camera's shared memory. It attaches
 * the System V segment of a key (startCamera with params.type "sysvshm") or maps
 * an inherited POSIX fd (getFd type "buffer"), reads N frames and prints one line
 * per frame: "frame <n> seq <device sequence> bytes <size> ts <microseconds>",
 * then "lost <count>".
 *
 *   cc -O2 -o camera_reader camera_reader.c
 *   camera_reader key <KEY> <N>   |   camera_reader fd <FD> <N>
 *
 * It waits by polling write_index every 2 ms; a client that has the eventfd from
 * getFd type "event" polls that fd for POLLIN instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <time.h>
#include "camera_shm.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s key|fd <KEY|FD> <N>\n", argv[0]);
    return 2;
  }
  const void *base;
  if (strcmp(argv[1], "key") == 0) {
    int id = shmget((key_t)strtol(argv[2], NULL, 0), 0, 0);
    if (id < 0) { perror("shmget"); return 1; }
    base = shmat(id, NULL, SHM_RDONLY);
    if (base == (void *)-1) { perror("shmat"); return 1; }
  } else {
    int fd = atoi(argv[2]);
    struct stat st;
    if (fstat(fd, &st) < 0) { perror("fstat"); return 1; }
    base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) { perror("mmap"); return 1; }
  }
  if (!camera_ring_valid(base)) { fprintf(stderr, "not a camera ring\n"); return 1; }
  const struct camera_ring_header *h = base;
  printf("ring %ux%u fourcc %.4s fps %.3f slots %u\n", h->width, h->height, (const char *)&h->fourcc, h->fps_milli / 1000.0, h->slot_count);
  size_t cap = h->slot_size;
  unsigned char *buf = malloc(cap);
  uint32_t next = camera_ring_write_index(base); /* from now on */
  long want = atol(argv[3]), got = 0, lost = 0;
  struct timespec pause = { 0, 2 * 1000 * 1000 };
  for (int idle = 0; got < want && idle < 5000; ) {
    struct camera_frame f;
    int r = camera_ring_read(base, &next, buf, cap, &f);
    if (r == 1) {
      printf("frame %u seq %u bytes %u ts %llu\n", f.frame, f.device_sequence, f.bytesused, (unsigned long long)f.timestamp_us);
      got++;
      idle = 0;
    } else if (r == -1) {
      lost++;
    } else if (r == 0) {
      if (h->flags & CAMERA_RING_STOPPED) break;
      nanosleep(&pause, NULL);
      idle++;
    } else {
      fprintf(stderr, "frame larger than the buffer\n");
      return 1;
    }
  }
  printf("lost %ld\n", lost);
  fflush(stdout);
  return got == want ? 0 : 1;
}
