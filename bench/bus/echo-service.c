/* The reference: a trivial sd-bus service whose `ping` echoes its string argument,
 * the same method shape devservices serves (one JSON string in, one out); `emit`
 * broadcasts a signal (the fan-out reference), and `subscribe` + `emitEach` send one
 * signal addressed to each subscriber, as a devservices subscription push does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

static int ping(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  const char *s;
  int r = sd_bus_message_read(m, "s", &s);
  if (r < 0) return r;
  return sd_bus_reply_method_return(m, "s", s);
}

/* The fan-out reference: one broadcast signal carrying the string, which the daemon
 * delivers to every connection with a matching rule. */
static int emit(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  const char *s;
  int r = sd_bus_message_read(m, "s", &s);
  if (r < 0) return r;
  r = sd_bus_emit_signal(sd_bus_message_get_bus(m), "/com/vendor/bench/echo", "com.vendor.bench.echo", "Changed", "s", s);
  if (r < 0) return r;
  return sd_bus_reply_method_return(m, "s", "{\"returnValue\":true}");
}

/* Unicast fan-out: every caller of `subscribe` gets a `Push` signal addressed to it
 * (body: a subscription number and the string) from each `emitEach`. */
static char **subscribers;
static unsigned n_subscribers, cap_subscribers;

static int subscribe(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  if (n_subscribers == cap_subscribers) {
    cap_subscribers = cap_subscribers ? cap_subscribers * 2 : 64;
    subscribers = realloc(subscribers, cap_subscribers * sizeof *subscribers);
    if (!subscribers) return -ENOMEM;
  }
  subscribers[n_subscribers++] = strdup(sd_bus_message_get_sender(m));
  return sd_bus_reply_method_return(m, "s", "{\"returnValue\":true,\"subscribed\":true}");
}

static int emit_each(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  const char *s;
  int r = sd_bus_message_read(m, "s", &s);
  if (r < 0) return r;
  sd_bus *bus = sd_bus_message_get_bus(m);
  for (unsigned i = 0; i < n_subscribers; i++) {
    sd_bus_message *sig = NULL;
    if ((r = sd_bus_message_new_signal(bus, &sig, "/com/vendor/bench/echo", "com.vendor.bench.Subscription", "Push")) < 0 ||
        (r = sd_bus_message_set_destination(sig, subscribers[i])) < 0 ||
        (r = sd_bus_message_append(sig, "us", i + 1, s)) < 0 || (r = sd_bus_send(bus, sig, NULL)) < 0)
      return r;
    sd_bus_message_unref(sig);
  }
  return sd_bus_reply_method_return(m, "s", "{\"returnValue\":true}");
}

static const sd_bus_vtable vtable[] = {
  SD_BUS_VTABLE_START(0),
  SD_BUS_METHOD("ping", "s", "s", ping, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_METHOD("emit", "s", "s", emit, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_METHOD("subscribe", "s", "s", subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_METHOD("emitEach", "s", "s", emit_each, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_VTABLE_END
};

int main(int argc, char **argv) {
  if (argc != 2) { fprintf(stderr, "usage: %s ADDRESS\n", argv[0]); return 2; }
  sd_bus *bus = NULL;
  sd_bus_slot *slot = NULL;
  int r;
  if ((r = sd_bus_new(&bus)) < 0 || (r = sd_bus_set_address(bus, argv[1])) < 0 ||
      (r = sd_bus_set_bus_client(bus, 1)) < 0 || (r = sd_bus_start(bus)) < 0) {
    fprintf(stderr, "connect: %d\n", r); return 1;
  }
  if ((r = sd_bus_add_object_vtable(bus, &slot, "/com/vendor/bench/echo", "com.vendor.bench.echo", vtable, NULL)) < 0) {
    fprintf(stderr, "export: %d\n", r); return 1;
  }
  /* The previous round's service may still own the name for a moment after it
   * exited: the daemon releases it when it gets to that connection's hang-up, which
   * takes a while after a fan-out closed 1000 connections. Wait up to 10 s for it. */
  for (int tries = 0; (r = sd_bus_request_name(bus, "com.vendor.bench.echo", 0)) == -EEXIST && tries < 1000; tries++)
    usleep(10000);
  if (r < 0) { fprintf(stderr, "request name: %d\n", r); return 1; }
  printf("ready\n");
  fflush(stdout);
  for (;;) {
    r = sd_bus_process(bus, NULL);
    if (r < 0) return 1;
    if (r > 0) continue;
    if (sd_bus_wait(bus, (uint64_t)-1) < 0) return 1;
  }
}
