#!/usr/bin/python3
"""call: one call to a devservices method, as `devservices call` makes it.

    call.py SERVICE METHOD [PAYLOAD]
    DEVSERVICES_BUS=unix:path=... ./call.py com.vendor.service.power2 getState '{"subscribe":false}'

Prints "response <JSON>". A spec error (returnValue false) is also printed as
"error <code>: <text>" and exits 1; a D-Bus error as "dbus-error <name>: <message>",
exit 2.
"""

import json
import sys

import dbus

from devservices_client import call, connect, show_dbus_error, show_error


def main(argv):
    if len(argv) not in (3, 4):
        print(f"usage: {argv[0]} SERVICE METHOD [PAYLOAD]", file=sys.stderr)
        return 64
    bus = connect()
    try:
        text, _ = call(bus, argv[1], argv[2], argv[3] if len(argv) == 4 else "")
    except dbus.exceptions.DBusException as e:
        show_dbus_error(e)
        return 2
    print(f"response {text}", flush=True)
    return 1 if show_error(json.loads(text)) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
