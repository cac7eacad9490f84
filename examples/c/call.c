/*
 * call: one call to a devservices method, as `devservices call` makes it.
 *
 *   call SERVICE METHOD [PAYLOAD]
 *   DEVSERVICES_BUS=unix:path=... ./call com.vendor.service.power2 getState '{"subscribe":false}'
 *
 * Prints "response <JSON>". A spec error (returnValue false) is also printed as
 * "error <code>: <text>" and exits 1; a D-Bus error as "dbus-error <name>: <message>",
 * exit 2.
 */
#include "example_bus.h"

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s SERVICE METHOD [PAYLOAD]\n", argv[0]);
    return 64;
  }
  sd_bus *bus = example_connect();
  char *response = example_call(bus, argv[1], argv[2], argc == 4 ? argv[3] : "", NULL);
  if (!response) return 2;
  printf("response %s\n", response);
  int failed = example_show_error(response);
  free(response);
  sd_bus_flush_close_unref(bus);
  return failed ? 1 : 0;
}
