// The video output service as its own process (`src/main.ts serve`) on the virtual
// board, on a private dbus-daemon that other uids may reach; callers are the shipped
// binary's one-shot `call`, each its own short-lived process and bus connection, as
// luna-send clients are.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { binaryForAnyUser, callAsUser, eachLine, openBusToAll, ROOT, spawnScript, testEnv, type Env } from "../helpers/harness";
import { VO } from "./env";

export interface Served {
  env: Env;
  dir: string;
  /** The binary, copied where any uid may run it. */
  app: string;
  /** One one-shot call by a separate process of uid (its own connection, gone when it answers). */
  call(uid: number, groups: number[], method: string, payload: object): Promise<any>;
  /** A `call -i` process of uid holding a subscription; its output lines, parsed. */
  hold(uid: number, groups: number[], method: string, payload: object): Held;
  stop(): Promise<void>;
}

export interface Held {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  messages: any[];
}

export async function serveVideoOutput(config: object = {}): Promise<Served> {
  const env = await testEnv();
  const dir = mkdtempSync(join(tmpdir(), "videooutput-served-"));
  const board = JSON.parse(readFileSync(join(ROOT, "recipes/boards/virtual.json"), "utf8"));
  board.serviceConfig = { ...board.serviceConfig, videooutput: { ...board.serviceConfig?.videooutput, configFile: null, ...config } };
  writeFileSync(join(dir, "board.json"), JSON.stringify(board));
  openBusToAll(env.bus.address);
  const app = binaryForAnyUser(dir);
  const serve = spawnScript("src/main.ts", ["serve", "--bus", env.bus.address, "--board", join(dir, "board.json"), "--state-dir", join(dir, "state"), "--log-level", "info", "videooutput"]);
  try {
    await serve.waitFor("devservices ready", 20000);
  } catch (e) {
    // A start that fails leaves nothing running.
    await serve.kill();
    await env.stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const held: Held[] = [];
  return {
    env,
    dir,
    app,
    call: (uid, groups, method, payload) => callAsUser({ app, bus: env.bus.address, cwd: dir, uid, groups }, `${VO}/${method}`, payload),
    hold(uid, groups, method, payload) {
      const g = groups.length ? `--groups=${groups.join(",")}` : "--clear-groups";
      const proc = spawn(["setpriv", `--reuid=${uid}`, `--regid=${uid}`, g, app, "call", "-i", "--bus", env.bus.address, `${VO}/${method}`, JSON.stringify(payload)], {
        cwd: dir, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: { HOME: dir, PATH: "/usr/bin:/bin" },
      });
      const h: Held = { proc, messages: [] };
      void eachLine(proc.stdout, (line) => {
        if (line.trim()) h.messages.push(JSON.parse(line));
      });
      held.push(h);
      return h;
    },
    async stop() {
      for (const h of held) if (h.proc.exitCode === null) h.proc.kill("SIGKILL");
      await serve.kill("SIGTERM");
      await env.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
