// io_uring (linux/io_uring.h), for one thing only: when an fd becomes readable, the
// kernel writes a byte to another fd, with no thread of ours waiting. The event
// source (loop.ts) asks this of its epoll instance: a one-shot POLL_ADD of the epoll
// fd, linked to a one-byte WRITE to a socket pair that Bun's own event loop reads.
// glibc has no wrappers: the calls go through syscall(2) (numbers 425-427 on every
// architecture this runs on). The rings are mapped with mmap and written through
// DataViews; the submission queue is written and submitted by the same thread in
// io_uring_enter, and of the completion queue only the tail is read (to move the
// head past what completed), so no ordering beyond program order is needed.
// test/ffi/uring.test.ts checks the layouts and numbers against the host's headers.
import { ptr } from "bun:ffi";
import { libc } from "./libc";
import { mmap } from "./shm";

export const SYS_io_uring_setup = 425, SYS_io_uring_enter = 426, SYS_io_uring_register = 427;
export const IORING_OP_POLL_ADD = 6, IORING_OP_WRITE = 23;
export const IOSQE_IO_LINK = 1 << 2;
export const IORING_FEAT_SINGLE_MMAP = 1 << 0;
export const IORING_REGISTER_PROBE = 8, IO_URING_OP_SUPPORTED = 1 << 0;
export const IORING_OFF_SQ_RING = 0, IORING_OFF_CQ_RING = 0x8000000, IORING_OFF_SQES = 0x10000000;
export const POLLIN = 0x001;
const MAP_SHARED = 0x01, MAP_POPULATE = 0x8000;

export const structs = {
  io_uring_params: {
    c: "struct io_uring_params",
    size: 120,
    fields: { sq_entries: 0, cq_entries: 4, flags: 8, features: 20, sq_off: 40, cq_off: 80 },
  },
  io_sqring_offsets: {
    c: "struct io_sqring_offsets",
    size: 40,
    fields: { head: 0, tail: 4, ring_mask: 8, ring_entries: 12, flags: 16, dropped: 20, array: 24 },
  },
  io_cqring_offsets: {
    c: "struct io_cqring_offsets",
    size: 40,
    fields: { head: 0, tail: 4, ring_mask: 8, ring_entries: 12, overflow: 16, cqes: 20 },
  },
  io_uring_sqe: {
    c: "struct io_uring_sqe",
    size: 64,
    fields: { opcode: 0, flags: 1, ioprio: 2, fd: 4, off: 8, addr: 16, len: 24, poll32_events: 28, user_data: 32 },
  },
  io_uring_cqe: { c: "struct io_uring_cqe", size: 16, fields: { user_data: 0, res: 8, flags: 12 } },
  io_uring_probe: { c: "struct io_uring_probe", size: 16, fields: { last_op: 0, ops_len: 1, ops: 16 } },
  io_uring_probe_op: { c: "struct io_uring_probe_op", size: 8, fields: { op: 0, flags: 2 } },
};

/**
 * A ring that, each time `arm()` is called, polls `fd` once for input and then writes
 * one byte to `out`. Null where the kernel cannot (no io_uring before 5.1, no
 * IORING_OP_WRITE before 5.6, io_uring turned off by sysctl or a seccomp filter).
 */
export function readinessRelay(fd: number, out: number): { arm(): void; reap(): void } | null {
  const { syscall } = libc;
  const S = structs;
  const params = new Uint8Array(S.io_uring_params.size);
  const pv = new DataView(params.buffer);
  const ring = Number(syscall(SYS_io_uring_setup, 2, ptr(params), 0, 0, 0, 0));
  if (ring < 0) return null;
  // Both operations must be known to the kernel.
  const probeOps = 32;
  const probe = new Uint8Array(S.io_uring_probe.size + probeOps * S.io_uring_probe_op.size);
  const supported = (op: number) =>
    op < probe[S.io_uring_probe.fields.ops_len]! &&
    (new DataView(probe.buffer).getUint16(S.io_uring_probe.fields.ops + op * S.io_uring_probe_op.size + S.io_uring_probe_op.fields.flags, true) & IO_URING_OP_SUPPORTED) !== 0;
  if (
    Number(syscall(SYS_io_uring_register, ring, IORING_REGISTER_PROBE, ptr(probe), probeOps, 0, 0)) < 0 ||
    !supported(IORING_OP_POLL_ADD) ||
    !supported(IORING_OP_WRITE)
  ) {
    libc.close(ring);
    return null;
  }
  const sqEntries = pv.getUint32(S.io_uring_params.fields.sq_entries, true);
  const cqEntries = pv.getUint32(S.io_uring_params.fields.cq_entries, true);
  const sqOff = (f: keyof typeof S.io_sqring_offsets.fields) => pv.getUint32(S.io_uring_params.fields.sq_off + S.io_sqring_offsets.fields[f], true);
  const cqOff = (f: keyof typeof S.io_cqring_offsets.fields) => pv.getUint32(S.io_uring_params.fields.cq_off + S.io_cqring_offsets.fields[f], true);
  const single = (pv.getUint32(S.io_uring_params.fields.features, true) & IORING_FEAT_SINGLE_MMAP) !== 0;
  const sqSize = sqOff("array") + sqEntries * 4;
  const cqSize = cqOff("cqes") + cqEntries * S.io_uring_cqe.size;
  // The rings stay mapped for the life of the process, as the ring does.
  const map = (length: number, offset: number) => {
    const m = mmap(ring, length, { flags: MAP_SHARED | MAP_POPULATE, offset });
    return new DataView(m.buffer.buffer, m.buffer.byteOffset, m.buffer.byteLength);
  };
  const sq = map(single ? Math.max(sqSize, cqSize) : sqSize, IORING_OFF_SQ_RING);
  const cq = single ? sq : map(cqSize, IORING_OFF_CQ_RING);
  const sqes = map(sqEntries * S.io_uring_sqe.size, IORING_OFF_SQES);
  const mask = sq.getUint32(sqOff("ring_mask"), true);
  const byte = new Uint8Array([1]);
  const F = S.io_uring_sqe.fields;
  const put = (slot: number, opcode: number, flags: number, target: number, fill: (o: number) => void) => {
    const o = slot * S.io_uring_sqe.size;
    for (let i = 0; i < S.io_uring_sqe.size; i += 8) sqes.setBigUint64(o + i, 0n, true);
    sqes.setUint8(o + F.opcode, opcode);
    sqes.setUint8(o + F.flags, flags);
    sqes.setInt32(o + F.fd, target, true);
    fill(o);
  };
  return {
    arm() {
      const tail = sq.getUint32(sqOff("tail"), true);
      const a = tail & mask, b = (tail + 1) & mask;
      // The poll (one-shot: the kernel's default), and the write that runs once it completes.
      put(a, IORING_OP_POLL_ADD, IOSQE_IO_LINK, fd, (o) => sqes.setUint32(o + F.poll32_events, POLLIN, true));
      put(b, IORING_OP_WRITE, 0, out, (o) => {
        sqes.setBigUint64(o + F.addr, BigInt(ptr(byte)), true);
        sqes.setUint32(o + F.len, 1, true);
        sqes.setBigUint64(o + F.off, 0xffffffffffffffffn, true); // the socket's own position
      });
      sq.setUint32(sqOff("array") + a * 4, a, true);
      sq.setUint32(sqOff("array") + b * 4, b, true);
      sq.setUint32(sqOff("tail"), tail + 2, true);
      const n = Number(syscall(SYS_io_uring_enter, ring, 2, 0, 0, 0, 0));
      if (n !== 2) throw new Error(`io_uring_enter of the event source's poll gave ${n}`);
    },
    /** Frees the completions (their results are not needed: the byte said it all). */
    reap() {
      cq.setUint32(cqOff("head"), cq.getUint32(cqOff("tail"), true), true);
    },
  };
}
