// The platform's event source: every fd the process waits on (the bus socket, GPIO
// line requests, V4L2 devices, netlink and uevent sockets, ttys, inotify, eventfds)
// is watched here, and its callback runs on the main thread when the fd is ready.
// Nothing blocks the main thread: callbacks do non-blocking reads (until EAGAIN, or
// as much as they want: a watch is level-triggered, so data left unread is reported
// again).
//
// How: one epoll instance holds every watch, and a socket pair that Bun's own event
// loop reads on the main thread tells when some are ready. Who writes to it:
// - the kernel (uring.ts): a one-shot io_uring poll of the epoll fd, linked to a
//   one-byte write to the pair. The main thread then takes the ready watches with a
//   non-blocking epoll_wait, runs them and polls again. No thread of ours waits, and
//   none holds a JS heap of its own;
// - where the kernel cannot (before 5.6, or io_uring turned off by sysctl or a
//   seccomp filter), a poller thread (poller-worker.ts) that waits in epoll_wait and
//   sends [id, events] records. DEVSERVICES_EVENT_SOURCE=thread chooses it anyway.
// Each watch is EPOLLONESHOT and re-armed after its callback, so a ready fd the
// main thread has not served yet is reported once.
import { ptr } from "bun:ffi";
import { check, libc } from "./libc";
import { workerUrl } from "./worker";
import { readinessRelay } from "./uring";
import {
  epollLib, getEvent, putEvent, SIZEOF_EPOLL_EVENT, EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, EPOLLPRI, EPOLLRDHUP,
  EPOLLONESHOT, EPOLL_CTL_ADD, EPOLL_CTL_DEL, EPOLL_CTL_MOD, EPOLL_CLOEXEC,
} from "./epoll";

export interface WatchHandlers {
  /** The fd is readable (or has an error/hang-up pending: the read will tell). */
  readable?: () => void;
  /** The fd is writable (only while `writable` interest is on). */
  writable?: () => void;
  /** Exceptional condition (EPOLLPRI: V4L2 events, sysfs attributes). */
  priority?: () => void;
}

export interface WatchOptions {
  /** Interest at start; default readable (and priority when a handler is given). */
  readable?: boolean;
  writable?: boolean;
  /** Whether this watch keeps the process alive (default true). */
  ref?: boolean;
}

export interface Watch {
  readonly fd: number;
  readonly closed: boolean;
  /** Changes the interest; a watch with none stays registered but silent. */
  want(interest: { readable?: boolean; writable?: boolean }): void;
  /** Stops watching (call before closing the fd). */
  close(): void;
}

interface Entry {
  id: number;
  fd: number;
  handlers: WatchHandlers;
  mask: number;
  ref: boolean;
  closed: boolean;
  running: boolean;
  watch: Watch;
}

const ep = epollLib();
let epfd = -1;
let nextId = 0;
const entries = new Map<number, Entry>();
let socket: { ref(): void; unref(): void } | undefined;
let refs = 0;
let starting: Promise<void> | undefined;
/** How ready watches reach the main thread: "kernel" (io_uring) or "thread" (poller-worker.ts). */
let source: "kernel" | "thread" | undefined;
const evbuf = new Uint8Array(SIZEOF_EPOLL_EVENT);
const evview = new DataView(evbuf.buffer);
let partial = new Uint8Array(0);
const MAX_EVENTS = 64;
const ready = new Uint8Array(SIZEOF_EPOLL_EVENT * MAX_EVENTS);
const readyView = new DataView(ready.buffer);

/** Statistics for tests and benchmarks. */
export const loopStats = { watches: () => entries.size, dispatched: 0, source: () => source };

function ctl(op: number, fd: number, mask: number, id: number): void {
  putEvent(evview, 0, mask, id);
  check(`epoll_ctl(${fd})`, () => ep.epoll_ctl(epfd, op, fd, op === EPOLL_CTL_DEL ? null : ptr(evbuf)));
}

function start(): void {
  if (epfd >= 0) return;
  epfd = check("epoll_create1", () => ep.epoll_create1(EPOLL_CLOEXEC));
  const pair = new Int32Array(2);
  check("socketpair", () => libc.socketpair(1 /* AF_UNIX */, 1 /* SOCK_STREAM */ | 0o2000000 /* SOCK_CLOEXEC */, 0, ptr(pair)));
  const relay = process.env.DEVSERVICES_EVENT_SOURCE === "thread" ? null : readinessRelay(epfd, pair[1]!);
  let onData: (chunk: Uint8Array) => void;
  if (relay) {
    source = "kernel";
    // A byte: the poll completed. Whatever is ready is taken (64 at most: the rest keep
    // the epoll fd readable, so the next poll completes at once, and the bus and the
    // timers get their turn in between), then the epoll fd is polled again.
    onData = () => {
      try {
        relay.reap();
        const n = ep.epoll_wait(epfd, ptr(ready), MAX_EVENTS, 0); // -1 (EINTR): nothing now, the next poll says
        for (let i = 0; i < n; i++) {
          const [events, id] = getEvent(readyView, i);
          dispatch(id, events);
        }
      } finally {
        relay.arm();
      }
    };
    relay.arm();
  } else {
    source = "thread";
    const worker = new Worker(workerUrl("ffi/poller-worker.ts"));
    worker.unref();
    worker.postMessage({ epfd, out: pair[1] });
    onData = onRecords;
  }
  starting = Bun.connect({
    fd: pair[0]!,
    socket: { data: (_s: unknown, chunk: Uint8Array) => onData(chunk) },
  } as any).then((s: any) => {
    socket = s;
    if (refs === 0) s.unref();
  });
}


function onRecords(chunk: Uint8Array): void {
  let data = chunk;
  if (partial.length) {
    data = new Uint8Array(partial.length + chunk.length);
    data.set(partial);
    data.set(chunk, partial.length);
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const whole = data.length - (data.length % 8);
  for (let o = 0; o < whole; o += 8) dispatch(view.getUint32(o, true), view.getUint32(o + 4, true));
  partial = whole === data.length ? new Uint8Array(0) : data.slice(whole);
}

function dispatch(id: number, events: number): void {
  const e = entries.get(id);
  if (!e || e.closed) return;
  loopStats.dispatched++;
  e.running = true;
  try {
    if (events & EPOLLPRI && e.handlers.priority) e.handlers.priority();
    if (!e.closed && events & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP) && e.handlers.readable) e.handlers.readable();
    if (!e.closed && events & (EPOLLOUT | EPOLLERR | EPOLLHUP) && e.mask & EPOLLOUT && e.handlers.writable) e.handlers.writable();
  } catch (err) {
    console.error(`event source: the callback of fd ${e.fd} failed:`, err);
  } finally {
    e.running = false;
    if (!e.closed) arm(e);
  }
}

function arm(e: Entry): void {
  if (e.mask) ctl(EPOLL_CTL_MOD, e.fd, e.mask | EPOLLONESHOT, e.id);
}

function setRef(delta: number): void {
  refs += delta;
  if (!socket) return;
  if (refs > 0) socket.ref();
  else socket.unref();
}

/** Watches fd; its callbacks run on the main thread. The fd should be O_NONBLOCK. */
export function watch(fd: number, handlers: WatchHandlers, opts: WatchOptions = {}): Watch {
  start();
  const id = (nextId = (nextId + 1) >>> 0 || 1);
  let mask = 0;
  if ((opts.readable ?? true) && handlers.readable) mask |= EPOLLIN | EPOLLRDHUP;
  if (handlers.priority) mask |= EPOLLPRI;
  if (opts.writable) mask |= EPOLLOUT;
  const e: Entry = {
    id, fd, handlers, mask, ref: opts.ref ?? true, closed: false, running: false,
    watch: {
      fd,
      get closed() {
        return e.closed;
      },
      want(interest) {
        if (e.closed) return;
        let m = e.mask;
        if (interest.readable !== undefined) m = interest.readable ? m | EPOLLIN | EPOLLRDHUP : m & ~(EPOLLIN | EPOLLRDHUP);
        if (interest.writable !== undefined) m = interest.writable ? m | EPOLLOUT : m & ~EPOLLOUT;
        if (m === e.mask) return;
        e.mask = m;
        if (!e.running) ctl(EPOLL_CTL_MOD, e.fd, m ? m | EPOLLONESHOT : 0, e.id);
      },
      close() {
        if (e.closed) return;
        e.closed = true;
        entries.delete(e.id);
        if (e.ref) setRef(-1);
        try {
          ctl(EPOLL_CTL_DEL, e.fd, 0, e.id);
        } catch {
          // Already closed by its owner: the kernel dropped it from the set.
        }
      },
    },
  };
  ctl(EPOLL_CTL_ADD, fd, mask ? mask | EPOLLONESHOT : 0, id);
  entries.set(id, e);
  if (e.ref) setRef(1);
  return e.watch;
}

/** Resolves once the event source is up (the socket pair read by Bun's event loop). */
export function loopReady(): Promise<void> {
  start();
  return starting!;
}

/** Sets O_NONBLOCK on fd. */
export function setNonBlocking(fd: number): void {
  const F_GETFL = 3, F_SETFL = 4, O_NONBLOCK = 0o4000;
  const flags = check("fcntl(F_GETFL)", () => libc.fcntl(fd, F_GETFL, 0));
  check("fcntl(F_SETFL)", () => libc.fcntl(fd, F_SETFL, flags | O_NONBLOCK));
}
