// The C reference for bench/peripheral: the same GPIO character device uAPI (v2)
// on the same gpio-sim line as the peripheral manager.
//   gpio-bench toggle CHIP LINE N             -> "toggles N SECONDS": N set-value
//                                                round trips (set, then read back)
//   gpio-bench edges CHIP LINE PULLFILE N     -> one line per edge, "LATENCY_NS x":
//                                                write the simulator's pull, wait
//                                                in poll() for the edge event
#include <errno.h>
#include <fcntl.h>
#include <linux/gpio.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int request(const char *chip, int line, unsigned long long flags) {
  int fd = open(chip, O_RDWR | O_CLOEXEC);
  if (fd < 0) { perror(chip); exit(1); }
  struct gpio_v2_line_request req;
  memset(&req, 0, sizeof req);
  req.offsets[0] = line;
  req.num_lines = 1;
  strcpy(req.consumer, "gpio-bench");
  req.config.flags = flags;
  if (ioctl(fd, GPIO_V2_GET_LINE_IOCTL, &req) < 0) { perror("GPIO_V2_GET_LINE_IOCTL"); exit(1); }
  close(fd);
  return req.fd;
}

int main(int argc, char **argv) {
  if (argc >= 5 && !strcmp(argv[1], "toggle")) {
    int n = atoi(argv[4]);
    int fd = request(argv[2], atoi(argv[3]), GPIO_V2_LINE_FLAG_OUTPUT);
    long long t0 = now_ns();
    for (int i = 0; i < n; i++) {
      struct gpio_v2_line_values v = { .bits = (unsigned long long)(i & 1 ? 0 : 1), .mask = 1 };
      if (ioctl(fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &v) < 0) { perror("SET_VALUES"); return 1; }
      struct gpio_v2_line_values r = { .mask = 1 };
      if (ioctl(fd, GPIO_V2_LINE_GET_VALUES_IOCTL, &r) < 0) { perror("GET_VALUES"); return 1; }
      if ((r.bits & 1) != v.bits) { fprintf(stderr, "read back %llu, set %llu\n", r.bits & 1, v.bits); return 1; }
    }
    printf("toggles %d %.6f\n", n, (now_ns() - t0) / 1e9);
    close(fd);
    return 0;
  }
  if (argc >= 6 && !strcmp(argv[1], "edges")) {
    int n = atoi(argv[5]);
    int fd = request(argv[2], atoi(argv[3]),
                     GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING);
    int pull = open(argv[4], O_WRONLY | O_CLOEXEC);
    if (pull < 0) { perror(argv[4]); return 1; }
    for (int i = 0; i < n; i++) {
      const char *level = i % 2 == 0 ? "pull-up" : "pull-down";
      long long t0 = now_ns();
      if (pwrite(pull, level, strlen(level), 0) < 0) { perror("pull"); return 1; }
      struct pollfd p = { .fd = fd, .events = POLLIN };
      if (poll(&p, 1, 2000) != 1) { fprintf(stderr, "no edge %d\n", i); return 1; }
      struct gpio_v2_line_event ev;
      if (read(fd, &ev, sizeof ev) != sizeof ev) { perror("read"); return 1; }
      printf("LATENCY_NS %lld\n", now_ns() - t0);
      fflush(stdout);
      usleep(20000);
    }
    close(pull);
    close(fd);
    return 0;
  }
  fprintf(stderr, "usage: gpio-bench toggle CHIP LINE N | edges CHIP LINE PULLFILE N\n");
  return 2;
}
