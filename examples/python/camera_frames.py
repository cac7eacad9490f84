#!/usr/bin/python3
"""camera_frames: a camera's frames from shared memory. Opens CAMERA, starts a
preview on WINDOW, maps the frame ring from the fd of getFd {type: "buffer"} with
mmap, waits on the eventfd of getFd {type: "event"} and reads COUNT frames; then
stops the preview and closes the handle. The ring's layout is docs/services/camera.md,
"Shared memory" (the C header src/clients/camera/camera_shm.h reads the same).

    camera_frames.py CAMERA WINDOW COUNT
    ./camera_frames.py camera1 window0 30

Output: "handle <n>", "ring <w>x<h> fourcc <fourcc> fps <fps> slots <n>", one
"frame <n> seq <device sequence> bytes <size> ts <microseconds>" per frame,
"lost <count>", "stopped". A spec error is shown as "error <code>: <text>" (exit 1).

The handle is a lease of this connection: it stays open while the program is
connected, and the service closes it (stopping the stream) when the program exits.
open, startPreview and stopPreview are for root and the group devservices-camera.

Memory order: the writer makes a slot's lock odd, fills the slot, makes it even, then
advances the write index. This reader checks the lock before and after copying and
the frame number in the slot, as the C header does; what Python cannot state is the
C header's acquire ordering of those loads. On x86 loads are not reordered with
each other, so the checks are exact; on a weakly ordered CPU (ARM) use the C header
(or a C extension) where a torn frame must never be taken for a whole one.
"""

import mmap
import os
import select
import struct
import sys

import dbus

from devservices_client import call_json, connect, show_dbus_error, show_error

CAMERA = "com.vendor.service.camera2"
MAGIC, VERSION = 0x46435344, 1  # "DSCF"
STOPPED = 0x1  # header flags: the writer has stopped
HEADER = struct.Struct("<11I")  # magic, version, header size, slot count, slot size, width, height, fourcc, fps x 1000, flags, write index
WRITE_INDEX, FLAGS = 40, 36
SLOT = struct.Struct("<4IQ")  # lock, bytes used, frame, device sequence, timestamp (us)
SLOT_HEADER_SIZE = 64


class Failed(Exception):
    pass


class Ring:
    """The frame ring, mapped read-only."""

    def __init__(self, fd):
        self.map = mmap.mmap(fd, os.fstat(fd).st_size, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
        (magic, version, self.header_size, self.slot_count, self.slot_size, self.width, self.height,
         fourcc, fps_milli, _flags, _index) = HEADER.unpack_from(self.map, 0)
        if magic != MAGIC or version != VERSION:
            raise Failed("not a camera ring")
        self.fourcc = struct.pack("<I", fourcc).decode("ascii")
        self.fps = fps_milli / 1000
        self.next = self.write_index()  # frames from now on
        self.lost = 0

    def write_index(self):
        return struct.unpack_from("<I", self.map, WRITE_INDEX)[0]

    def stopped(self):
        return struct.unpack_from("<I", self.map, FLAGS)[0] & STOPPED

    def read(self):
        """The next frame as (frame, device sequence, timestamp, bytes), or None when it is
        not written yet. A frame overwritten before it could be read counts in self.lost."""
        while True:
            w = self.write_index()
            if self.next == w:
                return None
            if (w - self.next) & 0xFFFFFFFF > self.slot_count:  # fell behind: skip to the oldest frame still there
                self.next = (w - self.slot_count) & 0xFFFFFFFF
                self.lost += 1
                continue
            n = self.next
            self.next = (n + 1) & 0xFFFFFFFF
            at = self.header_size + (n % self.slot_count) * self.slot_size
            lock, used, frame, sequence, timestamp = SLOT.unpack_from(self.map, at)
            if lock & 1 or frame != n or used > self.slot_size - SLOT_HEADER_SIZE:
                self.lost += 1
                continue
            data = self.map[at + SLOT_HEADER_SIZE : at + SLOT_HEADER_SIZE + used]
            if struct.unpack_from("<I", self.map, at)[0] != lock:  # overwritten while copied
                self.lost += 1
                continue
            return frame, sequence, timestamp, data

    def close(self):
        self.map.close()


def must(bus, method, payload, want_fd=False):
    response, fd = call_json(bus, CAMERA, method, payload)
    if show_error(response):
        raise Failed(None)
    if want_fd and fd is None:
        raise Failed(f"{method} answered without a descriptor")
    return response, fd


def main(argv):
    if len(argv) != 4:
        print(f"usage: {argv[0]} CAMERA WINDOW COUNT", file=sys.stderr)
        return 64
    camera, window, wanted = argv[1], argv[2], int(argv[3])
    bus = connect()
    try:
        handle = must(bus, "open", {"id": camera})[0]["handle"]
        print(f"handle {handle}", flush=True)
        must(bus, "startPreview", {"handle": handle, "windowId": window})
        _, ring_fd = must(bus, "getFd", {"handle": handle, "type": "buffer"}, want_fd=True)
        _, event_fd = must(bus, "getFd", {"handle": handle, "type": "event"}, want_fd=True)
        ring = Ring(ring_fd)
        os.close(ring_fd)  # the mapping stays
        print(f"ring {ring.width}x{ring.height} fourcc {ring.fourcc} fps {ring.fps:.3f} slots {ring.slot_count}", flush=True)
        poller = select.poll()
        poller.register(event_fd, select.POLLIN)
        got = 0
        while got < wanted:
            f = ring.read()
            if f is not None:
                frame, sequence, timestamp, data = f
                print(f"frame {frame} seq {sequence} bytes {len(data)} ts {timestamp}", flush=True)
                got += 1
                continue
            if ring.stopped():
                print("the stream stopped", file=sys.stderr)
                break
            # Nothing new: wait for the eventfd (one count per frame written).
            if not poller.poll(2000):
                print("no frame within 2 s", file=sys.stderr)
                break
            os.read(event_fd, 8)
        print(f"lost {ring.lost}", flush=True)
        ring.close()
        os.close(event_fd)
        must(bus, "stopPreview", {"handle": handle})
        must(bus, "close", {"handle": handle})
        print("stopped", flush=True)
        return 0 if got == wanted else 1
    except Failed as e:
        if e.args[0]:
            print(e.args[0], file=sys.stderr)
        return 1
    except dbus.exceptions.DBusException as e:
        show_dbus_error(e)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
