// `devservices demo` (what scripts/demo runs): the virtual board's media indexer
// lists the sample media the demo makes at start, and the example calls it prints
// for camera, recording and media indexer answer. The demo runs until SIGINT, which
// ends it with exit 0 and removes the state directory it made.
import { test, expect } from "bun:test";
import { spawn } from "bun";
import { existsSync, rmSync } from "node:fs";
import { BINARY } from "../helpers/harness";

async function call(address: string, ...args: string[]) {
  const p = spawn([BINARY, "call", "--bus", address, "-w", "20000", ...args], { stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`call ${args.join(" ")}: exit ${code}: ${stderr}`);
  return JSON.parse(stdout.trim().split("\n")[0]!);
}

test("demo: one media device with the sample files; camera, recording and media indexer examples that answer; SIGINT exits 0 and removes the state directory", async () => {
  const demo = spawn([BINARY, "demo"], { stdout: "pipe", stderr: "pipe" });
  const cleanup: string[] = [];
  try {
    const reader = demo.stdout.getReader();
    let text = "";
    const deadline = Date.now() + 60000;
    while (!text.includes("Ctrl-C") && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain("Ctrl-C");
    const address = text.match(/DEVSERVICES_BUS='([^']+)'/)![1]!;
    const stateDir = text.match(/state directory: (\S+)/)![1]!;
    const media = `${stateDir}/media`;
    expect(text).toContain(`sample media: ${media}`);

    // One media device, the sample directory, indexed by the time the examples are printed.
    const devices = await call(address, "com.vendor.service.mediaindexer/getDeviceList", "{}");
    const all = devices.pluginList.flatMap((p: any) => p.deviceList);
    expect(all.length).toBe(1);
    expect(all[0]).toMatchObject({ uri: `storage://${media}`, available: true, state: "idle", audioCount: 3, imageCount: 2, videoCount: 0 });
    const audio = await call(address, "com.vendor.service.mediaindexer/getAudioList", "{}");
    expect(audio.audioList.results.map((r: any) => [r.title, r.artist, r.uri]).sort()).toEqual([
      ["A4 tone", "Virtual board", `storage://${media}/music/A4 tone.wav`],
      ["E5 tone", "Virtual board", `storage://${media}/music/E5 tone.wav`],
      ["Silence", "Virtual board", `storage://${media}/music/Silence.mp3`],
    ]);
    for (const r of audio.audioList.results) expect(r.duration).toBeGreaterThan(0.9);
    const images = await call(address, "com.vendor.service.mediaindexer/getImageList", "{}");
    expect(images.imageList.results.map((r: any) => [r.title, r.width, r.height]).sort()).toEqual([
      ["blue", 32, 32],
      ["red", 64, 48],
    ]);

    // The printed examples of camera, recording and media indexer, in order, as a shell runs them (-i ones excepted: they run until interrupted).
    const examples = text.split("\n").map((l) => l.trim()).filter((l) => l.startsWith(`${BINARY} call`));
    for (const name of ["com.vendor.service.camera2/", "com.vendor.pipeline.record.main/", "com.vendor.service.mediaindexer/"])
      expect(examples.filter((l) => l.includes(name)).length).toBeGreaterThanOrEqual(2);
    const ours = examples.filter((l) => /com\.vendor\.(service\.camera2|pipeline\.record\.main|service\.mediaindexer)\//.test(l) && !l.includes(" -i "));
    for (const line of ours) {
      for (const m of line.matchAll(/"path":"([^"]+)"/g)) cleanup.push(m[1]!);
      const p = spawn(["sh", "-c", line], { stdout: "pipe", stderr: "pipe", env: { ...process.env, DEVSERVICES_BUS: address } });
      const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      expect({ line, code, err }).toEqual({ line, code: 0, err: "" });
      expect({ line, returnValue: JSON.parse(out).returnValue }).toEqual({ line, returnValue: true });
    }

    expect(existsSync(stateDir)).toBe(true);
    demo.kill("SIGINT");
    expect(await demo.exited).toBe(0);
    expect(existsSync(stateDir)).toBe(false);
  } finally {
    if (demo.exitCode === null) {
      // A failed run: stop the demo as Ctrl-C does (its bus and state directory go with it), bounded.
      demo.kill("SIGINT");
      await Promise.race([demo.exited, Bun.sleep(5000)]);
      demo.kill("SIGKILL");
    }
    for (const f of cleanup) rmSync(f, { force: true });
  }
}, 90000);
