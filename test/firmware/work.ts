// The firmware test's real work, in the booted image (copied there with the sources it
// imports by setup-image, run by checks.sh with the product's own runtime:
// BUN_BE_BUN=1 devservices work.ts JOB). Each job drives one service through several
// calls on one connection, as root on the system bus, against the guest's real devices,
// and checks the result where the kernel or the file system shows it.
import { readdirSync, readFileSync, statSync, writeFileSync, existsSync, rmSync, mkdirSync } from "node:fs";
import { BusClient } from "../../src/bus/client";
import { resolveBusAddress } from "../../src/bus/connection";

type Json = Record<string, any>;
const MEDIA = "/media/internal";

let client: BusClient;
async function call(busName: string, method: string, payload: Json = {}, timeoutMs = 60000): Promise<Json> {
  return (await client.call(busName, method, payload as never, { timeoutMs })) as Json;
}
function ok(r: Json, what: string): Json {
  if (r.returnValue !== true) throw new Error(`${what}: ${JSON.stringify(r)}`);
  return r;
}
async function until<T>(what: string, ms: number, f: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await Bun.sleep(100);
  }
}

/** gpio-sim's view of a line of the chip made through configfs as NAME: the value its consumer drives. */
function simValue(name: string, line: number): string {
  const cfg = `/sys/kernel/config/gpio-sim/${name}`;
  const dev = readFileSync(`${cfg}/dev_name`, "utf8").trim();
  const chip = readFileSync(`${cfg}/bank0/chip_name`, "utf8").trim();
  return readFileSync(`/sys/devices/platform/${dev}/${chip}/sim_gpio${line}/value`, "utf8").trim();
}

const JOBS: Record<string, () => Promise<string>> = {
  async gpio() {
    const PM = "com.vendor.service.peripheralmanager";
    ok(await call(PM, "gpio/open", { pin: "gpio0" }), "gpio/open");
    ok(await call(PM, "gpio/setDirection", { pin: "gpio0", direction: "outHigh" }), "setDirection outHigh");
    const high = simValue("vboard", 0);
    ok(await call(PM, "gpio/setValue", { pin: "gpio0", value: "low" }), "setValue low");
    const low = simValue("vboard", 0);
    ok(await call(PM, "gpio/close", { pin: "gpio0" }), "gpio/close");
    if (high !== "1" || low !== "0") throw new Error(`gpio-sim line 0 read ${high} after outHigh and ${low} after low`);
    return "gpio0 on gpio-sim: outHigh then low, as the kernel's sim_gpio0 shows";
  },
  async i2c() {
    const PM = "com.vendor.service.peripheralmanager";
    const dev = { name: "I2C0", address: 0x50 };
    ok(await call(PM, "i2c/open", dev), "i2c/open");
    ok(await call(PM, "i2c/writeRegByte", { ...dev, reg: 0x10, data: 0xa5 }), "writeRegByte");
    const r = ok(await call(PM, "i2c/readRegByte", { ...dev, reg: 0x10 }), "readRegByte");
    ok(await call(PM, "i2c/close", dev), "i2c/close");
    if (r.data !== 0xa5) throw new Error(`read back ${r.data}`);
    return "i2c-stub at 0x50: register 0x10 written and read back (0xa5)";
  },
  async camera() {
    const C = "com.vendor.service.camera2";
    const list = ok(await call(C, "getCameraList"), "getCameraList");
    const h = ok(await call(C, "open", { id: "camera1" }), "open").handle as number;
    try {
      ok(await call(C, "setFormat", { handle: h, params: { width: 640, height: 480, format: "JPEG", fps: 30 } }), "setFormat").returnValue;
    } catch {
      /* vivid may not offer JPEG at this size; capture converts YUV */
    }
    const s = ok(await call(C, "startCamera", { handle: h }), "startCamera");
    const dir = `${MEDIA}/captures`;
    mkdirSync(dir, { recursive: true });
    const r = ok(await call(C, "capture", { handle: h, nimage: 1, path: dir }, 90000), "capture");
    ok(await call(C, "stopCamera", { handle: h }), "stopCamera");
    ok(await call(C, "close", { handle: h }), "close");
    const files = readdirSync(dir).filter((f) => f.endsWith(".jpg"));
    if (!files.length) throw new Error(`no JPEG in ${dir}: ${JSON.stringify(r)}`);
    const head = readFileSync(`${dir}/${files[0]}`).subarray(0, 2);
    if (head[0] !== 0xff || head[1] !== 0xd8) throw new Error(`${files[0]} is not a JPEG`);
    return `${JSON.stringify(list.deviceList)}; stream in ${s.type}; ${dir}/${files[0]} is a JPEG`;
  },
  async videooutput() {
    const V = "com.vendor.service.videooutput";
    const r = ok(await call(V, "connect", { source: "VDEC", sink: "MAIN" }), "connect");
    const st = ok(await call(V, "getStatus"), "getStatus");
    ok(await call(V, "disconnect", { sink: "MAIN" }), "disconnect");
    return `connect VDEC to MAIN on vkms: plane ${r.planeID}; ${JSON.stringify(st).slice(0, 120)}`;
  },
  async record() {
    const R = "com.vendor.pipeline.record.main";
    const path = `${MEDIA}/fwtest-recording.mp4`;
    rmSync(path, { force: true });
    ok(
      await call(R, "start", { video: { videoSrc: "camera1", width: 320, height: 240, codec: "H264", fps: 15, bitRate: 300000 }, format: "MP4", path }, 90000),
      "start",
    );
    await Bun.sleep(2000);
    ok(await call(R, "stop", {}, 60000), "stop");
    const st = statSync(path);
    const head = readFileSync(path).subarray(4, 8).toString("latin1");
    if (st.size < 1000 || head !== "ftyp") throw new Error(`${path}: ${st.size} bytes, starts '${head}'`);
    return `${path}: ${st.size} bytes of MP4 (H264 from vivid), mode ${(st.mode & 0o777).toString(8)}, uid ${st.uid}`;
  },
  async mediascan() {
    const M = "com.vendor.service.mediaindexer";
    ok(await call(M, "requestMediaScan", { path: "/media/fwtest" }), "requestMediaScan");
    const list = await until("three WAVs in getAudioList", 60000, async () => {
      const r = await call(M, "getAudioList", {});
      const items = (r.audioList?.results ?? r.audioList ?? []) as Json[];
      const uris = JSON.stringify(items);
      return ["one.wav", "two.wav", "three.wav"].every((n) => uris.includes(n)) ? items : undefined;
    });
    return `getAudioList has the 3 WAVs of /media/fwtest (${list.length} entries)`;
  },
  async cacheinsert() {
    const F = "com.vendor.service.filecache";
    const types = ok(await call(F, "GetCacheTypes"), "GetCacheTypes");
    if (!JSON.stringify(types).includes("fwtest"))
      ok(await call(F, "DefineType", { typeName: "fwtest", loWatermark: 1 << 20, hiWatermark: 8 << 20, size: 1 << 20, cost: 1, lifetime: 86400 }), "DefineType");
    const r = ok(await call(F, "InsertCacheObject", { typeName: "fwtest", fileName: "kept.txt", size: 64 }), "InsertCacheObject");
    writeFileSync(r.pathName, "state that survives restarts\n");
    writeFileSync("/var/lib/fwtest-cache-object", r.pathName);
    return `object ${r.pathName}`;
  },
  async cachekept() {
    const F = "com.vendor.service.filecache";
    const path = readFileSync("/var/lib/fwtest-cache-object", "utf8").trim();
    const r = ok(await call(F, "GetCacheObjectSize", { pathName: path }), "GetCacheObjectSize");
    if (!existsSync(path)) throw new Error(`${path} is gone`);
    return `${path} kept (size ${r.size})`;
  },
};

// One process for every job named (the runtime's start is the slow part under
// emulation): a line "JOB ok DETAIL" or "JOB FAIL WHAT", exit status 1 if any failed.
const jobs = process.argv.slice(2);
const unknown = jobs.filter((j) => !Object.hasOwn(JOBS, j));
if (!jobs.length || unknown.length) {
  console.log(`work: unknown job '${unknown.join(" ")}' (${Object.keys(JOBS).join(", ")})`);
  process.exit(2);
}
let failed = false;
client = await BusClient.connect(resolveBusAddress("system"));
for (const job of jobs) {
  try {
    console.log(`${job} ok ${(await JOBS[job]!()).replace(/\n/g, " ")}`);
  } catch (e) {
    failed = true;
    console.log(`${job} FAIL ${String((e as Error).message ?? e).replace(/\n/g, " ")}`);
  }
}
client.close();
process.exit(failed ? 1 : 0);
