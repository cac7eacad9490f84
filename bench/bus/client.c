/* Calls one method N times, first one at a time, then with INFLIGHT calls
 * outstanding, and prints calls/s, p50 and p99 latency as one JSON line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-bus.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
  qsort(v, n, sizeof *v, cmp);
  int i = (int)(p * (n - 1) + 0.5);
  return v[i];
}

struct call { double start; int index; };
static double *lat;
static int done_count, failed;

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
  struct call *c = userdata;
  if (sd_bus_message_is_method_error(m, NULL)) failed++;
  lat[c->index] = now_us() - c->start;
  done_count++;
  free(c);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 9 && argc != 10) {
    fprintf(stderr, "usage: %s ADDRESS DEST PATH IFACE MEMBER PAYLOAD N INFLIGHT [WARMUP]\n", argv[0]);
    return 2;
  }
  const char *addr = argv[1], *dest = argv[2], *path = argv[3], *iface = argv[4], *member = argv[5], *payload = argv[6];
  int n = atoi(argv[7]), inflight = atoi(argv[8]);
  sd_bus *bus = NULL;
  int r;
  if ((r = sd_bus_new(&bus)) < 0 || (r = sd_bus_set_address(bus, addr)) < 0 ||
      (r = sd_bus_set_bus_client(bus, 1)) < 0 || (r = sd_bus_start(bus)) < 0) {
    fprintf(stderr, "connect: %d\n", r); return 1;
  }
  lat = calloc(n, sizeof *lat);
  /* cold: the first calls a freshly started service answers (reported on their own),
     then more warm-up before the measured runs */
  enum { COLD = 200 };
  int warmup = argc == 10 ? atoi(argv[9]) : 2000;
  double cold[COLD];
  for (int i = 0; i < COLD + warmup; i++) {
    sd_bus_error e = SD_BUS_ERROR_NULL; sd_bus_message *rep = NULL;
    double s = now_us();
    if (sd_bus_call_method(bus, dest, path, iface, member, &e, &rep, "s", payload) < 0) { fprintf(stderr, "call: %s\n", e.message); return 1; }
    if (i < COLD) cold[i] = now_us() - s;
    sd_bus_message_unref(rep);
  }
  /* the first call before pct() sorts the array in place */
  double cold_first = cold[0];
  double cold_p50 = pct(cold, COLD, 0.5), cold_p99 = pct(cold, COLD, 0.99);
  double t0 = now_us();
  for (int i = 0; i < n; i++) {
    sd_bus_error e = SD_BUS_ERROR_NULL; sd_bus_message *rep = NULL;
    double s = now_us();
    if (sd_bus_call_method(bus, dest, path, iface, member, &e, &rep, "s", payload) < 0) { fprintf(stderr, "call: %s\n", e.message); return 1; }
    lat[i] = now_us() - s;
    sd_bus_message_unref(rep);
  }
  double seq_s = (now_us() - t0) / 1e6;
  double seq_p50 = pct(lat, n, 0.5), seq_p99 = pct(lat, n, 0.99);

  memset(lat, 0, n * sizeof *lat);
  done_count = 0;
  int sent = 0;
  t0 = now_us();
  while (done_count < n) {
    while (sent < n && sent - done_count < inflight) {
      struct call *c = malloc(sizeof *c);
      c->index = sent; c->start = now_us();
      if ((r = sd_bus_call_method_async(bus, NULL, dest, path, iface, member, on_reply, c, "s", payload)) < 0) { fprintf(stderr, "async: %d\n", r); return 1; }
      sent++;
    }
    r = sd_bus_process(bus, NULL);
    if (r < 0) { fprintf(stderr, "process: %d\n", r); return 1; }
    if (r == 0) sd_bus_wait(bus, (uint64_t)-1);
  }
  double par_s = (now_us() - t0) / 1e6;
  printf("{\"cold_first_us\":%.1f,\"cold_p50_us\":%.1f,\"cold_p99_us\":%.1f,\"calls\":%d,\"seq_calls_per_s\":%.0f,\"seq_p50_us\":%.1f,\"seq_p99_us\":%.1f,\"inflight\":%d,\"par_calls_per_s\":%.0f,\"par_p50_us\":%.1f,\"par_p99_us\":%.1f,\"failed\":%d}\n",
         cold_first, cold_p50, cold_p99, n, n / seq_s, seq_p50, seq_p99, inflight, n / par_s, pct(lat, n, 0.5), pct(lat, n, 0.99), failed);
  return failed ? 1 : 0;
}
