/*
 * subscribe: a subscription loop (docs/bus.md, "Subscriptions"). Calls METHOD with
 * PAYLOAD (which carries "subscribe": true), prints the first response, then each
 * later message of the subscription as it arrives, and after COUNT of them cancels.
 *
 *   subscribe SERVICE METHOD PAYLOAD COUNT
 *   ./subscribe com.vendor.service.power2 getPowerOnReason '{"subscribe":true}' 3
 *
 * Output: "first <JSON>", "push <JSON>" per message, then "cancelled true" (Cancel's
 * answer). "ended" when the service ends the subscription first; "service gone" when
 * the service leaves the bus (exit 1). A first response with returnValue false is
 * shown as "error <code>: <text>" (exit 1); one without "subscribed": true opened
 * nothing ("not subscribed", exit 1).
 */
#include "example_bus.h"

struct state {
  const char *owner;    /* the unique name that owns the service's bus name */
  uint32_t serial;      /* serial of the subscribing call: names the subscription */
  long pushes, wanted;
  int ended, gone;
};

static int on_push(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
  (void)ret_error;
  struct state *s = userdata;
  uint32_t serial;
  const char *json;
  if (sd_bus_message_read(m, "us", &serial, &json) < 0 || serial != s->serial || s->pushes >= s->wanted) return 0;
  printf("push %s\n", json);
  fflush(stdout);
  s->pushes++;
  return 0;
}

static int on_ended(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
  (void)ret_error;
  struct state *s = userdata;
  uint32_t serial;
  if (sd_bus_message_read(m, "u", &serial) >= 0 && serial == s->serial) s->ended = 1;
  return 0;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
  (void)ret_error;
  struct state *s = userdata;
  const char *name, *old_owner, *new_owner;
  if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) >= 0 && strcmp(name, s->owner) == 0 && !*new_owner) s->gone = 1;
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s SERVICE METHOD PAYLOAD COUNT\n", argv[0]);
    return 64;
  }
  const char *service = argv[1];
  char *path = example_object_path(service), *member = example_member(argv[2]);
  struct state s = { .wanted = atol(argv[4]) };
  sd_bus *bus = example_connect();
  sd_bus_error error = SD_BUS_ERROR_NULL;
  sd_bus_message *call = NULL, *reply = NULL;
  int r;

  /* Pushes come from the connection that owns the service's name: only those count. */
  if ((r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", &error, &reply, "s", service)) < 0 ||
      (r = sd_bus_message_read(reply, "s", &s.owner)) < 0) {
    example_show_dbus_error(&error, r);
    return 2;
  }
  s.owner = strdup(s.owner);
  reply = sd_bus_message_unref(reply);

  /* Unicast signals need no match rule on the daemon; these matches route them to
   * the callbacks here (sd-bus also adds them as rules, which does no harm). The
   * service's own unique name going away ends everything it had. */
  char rule[512];
  snprintf(rule, sizeof rule, "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='%s'", s.owner);
  if ((r = sd_bus_match_signal(bus, NULL, s.owner, path, SUBSCRIPTION_INTERFACE, "Push", on_push, &s)) < 0 ||
      (r = sd_bus_match_signal(bus, NULL, s.owner, path, SUBSCRIPTION_INTERFACE, "Ended", on_ended, &s)) < 0 ||
      (r = sd_bus_add_match(bus, NULL, rule, on_owner_changed, &s)) < 0) {
    fprintf(stderr, "cannot add matches: %s\n", strerror(-r));
    return 2;
  }

  sd_bus_message_new_method_call(bus, &call, service, path, service, member);
  sd_bus_message_append(call, "s", argv[3]);
  if ((r = sd_bus_call(bus, call, 0, &error, &reply)) < 0) {
    example_show_dbus_error(&error, r);
    return 2;
  }
  uint64_t cookie;
  sd_bus_message_get_cookie(call, &cookie); /* the serial the service keys the subscription by */
  s.serial = (uint32_t)cookie;
  const char *first;
  if ((r = sd_bus_message_read(reply, "s", &first)) < 0) {
    fprintf(stderr, "reply is not a string: %s\n", strerror(-r));
    return 2;
  }
  printf("first %s\n", first);
  fflush(stdout);
  if (example_show_error(first)) return 1;
  if (!json_is_true(first, "subscribed")) {
    printf("not subscribed\n");
    return 1;
  }

  /* Pushes that arrived during sd_bus_call wait in sd-bus's queue: process them first. */
  while (s.pushes < s.wanted && !s.ended && !s.gone) {
    if ((r = sd_bus_process(bus, NULL)) < 0) {
      fprintf(stderr, "connection lost: %s\n", strerror(-r));
      return 2;
    }
    if (r == 0 && (r = sd_bus_wait(bus, UINT64_MAX)) < 0 && r != -EINTR) {
      fprintf(stderr, "wait failed: %s\n", strerror(-r));
      return 2;
    }
  }
  if (s.gone) {
    printf("service gone\n");
    return 1;
  }
  if (s.ended) {
    printf("ended\n");
    return 0;
  }

  /* Cancel(u serial) -> b, on the service's path and the subscription interface. */
  reply = sd_bus_message_unref(reply);
  int cancelled = 0;
  if ((r = sd_bus_call_method(bus, service, path, SUBSCRIPTION_INTERFACE, "Cancel", &error, &reply, "u", s.serial)) < 0 ||
      (r = sd_bus_message_read(reply, "b", &cancelled)) < 0) {
    example_show_dbus_error(&error, r);
    return 2;
  }
  printf("cancelled %s\n", cancelled ? "true" : "false");
  sd_bus_message_unref(reply);
  sd_bus_message_unref(call);
  sd_bus_flush_close_unref(bus);
  free(path);
  free(member);
  return cancelled ? 0 : 1;
}
