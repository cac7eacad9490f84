/* The bus-service reference for bench/peripheral: a C sd-bus service serving the
 * GPIO methods the bench calls on the peripheral manager, with the same message
 * shapes, so that the bench's client code path is the same for both:
 *
 *   bus name, interface  com.vendor.bench.gpio   (the name of the service)
 *   object path          /com/vendor/bench/gpio
 *   methods (s -> s, one JSON string in, one out)
 *     gpio_open {pin}                 request the line: input, both edges (as the
 *                                     linux backend does), its fd watched for edges
 *     gpio_setDirection {pin,direction}  in | outLow | outHigh (SET_CONFIG), read back
 *     gpio_getDirection {pin}         touches no device
 *     gpio_setValue {pin,value}       high | low (SET_VALUES)
 *     gpio_getValue {pin[,subscribe]} GET_VALUES; with "subscribe":true, every edge
 *                                     of the input line (and every level set) is a
 *                                     Push to the caller
 *     gpio_close {pin}
 *   com.vendor.devservices.Subscription on the same path, as devservices serves it:
 *     Push (u serial, s JSON) signals addressed to the subscriber, serial = the
 *     subscribing call's serial; Cancel(u) -> b; Shared(u) -> a(ss) (none shared).
 *
 * The lines go through the GPIO character device uAPI v2, the ioctls gpio-bench.c
 * uses. Answers carry the peripheral manager's error codes (errors.ts) where one
 * applies. Usage: gpio-service ADDRESS CHIP PIN=LINE... (e.g. gpio2=2 gpio5=5);
 * prints "ready" once the name is owned; SIGTERM or SIGINT ends it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/gpio.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <unistd.h>

#define NAME "com.vendor.bench.gpio"
#define PATH "/com/vendor/bench/gpio"
#define SUBSCRIPTION "com.vendor.devservices.Subscription"
#define EDGES (GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING | GPIO_V2_LINE_FLAG_EDGE_FALLING)

struct sub {
  struct sub *next;
  char *caller;
  uint32_t serial;
};

struct pin {
  char *name;
  unsigned line;
  int fd; /* the line request, -1 when closed */
  char *holder;
  int out, level;
  sd_event_source *watch;
  struct sub *subs;
};

static const char *chip;
static struct pin *pins;
static int n_pins;
static sd_bus *bus;

/* ---- just enough JSON: a string or boolean member of a flat object -------------- */

/* Where the value of "key" in the flat object json starts (after its colon); NULL if absent. */
static const char *json_value(const char *json, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\"", key);
  const char *p = strstr(json, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (*p == ' ') p++;
  if (*p++ != ':') return NULL;
  while (*p == ' ') p++;
  return p;
}

/* The string value of "key" in the flat object json, copied into out (size n); 0 if absent. */
static int json_string(const char *json, const char *key, char *out, size_t n) {
  const char *p = json_value(json, key);
  if (!p || *p++ != '"') return 0;
  size_t i = 0;
  for (; *p && *p != '"'; p++) {
    if (*p == '\\' || i + 1 >= n) return 0;
    out[i++] = *p;
  }
  if (*p != '"') return 0;
  out[i] = 0;
  return 1;
}

static int json_true(const char *json, const char *key) {
  const char *p = json_value(json, key);
  return p && !strncmp(p, "true", 4);
}

/* ---- answers ------------------------------------------------------------------ */

static int fail(sd_bus_message *m, int code, const char *text) {
  char s[160];
  snprintf(s, sizeof s, "{\"returnValue\":false,\"errorCode\":%d,\"errorText\":\"%s\"}", code, text);
  return sd_bus_reply_method_return(m, "s", s);
}

static int ok(sd_bus_message *m) { return sd_bus_reply_method_return(m, "s", "{\"returnValue\":true}"); }

/* The payload's pin, held by the caller; else answers the error and returns NULL (*r: the reply's result). */
static struct pin *held(sd_bus_message *m, char *payload_out, size_t n, int *r) {
  const char *s;
  char name[64];
  *r = sd_bus_message_read(m, "s", &s);
  if (*r < 0) return NULL;
  snprintf(payload_out, n, "%s", s);
  if (!json_string(s, "pin", name, sizeof name)) { *r = fail(m, 1, "Invalid parameters"); return NULL; }
  for (int i = 0; i < n_pins; i++) {
    if (strcmp(pins[i].name, name)) continue;
    if (pins[i].fd < 0 || strcmp(pins[i].holder, sd_bus_message_get_sender(m))) { *r = fail(m, 7, "Not opened by this application"); return NULL; }
    return &pins[i];
  }
  *r = fail(m, 2, "Unknown pin");
  return NULL;
}

/* ---- subscriptions -------------------------------------------------------------- */

static void push(struct pin *p) {
  char s[128];
  snprintf(s, sizeof s, "{\"returnValue\":true,\"pin\":\"%s\",\"value\":\"%s\"}", p->name, p->level ? "high" : "low");
  for (struct sub *u = p->subs; u; u = u->next) {
    sd_bus_message *sig = NULL;
    int r;
    if ((r = sd_bus_message_new_signal(bus, &sig, PATH, SUBSCRIPTION, "Push")) < 0 ||
        (r = sd_bus_message_set_destination(sig, u->caller)) < 0 ||
        (r = sd_bus_message_append(sig, "us", u->serial, s)) < 0 || (r = sd_bus_send(bus, sig, NULL)) < 0)
      fprintf(stderr, "gpio-service: push to %s: %s\n", u->caller, strerror(-r));
    sd_bus_message_unref(sig);
  }
}

static void free_subs(struct sub **list, const char *caller, uint32_t serial, int all, int *found) {
  for (struct sub **u = list; *u;) {
    if (all || (!strcmp((*u)->caller, caller) && (!serial || (*u)->serial == serial))) {
      struct sub *gone = *u;
      *u = gone->next;
      free(gone->caller);
      free(gone);
      if (found) *found = 1;
    } else u = &(*u)->next;
  }
}

static void release(struct pin *p) {
  if (p->fd < 0) return;
  p->watch = sd_event_source_disable_unref(p->watch);
  free_subs(&p->subs, NULL, 0, 1, NULL);
  close(p->fd);
  p->fd = -1;
  free(p->holder);
  p->holder = NULL;
}

/* ---- the line ------------------------------------------------------------------- */

static int read_level(struct pin *p) {
  struct gpio_v2_line_values v = { .mask = 1 };
  if (ioctl(p->fd, GPIO_V2_LINE_GET_VALUES_IOCTL, &v) < 0) return -errno;
  return (int)(v.bits & 1);
}

static int on_edge(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
  struct pin *p = userdata;
  struct gpio_v2_line_event ev[16];
  ssize_t n = read(fd, ev, sizeof ev);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return 0;
    fprintf(stderr, "gpio-service: %s edge read: %s\n", p->name, strerror(errno));
    return sd_event_source_set_enabled(s, SD_EVENT_OFF);
  }
  for (size_t i = 0; i < (size_t)n / sizeof ev[0]; i++) {
    if (p->out) continue;
    p->level = ev[i].id == GPIO_V2_LINE_EVENT_RISING_EDGE;
    push(p);
  }
  return 0;
}

/* ---- methods -------------------------------------------------------------------- */

static int m_open(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  const char *s;
  char name[64];
  int r = sd_bus_message_read(m, "s", &s);
  if (r < 0) return r;
  if (!json_string(s, "pin", name, sizeof name)) return fail(m, 1, "Invalid parameters");
  struct pin *p = NULL;
  for (int i = 0; i < n_pins; i++)
    if (!strcmp(pins[i].name, name)) p = &pins[i];
  if (!p) return fail(m, 2, "Unknown pin");
  if (p->fd >= 0) return fail(m, 6, "Already opened by another application");
  int cfd = open(chip, O_RDWR | O_CLOEXEC);
  if (cfd < 0) return fail(m, 15, "Device unavailable");
  struct gpio_v2_line_request req;
  memset(&req, 0, sizeof req);
  req.offsets[0] = p->line;
  req.num_lines = 1;
  strcpy(req.consumer, "gpio-service");
  req.config.flags = EDGES;
  r = ioctl(cfd, GPIO_V2_GET_LINE_IOCTL, &req);
  int e = errno;
  close(cfd);
  if (r < 0) return e == EBUSY ? fail(m, 9, "In use outside the peripheral manager") : fail(m, 14, "I/O error");
  fcntl(req.fd, F_SETFL, fcntl(req.fd, F_GETFL) | O_NONBLOCK);
  p->fd = req.fd;
  p->out = 0;
  if (!(p->holder = strdup(sd_bus_message_get_sender(m))) ||
      (r = sd_event_add_io(sd_bus_get_event(bus), &p->watch, p->fd, EPOLLIN, on_edge, p)) < 0 || (r = read_level(p)) < 0) {
    release(p);
    return fail(m, 16, "Internal error");
  }
  p->level = r;
  return ok(m);
}

static int m_close(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  char s[512];
  int r;
  struct pin *p = held(m, s, sizeof s, &r);
  if (!p) return r;
  release(p);
  return ok(m);
}

/* The line is at `level` after a change the caller made: subscribers hear of a new level. */
static int level_set(sd_bus_message *m, struct pin *p, int level) {
  if (level != p->level) {
    p->level = level;
    push(p);
  }
  return ok(m);
}

static int m_set_direction(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  char s[512], dir[16];
  int r;
  struct pin *p = held(m, s, sizeof s, &r);
  if (!p) return r;
  if (!json_string(s, "direction", dir, sizeof dir)) return fail(m, 1, "Invalid parameters");
  int out = strcmp(dir, "in") != 0, high = !strcmp(dir, "outHigh");
  if (out && !high && strcmp(dir, "outLow")) return fail(m, 1, "Invalid parameters");
  struct gpio_v2_line_config c;
  memset(&c, 0, sizeof c);
  c.flags = out ? GPIO_V2_LINE_FLAG_OUTPUT : EDGES;
  if (out) {
    c.num_attrs = 1;
    c.attrs[0].attr.id = GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES;
    c.attrs[0].attr.values = (uint64_t)high;
    c.attrs[0].mask = 1;
  }
  if (ioctl(p->fd, GPIO_V2_LINE_SET_CONFIG_IOCTL, &c) < 0) return fail(m, 14, "I/O error");
  p->out = out;
  int level = read_level(p);
  if (level < 0) return fail(m, 14, "I/O error");
  return level_set(m, p, level);
}

static int m_get_direction(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  char s[512];
  int r;
  struct pin *p = held(m, s, sizeof s, &r);
  if (!p) return r;
  return sd_bus_reply_method_return(m, "s", p->out ? "{\"returnValue\":true,\"direction\":\"out\"}" : "{\"returnValue\":true,\"direction\":\"in\"}");
}

static int m_set_value(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  char s[512], value[16];
  int r;
  struct pin *p = held(m, s, sizeof s, &r);
  if (!p) return r;
  if (!json_string(s, "value", value, sizeof value) || (strcmp(value, "high") && strcmp(value, "low")))
    return fail(m, 1, "Invalid parameters");
  if (!p->out) return fail(m, 10, "Pin is not an output");
  int level = !strcmp(value, "high");
  struct gpio_v2_line_values v = { .bits = (uint64_t)level, .mask = 1 };
  if (ioctl(p->fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &v) < 0) return fail(m, 14, "I/O error");
  return level_set(m, p, level);
}

static int m_get_value(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  char s[512];
  int r;
  struct pin *p = held(m, s, sizeof s, &r);
  if (!p) return r;
  int level = read_level(p);
  if (level < 0) return fail(m, 14, "I/O error");
  int subscribe = json_true(s, "subscribe");
  if (subscribe) {
    struct sub *u = calloc(1, sizeof *u);
    if (!u || !(u->caller = strdup(sd_bus_message_get_sender(m)))) {
      free(u);
      return fail(m, 16, "Internal error");
    }
    uint64_t cookie;
    if ((r = sd_bus_message_get_cookie(m, &cookie)) < 0) {
      free(u->caller);
      free(u);
      return r;
    }
    u->serial = (uint32_t)cookie;
    u->next = p->subs;
    p->subs = u;
  }
  char a[128];
  snprintf(a, sizeof a, "{\"returnValue\":true,\"subscribed\":%s,\"value\":\"%s\"}", subscribe ? "true" : "false", level ? "high" : "low");
  return sd_bus_reply_method_return(m, "s", a);
}

static int m_cancel(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  uint32_t serial;
  int r = sd_bus_message_read(m, "u", &serial), found = 0;
  if (r < 0) return r;
  for (int i = 0; i < n_pins; i++) free_subs(&pins[i].subs, sd_bus_message_get_sender(m), serial, 0, &found);
  return sd_bus_reply_method_return(m, "b", found);
}

static int m_shared(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  uint32_t serial;
  int r = sd_bus_message_read(m, "u", &serial);
  if (r < 0) return r;
  /* A value subscription is its caller's own: nothing to share (as the peripheral manager's). */
  return sd_bus_reply_method_return(m, "a(ss)", 0);
}

/* A caller that leaves the bus: its subscriptions end and its pins are released. */
static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
  const char *name, *old, *new;
  if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0 || *new || name[0] != ':') return 0;
  for (int i = 0; i < n_pins; i++) {
    free_subs(&pins[i].subs, name, 0, 0, NULL);
    if (pins[i].holder && !strcmp(pins[i].holder, name)) release(&pins[i]);
  }
  return 0;
}

static const sd_bus_vtable gpio_vtable[] = {
  SD_BUS_VTABLE_START(0),
  SD_BUS_METHOD("gpio_open", "s", "s", m_open, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_METHOD("gpio_close", "s", "s", m_close, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_METHOD("gpio_setDirection", "s", "s", m_set_direction, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_METHOD("gpio_getDirection", "s", "s", m_get_direction, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_METHOD("gpio_setValue", "s", "s", m_set_value, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_METHOD("gpio_getValue", "s", "s", m_get_value, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_VTABLE_END
};

static const sd_bus_vtable subscription_vtable[] = {
  SD_BUS_VTABLE_START(0),
  SD_BUS_METHOD("Cancel", "u", "b", m_cancel, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_METHOD("Shared", "u", "a(ss)", m_shared, SD_BUS_VTABLE_UNPRIVILEGED),
  SD_BUS_VTABLE_END
};

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: %s ADDRESS CHIP PIN=LINE...\n", argv[0]); return 2; }
  chip = argv[2];
  n_pins = argc - 3;
  pins = calloc((size_t)n_pins, sizeof *pins);
  if (!pins) return 1;
  for (int i = 0; i < n_pins; i++) {
    char *eq = strchr(argv[3 + i], '=');
    if (!eq || eq == argv[3 + i]) { fprintf(stderr, "%s: not PIN=LINE\n", argv[3 + i]); free(pins); return 2; }
    *eq = 0;
    pins[i].name = argv[3 + i];
    pins[i].line = (unsigned)atoi(eq + 1);
    pins[i].fd = -1;
  }

  sd_event *event = NULL;
  sd_bus_slot *slots[3] = { NULL, NULL, NULL };
  sigset_t mask;
  int r, rc = 1;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  if ((r = sd_event_default(&event)) < 0 || (r = sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL)) < 0 ||
      (r = sd_event_add_signal(event, NULL, SIGINT, NULL, NULL)) < 0) {
    fprintf(stderr, "gpio-service: event loop: %s\n", strerror(-r));
    goto out;
  }
  if ((r = sd_bus_new(&bus)) < 0 || (r = sd_bus_set_address(bus, argv[1])) < 0 ||
      (r = sd_bus_set_bus_client(bus, 1)) < 0 || (r = sd_bus_start(bus)) < 0 ||
      (r = sd_bus_attach_event(bus, event, SD_EVENT_PRIORITY_NORMAL)) < 0) {
    fprintf(stderr, "gpio-service: connect: %s\n", strerror(-r));
    goto out;
  }
  if ((r = sd_bus_add_object_vtable(bus, &slots[0], PATH, NAME, gpio_vtable, NULL)) < 0 ||
      (r = sd_bus_add_object_vtable(bus, &slots[1], PATH, SUBSCRIPTION, subscription_vtable, NULL)) < 0 ||
      (r = sd_bus_match_signal(bus, &slots[2], "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameOwnerChanged", on_owner_changed, NULL)) < 0 ||
      (r = sd_bus_request_name(bus, NAME, 0)) < 0) {
    fprintf(stderr, "gpio-service: export: %s\n", strerror(-r));
    goto out;
  }
  printf("ready\n");
  fflush(stdout);
  r = sd_event_loop(event);
  rc = r < 0 ? 1 : 0;
  if (r < 0) fprintf(stderr, "gpio-service: event loop: %s\n", strerror(-r));
out:
  for (int i = 0; i < n_pins; i++) release(&pins[i]);
  for (int i = 0; i < 3; i++) sd_bus_slot_unref(slots[i]);
  bus = sd_bus_flush_close_unref(bus);
  sd_event_unref(event);
  free(pins);
  return rc;
}
