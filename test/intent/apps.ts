// Installing test applications into an application directory the way a package
// manager does: the app's directory, then its appinfo.json moved into place.
import { mkdirSync, writeFileSync, renameSync, rmSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { BUN, ROOT } from "../helpers/harness";

export function tempDir(prefix = "intent-apps-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function installApp(root: string, appinfo: Record<string, unknown>, main?: string): string {
  const dir = join(root, String(appinfo.id));
  mkdirSync(dir, { recursive: true });
  if (main !== undefined) {
    const file = join(dir, String(appinfo.main ?? "main"));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, main, { mode: 0o755 });
  }
  writeFileSync(join(dir, ".appinfo.json.tmp"), JSON.stringify(appinfo));
  renameSync(join(dir, ".appinfo.json.tmp"), join(dir, "appinfo.json"));
  return dir;
}

export function removeApp(root: string, id: string): void {
  rmSync(join(root, id), { recursive: true, force: true });
}

/** The executable of a handler app that runs test/fixtures/intent-handler.ts. */
export function handlerMain(opts: { record: string; waitFile?: string; result?: string }): string {
  const args = [`--record ${JSON.stringify(opts.record)}`];
  if (opts.waitFile) args.push(`--wait-file ${JSON.stringify(opts.waitFile)}`);
  if (opts.result) args.push(`--result ${JSON.stringify(opts.result)}`);
  return `#!/bin/sh\nexec ${JSON.stringify(BUN)} ${JSON.stringify(join(ROOT, "test/fixtures/intent-handler.ts"))} ${args.join(" ")} "$@"\n`;
}

export const BROWSER_FILTERS = [{ actions: ["view"], uris: ["http://", "https://"] }];
