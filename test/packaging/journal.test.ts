// Logs under systemd: JSON lines whose "<N>" prefix journald turns into the entry's
// priority (SyslogLevelPrefix=yes). systemd names the stream it gave the service in
// JOURNAL_STREAM ("device:inode"); the test plays journald with a file of its own.
import { test, expect, beforeAll, afterAll } from "bun:test";
import { spawn } from "bun";
import { closeSync, fstatSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY } from "../helpers/harness";
import { startPrivateBus, type PrivateBus } from "../../src/bus/daemon";
import { JOURNAL_PRIORITY, withPriority, writesToJournal } from "../../src/core/log";
import { NotifySocket } from "./notify-socket";

let bus: PrivateBus;
let dir: string;
beforeAll(async () => {
  bus = await startPrivateBus();
  dir = mkdtempSync(join(tmpdir(), "journal-"));
});
afterAll(async () => {
  await bus?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs serve with stdout into a file until READY=1, then stops it; returns the lines. */
async function serveLines(journalStream: (fd: number) => string | undefined): Promise<string[]> {
  const out = join(dir, `out-${Date.now()}.log`);
  const fd = openSync(out, "w");
  const sock = new NotifySocket(join(dir, `n-${Date.now()}.sock`));
  const stream = journalStream(fd);
  const p = spawn([BINARY, "serve", "--bus", bus.address, "--state-dir", join(dir, "state"), "--log-level", "debug", "testautomation"], {
    stdout: fd,
    stderr: "inherit",
    env: { ...process.env, NOTIFY_SOCKET: sock.address, ...(stream ? { JOURNAL_STREAM: stream } : {}) },
  });
  await sock.next("READY");
  p.kill("SIGTERM");
  await p.exited;
  sock.close();
  closeSync(fd);
  return readFileSync(out, "utf8").trim().split("\n");
}

test("stdout is the journal (JOURNAL_STREAM names it): every line starts with its priority", async () => {
  const lines = await serveLines((fd) => {
    const st = fstatSync(fd, { bigint: true });
    return `${st.dev}:${st.ino}`;
  });
  expect(lines.length).toBeGreaterThan(2);
  for (const line of lines) {
    const m = /^<(\d)>(\{.*\})$/.exec(line);
    expect(m).not.toBeNull();
    expect(Number(m![1])).toBe(JOURNAL_PRIORITY[JSON.parse(m![2]!).level]!);
  }
  expect(lines.find((l) => l.includes('"msg":"devservices ready"'))).toStartWith("<6>{");
});

test("a JOURNAL_STREAM inherited for another stream, or none: plain JSON lines", async () => {
  for (const stream of [() => "1:2", () => undefined]) {
    const lines = await serveLines(stream);
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(JSON.parse(line)).toHaveProperty("level");
  }
});

test("pino levels map to syslog priorities", () => {
  const levels = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60 };
  const got = Object.fromEntries(Object.entries(levels).map(([n, v]) => [n, withPriority(`{"level":${v},"msg":"x"}`).slice(0, 3)]));
  expect(got).toEqual({ trace: "<7>", debug: "<7>", info: "<6>", warn: "<4>", error: "<3>", fatal: "<2>" });
  expect(writesToJournal(1, { DEVSERVICES_LOG_PRIORITY_PREFIX: "1" })).toBe(true);
  expect(writesToJournal(1, { DEVSERVICES_LOG_PRIORITY_PREFIX: "0", JOURNAL_STREAM: "1:2" })).toBe(false);
  expect(writesToJournal(1, {})).toBe(false);
});
