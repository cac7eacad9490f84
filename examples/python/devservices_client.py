"""What the Python examples share: connecting with dbus-python, the names of
docs/bus.md (bus name -> object path, method path -> member), one call, and showing
an error answer.

Debian packages: python3-dbus, python3-gi (the GLib main loop that delivers signals).
"""

import json
import os
import sys

import dbus
import dbus.lowlevel
from dbus.mainloop.glib import DBusGMainLoop

SUBSCRIPTION_INTERFACE = "com.vendor.devservices.Subscription"


def connect():
    """The bus in DEVSERVICES_BUS (an address, as `devservices serve --bus` prints), else the system bus."""
    loop = DBusGMainLoop()
    address = os.environ.get("DEVSERVICES_BUS")
    try:
        if address:
            return dbus.bus.BusConnection(address, mainloop=loop)
        return dbus.SystemBus(mainloop=loop)
    except dbus.exceptions.DBusException as e:
        print(f"cannot connect to {address or 'the system bus'}: {e}", file=sys.stderr)
        sys.exit(2)


def object_path(service):
    """com.vendor.service.power2 -> /com/vendor/service/power2"""
    return "/" + service.replace(".", "/")


def member(method):
    """The spec's method path -> the D-Bus member: i2c/list -> i2c_list"""
    return method.replace("/", "_")


def show_dbus_error(e):
    """A D-Bus error: the call did not reach a handler or could not be answered."""
    print(f"dbus-error {e.get_dbus_name()}: {e.get_dbus_message()}", flush=True)


def show_error(response):
    """A spec error is an ordinary response with "returnValue": false, "errorCode" and
    "errorText" (docs/bus.md, "Calls"). Prints "error <code>: <text>" and returns True
    for one; False for a success (which may carry no returnValue at all)."""
    if response.get("returnValue") is False:
        print(f"error {response.get('errorCode')}: {response.get('errorText')}", flush=True)
        return True
    return False


def call(bus, service, method, payload=""):
    """Calls METHOD of SERVICE with the JSON payload (a string). Returns (text, fd):
    the JSON response as received and, for a method that hands over a descriptor
    (signature "sh"), the fd (an int the caller owns) or None when the answer came as
    "s" alone (a failed call). Raises dbus.exceptions.DBusException on a D-Bus error."""
    answer = bus.call_blocking(service, object_path(service), service, member(method), "s", (payload,), timeout=25)
    if isinstance(answer, tuple):  # "sh"
        text, fd = answer
        return str(text), fd.take()
    return str(answer), None


def call_json(bus, service, method, payload=None):
    """call() with a dict payload; returns (response dict, fd or None)."""
    text, fd = call(bus, service, method, "" if payload is None else json.dumps(payload))
    return json.loads(text), fd
