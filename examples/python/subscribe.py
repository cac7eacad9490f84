#!/usr/bin/python3
"""subscribe: a subscription loop (docs/bus.md, "Subscriptions"). Calls METHOD with
PAYLOAD (which carries "subscribe": true), prints the first response, then each
later message of the subscription as it arrives, and after COUNT of them cancels.

    subscribe.py SERVICE METHOD PAYLOAD COUNT
    ./subscribe.py com.vendor.service.power2 getPowerOnReason '{"subscribe":true}' 3

Output: "first <JSON>", "push <JSON>" per message, then "cancelled true" (Cancel's
answer). "ended" when the service ends the subscription first; "service gone" when
the service leaves the bus (exit 1). A first response with returnValue false is
shown as "error <code>: <text>" (exit 1); one without "subscribed": true opened
nothing ("not subscribed", exit 1).
"""

import json
import sys

import dbus
import dbus.lowlevel
from gi.repository import GLib

from devservices_client import SUBSCRIPTION_INTERFACE, connect, member, object_path, show_dbus_error, show_error


def main(argv):
    if len(argv) != 5:
        print(f"usage: {argv[0]} SERVICE METHOD PAYLOAD COUNT", file=sys.stderr)
        return 64
    service, method, payload, wanted = argv[1], argv[2], argv[3], int(argv[4])
    path = object_path(service)
    bus = connect()
    loop = GLib.MainLoop()
    state = {"serial": None, "pushes": 0, "ended": False, "gone": False}

    try:
        # Pushes come from the connection that owns the service's name: only those count.
        owner = str(bus.get_name_owner(service))
    except dbus.exceptions.DBusException as e:
        show_dbus_error(e)
        return 2

    # Push and Ended are unicast signals: they reach this connection without a match
    # rule, so a message filter (which sees every incoming message) picks them up.
    def on_message(_bus, msg):
        if (
            isinstance(msg, dbus.lowlevel.SignalMessage)
            and msg.get_interface() == SUBSCRIPTION_INTERFACE
            and msg.get_path() == path
            and msg.get_sender() == owner
        ):
            args = msg.get_args_list()
            if args and int(args[0]) == state["serial"]:
                if msg.get_member() == "Push" and state["pushes"] < wanted:
                    print(f"push {args[1]}", flush=True)
                    state["pushes"] += 1
                    if state["pushes"] == wanted:
                        loop.quit()
                elif msg.get_member() == "Ended":
                    state["ended"] = True
                    loop.quit()
        return dbus.lowlevel.HANDLER_RESULT_NOT_YET_HANDLED

    bus.add_message_filter(on_message)

    # The service's unique name going away ends everything it had.
    def on_owner_changed(name, old_owner, new_owner):
        if name == owner and not new_owner:
            state["gone"] = True
            loop.quit()

    bus.add_signal_receiver(on_owner_changed, "NameOwnerChanged", "org.freedesktop.DBus", "org.freedesktop.DBus", "/org/freedesktop/DBus", arg0=owner)

    # The subscription is named by the serial of this call message: send it as a
    # message of our own so that its serial can be read once it is sent.
    call = dbus.lowlevel.MethodCallMessage(service, path, service, member(method))
    call.append(payload, signature="s")
    try:
        reply = bus.send_message_with_reply_and_block(call, 25.0)
    except dbus.exceptions.DBusException as e:
        show_dbus_error(e)
        return 2
    state["serial"] = call.get_serial()
    first = str(reply.get_args_list()[0])
    print(f"first {first}", flush=True)
    response = json.loads(first)
    if show_error(response):
        return 1
    if response.get("subscribed") is not True:
        print("not subscribed", flush=True)
        return 1

    # Pushes that arrived while the call was answered wait in the connection's queue;
    # the main loop dispatches them first.
    if state["pushes"] < wanted:
        loop.run()
    if state["gone"]:
        print("service gone", flush=True)
        return 1
    if state["ended"]:
        print("ended", flush=True)
        return 0

    # Cancel(u serial) -> b, on the service's path and the subscription interface.
    try:
        cancelled = bool(bus.call_blocking(service, path, SUBSCRIPTION_INTERFACE, "Cancel", "u", (state["serial"],), timeout=25))
    except dbus.exceptions.DBusException as e:
        show_dbus_error(e)
        return 2
    print(f"cancelled {'true' if cancelled else 'false'}", flush=True)
    return 0 if cancelled else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
