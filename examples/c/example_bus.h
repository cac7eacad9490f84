/*
 * example_bus.h: what the C examples share. Connecting with sd-bus, the names of
 * docs/bus.md (bus name -> object path, method path -> member), one call, and just
 * enough JSON reading to look at a response's top-level fields (a real client would
 * use a JSON library; the examples stay on libc and libsystemd).
 */
#ifndef EXAMPLE_BUS_H
#define EXAMPLE_BUS_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#define SUBSCRIPTION_INTERFACE "com.vendor.devservices.Subscription"

/* The bus in DEVSERVICES_BUS (an address, as `devservices serve --bus` prints), else the system bus. */
static inline sd_bus *example_connect(void) {
  const char *address = getenv("DEVSERVICES_BUS");
  sd_bus *bus = NULL;
  int r;
  if (address && *address) {
    if ((r = sd_bus_new(&bus)) < 0 ||
        (r = sd_bus_set_address(bus, address)) < 0 ||
        (r = sd_bus_set_bus_client(bus, 1)) < 0 ||
        (r = sd_bus_negotiate_fds(bus, 1)) < 0 || /* methods such as camera getFd attach an fd */
        (r = sd_bus_start(bus)) < 0) {
      fprintf(stderr, "cannot connect to %s: %s\n", address, strerror(-r));
      exit(2);
    }
  } else if ((r = sd_bus_open_system(&bus)) < 0) {
    fprintf(stderr, "cannot connect to the system bus: %s\n", strerror(-r));
    exit(2);
  }
  return bus;
}

/* "com.vendor.service.power2" -> "/com/vendor/service/power2" (malloc'ed). */
static inline char *example_object_path(const char *service) {
  size_t n = strlen(service);
  char *path = malloc(n + 2);
  path[0] = '/';
  for (size_t i = 0; i <= n; i++) path[i + 1] = service[i] == '.' ? '/' : service[i];
  return path;
}

/* The spec's method path -> the D-Bus member: "i2c/list" -> "i2c_list" (malloc'ed). */
static inline char *example_member(const char *method) {
  char *member = strdup(method);
  for (char *p = member; *p; p++) if (*p == '/') *p = '_';
  return member;
}

/* ---- reading top-level JSON fields ---------------------------------------- */

static inline const char *json_ws_(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static inline const char *json_end_of_string_(const char *p) { /* p at the opening quote */
  for (p++; *p && *p != '"'; p++) if (*p == '\\' && p[1]) p++;
  return *p ? p + 1 : NULL;
}

static inline const char *json_end_of_value_(const char *p) {
  if (*p == '"') return json_end_of_string_(p);
  if (*p == '{' || *p == '[') {
    int depth = 0;
    while (*p) {
      if (*p == '"') {
        if (!(p = json_end_of_string_(p))) return NULL;
        continue;
      }
      if (*p == '{' || *p == '[') depth++;
      else if ((*p == '}' || *p == ']') && --depth == 0) return p + 1;
      p++;
    }
    return NULL;
  }
  while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
  return p;
}

/* The raw text of `key`'s value in the top-level object `json`: 1 when found. */
static inline int json_field(const char *json, const char *key, const char **value, size_t *len) {
  const char *p = json_ws_(json);
  if (*p != '{') return 0;
  p = json_ws_(p + 1);
  if (*p == '}') return 0;
  for (;;) {
    if (*p != '"') return 0;
    const char *k = p + 1, *e = json_end_of_string_(p);
    if (!e) return 0;
    size_t klen = (size_t)(e - 1 - k);
    p = json_ws_(e);
    if (*p != ':') return 0;
    p = json_ws_(p + 1);
    const char *end = json_end_of_value_(p);
    if (!end) return 0;
    if (klen == strlen(key) && memcmp(k, key, klen) == 0) {
      *value = p;
      *len = (size_t)(end - p);
      return 1;
    }
    p = json_ws_(end);
    if (*p != ',') return 0;
    p = json_ws_(p + 1);
  }
}

static inline int json_is_true(const char *json, const char *key) {
  const char *v;
  size_t n;
  return json_field(json, key, &v, &n) && n == 4 && memcmp(v, "true", 4) == 0;
}

static inline int json_is_false(const char *json, const char *key) {
  const char *v;
  size_t n;
  return json_field(json, key, &v, &n) && n == 5 && memcmp(v, "false", 5) == 0;
}

/* A number field as long long; `fallback` when absent or not a number. */
static inline long long json_number(const char *json, const char *key, long long fallback) {
  const char *v;
  size_t n;
  if (!json_field(json, key, &v, &n)) return fallback;
  char *end;
  long long x = strtoll(v, &end, 10);
  return end == v ? fallback : x;
}

/* A string field, unescaped into buf (\uXXXX kept as written); "" when absent. */
static inline const char *json_string(const char *json, const char *key, char *buf, size_t cap) {
  const char *v;
  size_t n, o = 0;
  buf[0] = 0;
  if (!json_field(json, key, &v, &n) || n < 2 || v[0] != '"') return buf;
  for (size_t i = 1; i + 1 < n && o + 1 < cap; i++) {
    char c = v[i];
    if (c == '\\' && i + 2 < n) {
      c = v[++i];
      if (c == 'u') buf[o++] = '\\'; /* \uXXXX stays as written */
      else c = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b' : c == 'f' ? '\f' : c;
      if (o + 1 >= cap) break;
    }
    buf[o++] = c;
  }
  buf[o] = 0;
  return buf;
}

/*
 * A spec error is an ordinary response with "returnValue": false, "errorCode" and
 * "errorText" (docs/bus.md, "Calls"). Prints "error <code>: <text>" and returns 1
 * for such a response; 0 for a success (which may carry no returnValue at all).
 */
static inline int example_show_error(const char *json) {
  if (!json_is_false(json, "returnValue")) return 0;
  char text[512];
  printf("error %lld: %s\n", json_number(json, "errorCode", 0), json_string(json, "errorText", text, sizeof text));
  fflush(stdout);
  return 1;
}

/* A D-Bus error (the call did not reach a handler or could not be answered). */
static inline void example_show_dbus_error(const sd_bus_error *error, int r) {
  if (sd_bus_error_is_set(error)) printf("dbus-error %s: %s\n", error->name, error->message ? error->message : "");
  else printf("dbus-error %s\n", strerror(-r));
  fflush(stdout);
}

/*
 * Calls METHOD of SERVICE with the JSON payload. Returns the response (malloc'ed)
 * or NULL after printing the D-Bus error. When fd is not NULL the method hands over
 * a descriptor (signature "sh"): *fd gets a duplicate the caller owns, or -1 when
 * the answer came as "s" alone (a failed call).
 */
static inline char *example_call(sd_bus *bus, const char *service, const char *method, const char *payload, int *fd) {
  char *path = example_object_path(service), *member = example_member(method), *json = NULL;
  sd_bus_error error = SD_BUS_ERROR_NULL;
  sd_bus_message *reply = NULL;
  const char *text;
  int r = sd_bus_call_method(bus, service, path, service, member, &error, &reply, "s", payload);
  if (r < 0) {
    example_show_dbus_error(&error, r);
    goto out;
  }
  if ((r = sd_bus_message_read(reply, "s", &text)) < 0) {
    printf("dbus-error reply of %s is not a string: %s\n", member, strerror(-r));
    goto out;
  }
  json = strdup(text);
  if (fd) {
    int received;
    *fd = -1;
    if (strcmp(sd_bus_message_get_signature(reply, 1), "sh") == 0 && sd_bus_message_read(reply, "h", &received) > 0)
      *fd = fcntl(received, F_DUPFD_CLOEXEC, 3); /* the message owns `received` */
  }
out:
  sd_bus_error_free(&error);
  sd_bus_message_unref(reply);
  free(path);
  free(member);
  return json;
}

#endif
