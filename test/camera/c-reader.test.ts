// The C header (src/clients/camera/camera_shm.h) and its example reader, built
// with the system's C compiler, read the service's frames from System V memory by
// key and from POSIX memory by an inherited fd.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { join } from "node:path";
import { cameraEnv, CAMERA, type CameraEnv } from "./setup";
import { ROOT } from "../helpers/harness";
import { closeFd } from "../../src/ffi/libc";

let c: CameraEnv;
let h: number;
let exe: string;
beforeAll(async () => {
  c = await cameraEnv();
  h = (await c.call("open", { id: "camera1" })).handle as number;
  exe = join(c.env.stateDir, "camera_reader");
  const src = join(ROOT, "src/clients/camera/camera_reader.c");
  const cc = Bun.spawnSync(["gcc", "-Wall", "-Wextra", "-Werror", "-O2", "-o", exe, src]);
  if (cc.exitCode !== 0) throw new Error(`gcc failed: ${cc.stderr.toString()}`);
});
afterAll(() => c.stop());

async function run(args: string[], extraFd?: number) {
  const proc = Bun.spawn([exe, ...args], { stdio: ["ignore", "pipe", "inherit", ...(extraFd !== undefined ? [extraFd] : [])] as any });
  const out = await new Response(proc.stdout).text();
  expect(await proc.exited).toBe(0);
  const frames = out.split("\n").filter((l) => l.startsWith("frame ")).map((l) => l.split(" ").map(Number));
  return { out, frames, lost: Number(/^lost (\d+)$/m.exec(out)?.[1]) };
}

function expectGapless(r: Awaited<ReturnType<typeof run>>, n: number) {
  expect(r.frames.length).toBe(n);
  expect(r.lost).toBe(0);
  for (let i = 1; i < n; i++) {
    expect(r.frames[i]![1]).toBe(r.frames[i - 1]![1]! + 1); // frame number
    expect(r.frames[i]![3]).toBe(r.frames[i - 1]![3]! + 1); // device sequence
  }
  for (const f of r.frames) expect(f[5]).toBe(640 * 480 * 2);
}

test("System V: the example reads 30 frames by key", async () => {
  const r = await c.call("startCamera", { handle: h, params: { type: "sysvshm" } });
  const got = await run(["key", String(r.key), "30"]);
  expect(got.out).toContain("ring 640x480 fourcc YUYV fps 30.000 slots 8");
  expectGapless(got, 30);
  expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
});

test("POSIX: the example reads 30 frames from the fd of getFd", async () => {
  expect((await c.call("startCamera", { handle: h })).returnValue).toBe(true);
  const { fd } = await c.client.callForFd(CAMERA, "getFd", { handle: h, type: "buffer" });
  try {
    expectGapless(await run(["fd", "3", "30"], fd!), 30);
  } finally {
    closeFd(fd!);
  }
  expect(await c.call("stopCamera", { handle: h })).toEqual({ returnValue: true });
});
