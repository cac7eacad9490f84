// src/ffi/shm.ts: layouts and constants against the C headers, then POSIX shm,
// memfd with seals, System V segments and eventfd on the host.
import { afterEach, expect, test } from "bun:test";
import * as shm from "../../src/ffi/shm.ts";
import { closeFd, O_RDWR, O_CLOEXEC } from "../../src/ffi/libc.ts";
import { checkAgainstHeaders, sameNames } from "./cabi.ts";

checkAgainstHeaders("shm.ts mirrors sys/mman.h, sys/shm.h, sys/eventfd.h and the fcntl seals", {
  headers: ["sys/mman.h", "sys/ipc.h", "sys/shm.h", "sys/eventfd.h", "fcntl.h"],
  defines: ["_GNU_SOURCE"],
  structs: shm.structs,
  consts: {
    ...sameNames({
      PROT_NONE: shm.PROT_NONE, PROT_READ: shm.PROT_READ, PROT_WRITE: shm.PROT_WRITE, MAP_SHARED: shm.MAP_SHARED,
      MAP_PRIVATE: shm.MAP_PRIVATE, MAP_ANONYMOUS: shm.MAP_ANONYMOUS, MFD_CLOEXEC: shm.MFD_CLOEXEC,
      MFD_ALLOW_SEALING: shm.MFD_ALLOW_SEALING, F_ADD_SEALS: shm.F_ADD_SEALS, F_GET_SEALS: shm.F_GET_SEALS,
      F_SEAL_SEAL: shm.F_SEAL_SEAL, F_SEAL_SHRINK: shm.F_SEAL_SHRINK, F_SEAL_GROW: shm.F_SEAL_GROW,
      F_SEAL_WRITE: shm.F_SEAL_WRITE, F_SEAL_FUTURE_WRITE: shm.F_SEAL_FUTURE_WRITE, IPC_PRIVATE: shm.IPC_PRIVATE,
      IPC_CREAT: shm.IPC_CREAT, IPC_EXCL: shm.IPC_EXCL, IPC_RMID: shm.IPC_RMID, IPC_SET: shm.IPC_SET, IPC_STAT: shm.IPC_STAT,
      SHM_RDONLY: shm.SHM_RDONLY, EFD_SEMAPHORE: shm.EFD_SEMAPHORE, EFD_NONBLOCK: shm.EFD_NONBLOCK, EFD_CLOEXEC: shm.EFD_CLOEXEC,
    }),
    EVENTFD_SIZE: ["sizeof(eventfd_t)", shm.EVENTFD_SIZE],
  },
});

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const f of cleanup.splice(0).reverse()) {
    try { f(); } catch {}
  }
});

test("a POSIX shared memory object mapped twice shows the same bytes", () => {
  const name = `/devservices-test-${process.pid}`;
  const fd = shm.shmOpen(name);
  cleanup.push(() => shm.shmUnlink(name), () => closeFd(fd));
  shm.ftruncate(fd, 8192);
  // A second open of the same name, as another process would.
  const fd2 = shm.shmOpen(name, O_RDWR | O_CLOEXEC);
  cleanup.push(() => closeFd(fd2));
  const a = shm.mmap(fd, 8192), b = shm.mmap(fd2, 8192);
  cleanup.push(() => a.unmap(), () => b.unmap());
  expect(a.address).not.toBe(b.address);
  a.buffer.write("frame 1", 4096);
  expect(b.buffer.toString("utf8", 4096, 4103)).toBe("frame 1");
  b.buffer[8191] = 0x5a;
  expect(a.buffer[8191]).toBe(0x5a);
  expect(() => shm.shmOpen(name)).toThrow(expect.objectContaining({ errno: 17 })); // EEXIST: created exclusively
});

test("a memfd mapped twice shows the same bytes; its seals refuse a resize and new writers", () => {
  const fd = shm.memfdCreate("devservices-frames");
  cleanup.push(() => closeFd(fd));
  shm.ftruncate(fd, 4096);
  const a = shm.mmap(fd, 4096), b = shm.mmap(fd, 4096, { prot: shm.PROT_READ });
  cleanup.push(() => a.unmap(), () => b.unmap());
  a.buffer.set([1, 2, 3, 4], 100);
  expect([...b.buffer.subarray(100, 104)]).toEqual([1, 2, 3, 4]);

  shm.addSeals(fd, shm.F_SEAL_SHRINK | shm.F_SEAL_GROW | shm.F_SEAL_SEAL);
  expect(shm.getSeals(fd)).toBe(shm.F_SEAL_SHRINK | shm.F_SEAL_GROW | shm.F_SEAL_SEAL);
  expect(() => shm.ftruncate(fd, 8192)).toThrow(expect.objectContaining({ errno: 1 })); // EPERM
  expect(() => shm.ftruncate(fd, 1024)).toThrow(expect.objectContaining({ errno: 1 }));
  expect(() => shm.addSeals(fd, shm.F_SEAL_WRITE)).toThrow(expect.objectContaining({ errno: 1 })); // sealed seals
  // Writes within the size still go through.
  a.buffer[0] = 9;
  expect(b.buffer[0]).toBe(9);
});

test("F_SEAL_WRITE is refused while a writable shared mapping exists, then freezes the contents", () => {
  const fd = shm.memfdCreate("devservices-frozen");
  cleanup.push(() => closeFd(fd));
  shm.ftruncate(fd, 4096);
  const w = shm.mmap(fd, 4096);
  w.buffer.write("final");
  expect(() => shm.addSeals(fd, shm.F_SEAL_WRITE)).toThrow(expect.objectContaining({ errno: 16 })); // EBUSY
  w.unmap();
  shm.addSeals(fd, shm.F_SEAL_WRITE);
  expect(() => shm.mmap(fd, 4096)).toThrow(expect.objectContaining({ errno: 1 })); // EPERM: no writable shared map
  const r = shm.mmap(fd, 4096, { prot: shm.PROT_READ });
  cleanup.push(() => r.unmap());
  expect(r.buffer.toString("utf8", 0, 5)).toBe("final");
});

test("an unmapped buffer is detached, not a dangling view", () => {
  const m = shm.mmap(-1, 4096, { flags: shm.MAP_PRIVATE | shm.MAP_ANONYMOUS });
  const view = m.buffer.subarray(10, 20);
  m.buffer[10] = 7;
  expect(view[0]).toBe(7);
  m.unmap();
  expect(m.mapped).toBe(false);
  expect(m.buffer.length).toBe(0);
  expect(view.length).toBe(0);
  expect(view[0]).toBeUndefined();
  m.unmap(); // twice is harmless
});

test("a System V segment attached twice shows the same bytes and is removed", () => {
  const id = shm.shmget(shm.IPC_PRIVATE, 4096, shm.IPC_CREAT | shm.IPC_EXCL | 0o600);
  let removed = false;
  cleanup.push(() => { if (!removed) shm.shmRemove(id); });
  const a = shm.shmat(id), b = shm.shmat(id);
  expect(shm.shmStat(id)).toMatchObject({ size: 4096, attached: 2, creatorPid: process.pid, mode: 0o600 });
  a.buffer.write("segment", 0);
  expect(b.buffer.toString("utf8", 0, 7)).toBe("segment");
  b.buffer[4095] = 0xa5;
  expect(a.buffer[4095]).toBe(0xa5);
  shm.shmRemove(id);
  removed = true;
  // Marked for removal: it lives while attached, and cannot be attached anew.
  expect(shm.shmStat(id).attached).toBe(2);
  a.unmap();
  expect(shm.shmStat(id).attached).toBe(1);
  b.unmap();
  expect(() => shm.shmStat(id)).toThrow(expect.objectContaining({ errno: 22 })); // EINVAL: gone
  expect(() => shm.shmat(id)).toThrow(expect.objectContaining({ errno: 22 }));
});

test("an eventfd signals frames through the event source", async () => {
  const fd = shm.eventfd();
  cleanup.push(() => closeFd(fd));
  expect(shm.eventfdRead(fd)).toBeNull(); // non-blocking: nothing signalled yet
  const seen: bigint[] = [];
  const got = new Promise<void>((resolve) => {
    const w = shm.watchEventfd(fd, (n) => {
      seen.push(n);
      w.close();
      resolve();
    });
  });
  shm.eventfdSignal(fd);
  shm.eventfdSignal(fd, 2);
  await got;
  expect(seen).toEqual([3n]); // the counter adds up until read
  expect(shm.eventfdRead(fd)).toBeNull();

  const sem = shm.eventfd(2, shm.EFD_SEMAPHORE | shm.EFD_NONBLOCK | shm.EFD_CLOEXEC);
  cleanup.push(() => closeFd(sem));
  expect([shm.eventfdRead(sem), shm.eventfdRead(sem), shm.eventfdRead(sem)]).toEqual([1n, 1n, null]);
});
