/* Fan-out: N receiver connections in this process, one change delivered to all.
 *   fanout ADDRESS N ROUNDS dev DEST PATH IFACE SUB_MEMBER SUB_PAYLOAD TRIG_MEMBER TRIG_PAYLOAD
 *     each receiver calls SUB_MEMBER (a devservices subscription, kept open), and the
 *     change arrives as a unicast Push signal to each
 *   fanout ADDRESS N ROUNDS shared DEST PATH IFACE SUB_MEMBER SUB_PAYLOAD TRIG_MEMBER TRIG_PAYLOAD
 *     as dev, then each receiver moves the subscription's shared topics to broadcasts
 *     (Shared, a match rule per topic, Attach: docs/decisions/fanout.md), and the change
 *     arrives as the service's one broadcast com.vendor.devservices.Topic signal
 *   fanout ADDRESS N ROUNDS c DEST PATH IFACE MATCH_MEMBER - TRIG_MEMBER TRIG_PAYLOAD
 *     each receiver adds a match for the broadcast signal MATCH_MEMBER
 *   fanout ADDRESS N ROUNDS crule DEST PATH IFACE MATCH_MEMBER - TRIG_MEMBER TRIG_PAYLOAD
 *     as c, with the rule a devservices subscriber adds for a shared topic (sender =
 *     DEST's owner, path, interface, member, arg0 = TRIG_PAYLOAD, which the broadcast
 *     carries as its string): what the daemon's matching of that rule costs
 * Each round: time from sending the trigger until the last receiver has the message.
 * Prints one JSON line: rounds, p50 and max of the completion time (us). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
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

static const char *want_member;
static const char *want_interface;
static int received_round;
static int *got;

static int on_msg(sd_bus_message *m, void *userdata, sd_bus_error *e) {
  int idx = (int)(long)userdata;
  uint8_t type = 0;
  if (sd_bus_message_get_type(m, &type) < 0 || type != SD_BUS_MESSAGE_SIGNAL) return 0;
  const char *mem = sd_bus_message_get_member(m);
  if (!mem || strcmp(mem, want_member) != 0) return 0;
  if (want_interface && !sd_bus_message_has_signature(m, "ss")) return 0;
  if (want_interface && strcmp(sd_bus_message_get_interface(m) ?: "", want_interface) != 0) return 0;
  got[idx] = received_round;
  (void)e;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 12) { fprintf(stderr, "usage: see the header of fanout.c\n"); return 2; }
  const char *addr = argv[1], *mode = argv[4], *dest = argv[5], *path = argv[6], *iface = argv[7];
  const char *sub_member = argv[8], *sub_payload = argv[9], *trig_member = argv[10], *trig_payload = argv[11];
  int n = atoi(argv[2]), rounds = atoi(argv[3]);
  int shared = strcmp(mode, "shared") == 0;
  int dev = shared || strcmp(mode, "dev") == 0;
  int crule = strcmp(mode, "crule") == 0;
  want_member = dev && !shared ? "Push" : sub_member;
  want_interface = shared ? "com.vendor.devservices.Topic" : NULL;
  struct rlimit rl = { 65536, 65536 };
  setrlimit(RLIMIT_NOFILE, &rl);
  sd_bus **bus = calloc(n + 1, sizeof *bus);
  got = calloc(n, sizeof *got);
  struct pollfd *pfd = calloc(n, sizeof *pfd);
  for (int i = 0; i <= n; i++) {
    int r;
    if ((r = sd_bus_new(&bus[i])) < 0 || (r = sd_bus_set_address(bus[i], addr)) < 0 ||
        (r = sd_bus_set_bus_client(bus[i], 1)) < 0 || (r = sd_bus_start(bus[i])) < 0) {
      fprintf(stderr, "connect %d: %d\n", i, r); return 1;
    }
    if (i == n) break; /* the trigger's own connection */
    sd_bus_add_filter(bus[i], NULL, on_msg, (void *)(long)i);
    got[i] = -1;
    if (dev) {
      sd_bus_error e = SD_BUS_ERROR_NULL; sd_bus_message *call = NULL, *rep = NULL;
      if (sd_bus_message_new_method_call(bus[i], &call, dest, path, iface, sub_member) < 0 || sd_bus_message_append(call, "s", sub_payload) < 0 ||
          sd_bus_call(bus[i], call, 0, &e, &rep) < 0) { fprintf(stderr, "subscribe: %s\n", e.message); return 1; }
      const char *answer = NULL;
      if (sd_bus_message_read(rep, "s", &answer) < 0 || !strstr(answer, "\"subscribed\":true")) { fprintf(stderr, "not subscribed: %s\n", answer ? answer : "?"); return 1; }
      if (shared) {
        /* Shared(u serial) -> a(ss) (member, topic); a match rule for each; Attach(u, as). */
        uint64_t cookie = 0;
        sd_bus_message_get_cookie(call, &cookie);
        const char *service = sd_bus_message_get_sender(rep);
        sd_bus_message *topics = NULL, *att = NULL, *attrep = NULL;
        if (sd_bus_call_method(bus[i], dest, path, "com.vendor.devservices.Subscription", "Shared", &e, &topics, "u", (uint32_t)cookie) < 0) { fprintf(stderr, "Shared: %s\n", e.message); return 1; }
        if (sd_bus_message_new_method_call(bus[i], &att, dest, path, "com.vendor.devservices.Subscription", "Attach") < 0 ||
            sd_bus_message_append(att, "u", (uint32_t)cookie) < 0 || sd_bus_message_open_container(att, 'a', "s") < 0) { fprintf(stderr, "Attach: cannot build\n"); return 1; }
        int n_topics = 0;
        if (sd_bus_message_enter_container(topics, 'a', "(ss)") < 0) { fprintf(stderr, "Shared: bad reply\n"); return 1; }
        const char *member, *id;
        while (sd_bus_message_read(topics, "(ss)", &member, &id) > 0) {
          char rule[768];
          snprintf(rule, sizeof rule, "type='signal',sender='%s',path='%s',interface='com.vendor.devservices.Topic',member='%s',arg0='%s'", service, path, member, id);
          if (sd_bus_add_match(bus[i], NULL, rule, NULL, NULL) < 0) { fprintf(stderr, "match failed\n"); return 1; }
          sd_bus_message_append(att, "s", id);
          n_topics++;
        }
        if (!n_topics) { fprintf(stderr, "the subscription has no shared topic\n"); return 1; }
        sd_bus_message_close_container(att);
        if (sd_bus_call(bus[i], att, 0, &e, &attrep) < 0) { fprintf(stderr, "Attach: %s\n", e.message); return 1; }
        sd_bus_message_unref(topics); sd_bus_message_unref(att); sd_bus_message_unref(attrep);
      }
      sd_bus_message_unref(rep);
      sd_bus_message_unref(call);
    } else {
      char rule[768];
      sd_bus_error e = SD_BUS_ERROR_NULL; sd_bus_message *rep = NULL;
      if (crule) {
        const char *owner = NULL;
        if (sd_bus_call_method(bus[i], "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", &e, &rep, "s", dest) < 0 ||
            sd_bus_message_read(rep, "s", &owner) < 0) { fprintf(stderr, "GetNameOwner: %s\n", e.message); return 1; }
        snprintf(rule, sizeof rule, "type='signal',sender='%s',path='%s',interface='%s',member='%s',arg0='%s'", owner, path, iface, sub_member, trig_payload);
        sd_bus_message_unref(rep);
        rep = NULL;
      } else
        snprintf(rule, sizeof rule, "type='signal',interface='%s',member='%s'", iface, sub_member);
      if (sd_bus_add_match(bus[i], NULL, rule, NULL, NULL) < 0) { fprintf(stderr, "match failed\n"); return 1; }
      /* sd-bus may still be saying Hello and queue the AddMatch: a synchronous call
         to the daemon afterwards means the rule is in place before the first round. */
      if (sd_bus_call_method(bus[i], "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", &e, &rep, "") < 0) { fprintf(stderr, "GetId: %s\n", e.message); return 1; }
      sd_bus_message_unref(rep);
    }
  }
  double *t = calloc(rounds, sizeof *t);
  for (int round = 0; round < rounds; round++) {
    received_round = round;
    double t0 = now_us();
    sd_bus_error e = SD_BUS_ERROR_NULL; sd_bus_message *rep = NULL;
    if (sd_bus_call_method(bus[n], dest, path, iface, trig_member, &e, &rep, "s", trig_payload) < 0) { fprintf(stderr, "trigger: %s\n", e.message); return 1; }
    sd_bus_message_unref(rep);
    int remaining = n;
    while (remaining > 0) {
      remaining = 0;
      for (int i = 0; i < n; i++) {
        while (sd_bus_process(bus[i], NULL) > 0) {}
        if (got[i] != round) remaining++;
        pfd[i].fd = sd_bus_get_fd(bus[i]);
        pfd[i].events = POLLIN;
      }
      if (remaining && poll(pfd, n, 30000) == 0) { fprintf(stderr, "round %d: %d receivers got nothing within 30 s\n", round, remaining); return 1; }
    }
    t[round] = now_us() - t0;
  }
  qsort(t, rounds, sizeof *t, cmp);
  printf("{\"receivers\":%d,\"rounds\":%d,\"p50_us\":%.0f,\"max_us\":%.0f}\n", n, rounds, t[rounds / 2], t[rounds - 1]);
  return 0;
}
