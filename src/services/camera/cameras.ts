// The camera service's domain (spec part 2, com.vendor.service.camera2): cameras
// from the backend (V4L2 nodes, or the virtual board's test pattern) with IDs
// camera1, camera2... kept while they stay plugged; handles, each a lease (the
// primary one exclusive per camera), so a client that leaves the bus closes its
// handles; one stream per camera writing its frames into a ring in shared memory
// (ring.ts), read by clients with src/clients/camera/; captures to JPEG files
// created with the caller's rights. service.ts maps the spec's methods onto it.
// Choices where the spec is silent: docs/decisions/camera.md.
import { accessSync, constants as fsc, mkdirSync, openSync, rmSync, statSync, write as fsWrite } from "node:fs";
import { join } from "node:path";
import { ok, raise, type ErrorRow } from "../../core/errors";
import { FdReply, PathRefused, type Call, type Caller, type CallerFiles, type RequestOf } from "../../core/service";
import { LeaseConflict, type Lease, type Leases } from "../../core/leases";
import type { Topics } from "../../core/topics";
import { Throttle, type Logger } from "../../core/log";
import { closeFd, libc } from "../../ffi/libc";
import {
  addSeals, eventfd, eventfdSignal, F_SEAL_FUTURE_WRITE, F_SEAL_GROW, F_SEAL_SHRINK, ftruncate, IPC_CREAT, IPC_EXCL, memfdCreate,
  mmap, shmat, shmget, shmRemove, type Mapping,
} from "../../ffi/shm";
import { fourcc } from "../../ffi/v4l2";
import * as tj from "../../ffi/turbojpeg";
import { PROPERTY_NAMES, type api } from "./schemas";
import { E, badHandle } from "./errors";
import type { CameraOptionsT } from "./config";
import { ringSize, RingWriter } from "./ring";
import { DisplayOutput } from "./preview";
import { FOURCC, UnsupportedFormat, type CameraBackend, type CameraFormat, type DeviceDesc, type FormatName, type OpenDevice } from "./backend/types";

type Req<M extends keyof typeof api> = RequestOf<(typeof api)[M]>;

/** Topic keys. */
const LIST = "list";
const EVENTS = "events";
const formatKey = (id: string) => `format/${id}`;
const propertiesKey = (id: string) => `properties/${id}`;

/** Solutions: AutoContrast works on the frames; the face detectors need a model no board here has. */
const SOLUTIONS: Record<string, { supported: boolean }> = {
  AutoContrast: { supported: true },
  FaceDetection: { supported: false },
  FaceDetectionCNN: { supported: false },
};

interface Camera {
  id: string;
  desc: DeviceDesc;
  gone: boolean;
  dev?: OpenDevice;
  handles: Set<Handle>;
  stream?: Stream;
  solutions: Record<string, boolean>;
}

interface Handle {
  handle: number;
  camera: Camera;
  owner: string;
  uid: number;
  pid: number;
  primary: boolean;
  /** The lease key (the camera's primary key, or one of its own for a secondary handle). */
  key: string;
  lease?: Lease<unknown>;
}

interface Stream {
  by: Handle;
  kind: "camera" | "preview";
  windowId?: string;
  mem: "posixshm" | "sysvshm";
  memfd?: number;
  shmId?: number;
  key?: number;
  map: Mapping;
  ring: RingWriter;
  format: CameraFormat;
  eventFds: Set<number>;
  jobs: Set<CaptureJob>;
  /** The preview's display, when its window is one. */
  display?: DisplayOutput;
}

/** Frames of a stream being written to files (capture, startCapture). */
interface CaptureJob {
  dir: string;
  /** Whose rights create the files (a directory the caller named); none: the configured directory, the service's. */
  caller?: Caller;
  /** The name base of the last file and the next suffix to try with it. */
  base: string;
  next: number;
  /** Frames still wanted (Infinity: until stopped). */
  remaining: number;
  continuous: boolean;
  files: string[];
  queue: Buffer[];
  busy: boolean;
  ended: boolean;
  error?: ErrorRow;
  /** Resolves when every wanted frame is written (or the job ended). */
  done: Promise<void>;
  finish(): void;
  lastFrameAt: number;
}

const pad = (n: number) => String(n).padStart(2, "0");
/** PictureDDMMYYYY-HHMMSS (local time), the spec's default name. */
export function pictureBase(d = new Date()): string {
  return `Picture${pad(d.getDate())}${pad(d.getMonth() + 1)}${d.getFullYear()}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}`;
}

/**
 * AutoContrast: stretches the luma of a YUYV frame in place so that the range
 * between its 5th and 95th percentiles (from a sample of one pixel in 16) spans
 * 16..235; chroma is left as it is.
 */
export function autoContrast(yuyv: Uint8Array, length: number): void {
  const hist = new Uint32Array(256);
  let n = 0;
  for (let i = 0; i < length; i += 32, n++) hist[yuyv[i]!]!++;
  const cut = Math.floor(n * 0.05);
  let lo = 0, hi = 255;
  for (let acc = 0; lo < 255 && (acc += hist[lo]!) <= cut; ) lo++;
  for (let acc = 0; hi > 0 && (acc += hist[hi]!) <= cut; ) hi--;
  if (hi - lo < 8 || (lo <= 16 && hi >= 235)) return;
  const lut = new Uint8Array(256);
  const scale = (235 - 16) / (hi - lo);
  for (let v = 0; v < 256; v++) lut[v] = Math.max(0, Math.min(255, Math.round(16 + (v - lo) * scale)));
  for (let i = 0; i < length; i += 2) yuyv[i] = lut[yuyv[i]!]!;
}

/** Writes all of data to fd (off the main thread). */
async function writeAll(fd: number, data: Uint8Array): Promise<void> {
  for (let off = 0; off < data.length; ) {
    const n = await new Promise<number>((resolve, reject) => fsWrite(fd, data, off, data.length - off, null, (e, w) => (e ? reject(e) : resolve(w))));
    if (n <= 0) throw new Error("short write");
    off += n;
  }
}

function writableDir(dir: string): boolean {
  try {
    if (!statSync(dir).isDirectory()) return false;
    accessSync(dir, fsc.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** What the cameras are made with: the service's backend and the platform pieces of its context. */
export interface CamerasContext {
  backend: CameraBackend;
  /** Where captures without a path go (made if missing). */
  captureDir: string;
  log: Logger;
  topics: Topics;
  leases: Leases;
  files: CallerFiles;
}

/** The cameras of one service instance: devices, handles, streams and captures. */
export class Cameras {
  private readonly backend: CameraBackend;
  private readonly captureDir: string;
  private readonly log: Logger;
  private readonly topics: Topics;
  private readonly leases: Leases;
  private readonly files: CallerFiles;
  // What a client can cause on every call (another's handle, a path it may not use): one line per uid and kind per 10 s.
  private readonly refusals = new Throttle();
  private unwatch?: () => void;

  constructor(private readonly o: CameraOptionsT, c: CamerasContext) {
    this.backend = c.backend;
    this.captureDir = c.captureDir;
    this.log = c.log;
    this.topics = c.topics;
    this.leases = c.leases;
    this.files = c.files;
    mkdirSync(this.captureDir, { recursive: true });
  }

  /** Lists the cameras and follows hotplug from now on. */
  start(): void {
    this.refresh();
    this.unwatch = this.backend.watch(this.refresh);
    // Whether JPEG can be encoded is not told here: libturbojpeg is loaded by the first
    // use that needs it (a camera's formats, a capture), not at start (docs/performance.md).
    this.log.info({ backend: this.backend.kind, cameras: this.deviceList() }, "camera service ready");
  }

  /** Streams stopped, devices closed, every handle released, the backend closed. */
  stop(): void {
    this.unwatch?.();
    for (const cam of this.cameras.values()) {
      if (cam.stream) this.stopStream(cam, false);
      this.closeDevice(cam);
    }
    for (const h of [...this.handles.values()]) h.lease?.release();
    this.backend.close();
  }

  private cameras = new Map<string, Camera>();
  private byKey = new Map<string, Camera>();
  private handles = new Map<number, Handle>();
  private nextHandle = 1;
  /** Continuous or burst captures started with startCapture, by handle. */
  private captures = new Map<Handle, { stream: Stream; job: CaptureJob }>();

  private deviceList = () => [...this.cameras.keys()].sort((a, b) => Number(a.slice(6)) - Number(b.slice(6))).map((id) => ({ id }));

  // ---- discovery -------------------------------------------------------------
  private refresh = () => {
    let present: DeviceDesc[];
    try {
      present = this.backend.list();
    } catch (e) {
      this.log.error({ err: e }, "listing cameras failed");
      return;
    }
    let changed = false;
    const keys = new Set(present.map((d) => d.key));
    for (const cam of [...this.byKey.values()]) if (!keys.has(cam.desc.key)) {
      this.unplugged(cam);
      changed = true;
    }
    for (const d of present) {
      if (this.byKey.has(d.key)) continue;
      let n = 1;
      while (this.cameras.has(`camera${n}`)) n++;
      const cam: Camera = { id: `camera${n}`, desc: d, gone: false, handles: new Set(), solutions: { AutoContrast: false } };
      this.cameras.set(cam.id, cam);
      this.byKey.set(d.key, cam);
      this.log.info({ id: cam.id, device: d.key, name: d.name }, "camera connected");
      changed = true;
    }
    if (changed) this.topics.publish(LIST, { returnValue: true, deviceList: this.deviceList() });
  };

  private unplugged = (cam: Camera) => {
    this.log.info({ id: cam.id, device: cam.desc.key }, "camera disconnected");
    cam.gone = true;
    this.cameras.delete(cam.id);
    this.byKey.delete(cam.desc.key);
    if (cam.stream) {
      // A preview that loses its camera has failed: its watchers are told.
      if (cam.stream.kind === "preview") this.topics.publish(EVENTS, { returnValue: true, id: cam.id, eventType: "preview_fault" });
      this.stopStream(cam, true);
    }
    this.closeDevice(cam);
    const last = { returnValue: false, errorCode: E.disconnected.code, errorText: E.disconnected.text, id: cam.id };
    this.topics.end(formatKey(cam.id), last);
    this.topics.end(propertiesKey(cam.id), last);
  };

  private closeDevice = (cam: Camera) => {
    try {
      cam.dev?.close();
    } catch (e) {
      this.log.warn({ id: cam.id, err: e }, "closing the device failed");
    }
    cam.dev = undefined;
  };

  // ---- handles -------------------------------------------------------------------
  private closeHandle = (h: Handle, why: string) => {
    if (!this.handles.has(h.handle)) return;
    this.handles.delete(h.handle);
    const cam = h.camera;
    cam.handles.delete(h);
    this.captures.delete(h);
    if (cam.stream?.by === h) this.stopStream(cam, false);
    if (cam.handles.size === 0) this.closeDevice(cam);
    this.log.info({ id: cam.id, handle: h.handle, owner: h.owner, why }, "camera handle closed");
  };

  /**
   * Whether caller may use h: whom the lease registry lets act on its lease (its
   * connection, or root). getFd also answers another connection of the holder's own
   * process (same pid and uid, while the holder is connected): a client's fd replies
   * come over a second connection (BusClient.callForFd).
   */
  private mayUse = (h: Handle, caller: Caller, method: string): boolean => {
    if (!h.lease?.active) return false;
    if (this.leases.forActor(caller, h.key) === h.lease) return true;
    return method === "getFd" && h.pid > 0 && caller.pid === h.pid && caller.uid === h.uid;
  };

  /** The handle n, when caller may use it (else the method's wrong-handle code). */
  private handleOf = (method: string, n: number, caller: Caller, opts: { primary?: boolean; present?: boolean } = {}): Handle => {
    const h = this.handles.get(n);
    if (!h || !this.mayUse(h, caller, method)) {
      if (h)
        this.refusals.log(`${caller.uid} handle`, (repeated) =>
          this.log.warn({ method, handle: n, caller: caller.name, uid: caller.uid, holder: h.owner, ...(repeated ? { repeated } : {}) }, "refused: the handle is another client's"),
        );
      raise(badHandle(method));
    }
    if (opts.primary && !h.primary) raise(badHandle(method));
    if ((opts.present ?? true) && h.camera.gone) raise(E.noDevice);
    return h;
  };

  private applyDefaultFormat = (dev: OpenDevice) => {
    const sizes = dev.formats().YUV ?? [];
    const s = sizes.find((z) => z.width === 640 && z.height === 480);
    if (!s) return;
    const fps = s.fps.find((f) => f <= 30) ?? s.fps[0] ?? 30;
    try {
      dev.setFormat({ width: 640, height: 480, format: "YUV", fps });
    } catch (e) {
      this.log.debug({ err: e }, "default format refused; the device keeps its own");
    }
  };

  // ---- streaming -----------------------------------------------------------------
  private startStream = (h: Handle, kind: Stream["kind"], mem: Stream["mem"], windowId?: string, display?: DisplayOutput): Stream => {
    const cam = h.camera;
    const dev = cam.dev!;
    const format = dev.getFormat();
    const frameSize = format.format === "YUV" ? format.width * format.height * 2 : Math.max(dev.frameSize(), 64 * 1024);
    const g = { slotCount: this.o.ringSlots, frameSize, width: format.width, height: format.height, fourcc: fourcc(FOURCC[format.format]), fps: format.fps };
    const size = ringSize(g);
    let memfd: number | undefined, shmId: number | undefined, key: number | undefined, map: Mapping | undefined;
    try {
      if (mem === "posixshm") {
        memfd = memfdCreate(`camera-${cam.id}`);
        ftruncate(memfd, size);
        map = mmap(memfd, size);
        try {
          // Readers map it read-only: the size and (through new mappings) the contents are ours.
          addSeals(memfd, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE);
        } catch {
          addSeals(memfd, F_SEAL_SHRINK | F_SEAL_GROW);
        }
      } else {
        for (let tries = 0; shmId === undefined; tries++) {
          key = 0x43000000 + Math.floor(Math.random() * 0xffffff);
          try {
            shmId = shmget(key, size, IPC_CREAT | IPC_EXCL | this.o.shmMode);
          } catch (e) {
            if (tries > 20) throw e;
          }
        }
        map = shmat(shmId);
      }
      const ring = new RingWriter(map.buffer, g);
      const stream: Stream = { by: h, kind, windowId, mem, memfd, shmId, key, map, ring, format, eventFds: new Set(), jobs: new Set(), display };
      cam.stream = stream;
      const isYuv = format.format === "YUV";
      dev.start(
        (f) => {
          const data = ring.write((dst) => {
            const n = Math.min(f.data.length, dst.length);
            dst.set(f.data.subarray(0, n));
            if (isYuv && cam.solutions.AutoContrast) autoContrast(dst, n);
            return n;
          }, { deviceSequence: f.deviceSequence, timestampUs: f.timestampUs });
          for (const fd of stream.eventFds) eventfdSignal(fd);
          for (const job of stream.jobs) this.takeFrame(stream, job, data);
          if (stream.display) {
            try {
              stream.display.show(data);
            } catch (e) {
              this.log.error({ id: cam.id, window: stream.windowId, err: e }, "showing the preview failed");
              stream.display.close();
              stream.display = undefined;
              this.topics.publish(EVENTS, { returnValue: true, id: cam.id, eventType: "preview_fault" });
            }
          }
        },
        (e) => {
          this.log.error({ id: cam.id, err: e }, "the camera's stream failed");
          if (stream.kind === "preview") this.topics.publish(EVENTS, { returnValue: true, id: cam.id, eventType: "preview_fault" });
          if (cam.stream === stream) this.stopStream(cam, false);
        },
      );
      this.log.info({ id: cam.id, kind, mem, key, format, bytes: size }, "stream started");
      return stream;
    } catch (e) {
      display?.close();
      if (cam.stream?.map === map) cam.stream = undefined;
      map?.unmap();
      if (memfd !== undefined) closeFd(memfd);
      if (shmId !== undefined) shmRemove(shmId);
      this.log.error({ id: cam.id, err: e }, "starting the stream failed");
      raise(E.cannotStart);
    }
  };

  private stopStream = (cam: Camera, deviceGone: boolean) => {
    const s = cam.stream;
    if (!s) return;
    cam.stream = undefined;
    if (!deviceGone) {
      try {
        cam.dev?.stop();
      } catch (e) {
        this.log.warn({ id: cam.id, err: e }, "stopping the device failed");
      }
    }
    s.display?.close();
    s.ring.stop();
    for (const fd of s.eventFds) eventfdSignal(fd); // readers wake and see the stopped flag
    for (const fd of s.eventFds) closeFd(fd);
    for (const job of s.jobs) this.endJob(s, job);
    s.map.unmap();
    if (s.memfd !== undefined) closeFd(s.memfd);
    if (s.shmId !== undefined) {
      try {
        shmRemove(s.shmId);
      } catch {}
    }
    this.log.info({ id: cam.id }, "stream stopped");
  };

  // ---- capture ---------------------------------------------------------------------
  private newJob = (target: { dir: string; caller?: Caller }, count: number, continuous: boolean): CaptureJob => {
    let finish!: () => void;
    const done = new Promise<void>((r) => (finish = r));
    return {
      ...target, base: "", next: 0, remaining: count, continuous, files: [], queue: [], busy: false, ended: false, done, finish, lastFrameAt: Date.now(),
    };
  };

  private endJob = (s: Stream, job: CaptureJob) => {
    job.ended = true;
    s.jobs.delete(job);
    if (!job.busy) job.finish();
  };

  private takeFrame = (s: Stream, job: CaptureJob, data: Buffer) => {
    if (job.ended || job.remaining <= 0) return;
    job.lastFrameAt = Date.now();
    // A continuous capture drops frames while one is being encoded and written.
    if (job.continuous && (job.busy || job.queue.length)) return;
    job.remaining--;
    job.queue.push(Buffer.from(data));
    if (job.remaining <= 0) s.jobs.delete(job);
    if (!job.busy) void this.drain(s, job);
  };

  /**
   * Creates the next picture file of a job (O_EXCL: never an existing file; the
   * caller's directory with the caller's rights, no symlink on the path). Answers
   * its path and fd, or throws the error row the capture answers.
   */
  private createPicture = async (job: CaptureJob): Promise<{ path: string; fd: number }> => {
    const base = pictureBase();
    if (base !== job.base) {
      job.base = base;
      job.next = 0;
    }
    for (let tries = 0; tries < this.o.captureNameTries; tries++) {
      const i = job.next++;
      const path = join(job.dir, i === 0 ? `${base}.jpg` : `${base}-${i}.jpg`);
      try {
        if (job.caller) return { path, fd: await this.files.open(job.caller, path, { write: true, create: "new" }, 0o644) };
        return { path, fd: openSync(path, fsc.O_WRONLY | fsc.O_CREAT | fsc.O_EXCL | fsc.O_NOFOLLOW, 0o644) };
      } catch (e) {
        const exists = e instanceof PathRefused ? e.reason === "exists" : (e as NodeJS.ErrnoException).code === "EEXIST";
        if (exists) continue;
        this.log.warn({ path, reason: e instanceof PathRefused ? e.reason : (e as Error).message, uid: job.caller?.uid }, "a capture file cannot be created");
        const reason = e instanceof PathRefused ? e.reason : "";
        throw reason === "nospace" || reason === "other" || !job.caller ? E.writeFile : E.cannotWrite;
      }
    }
    this.log.warn({ dir: job.dir, base, tries: this.o.captureNameTries }, "no free name for a capture file");
    throw E.writeFile;
  };

  private drain = async (s: Stream, job: CaptureJob) => {
    job.busy = true;
    while (job.queue.length) {
      const frame = job.queue.shift()!;
      // One frame per turn of the event loop: encoding is synchronous (ffi/turbojpeg.ts).
      await new Promise((r) => setImmediate(r));
      let jpeg: Uint8Array;
      try {
        jpeg = s.format.format === "JPEG" ? frame : tj.encodeYuyv(frame, s.format.width, s.format.height, this.o.jpegQuality);
      } catch (e) {
        this.log.error({ err: e }, "encoding a frame failed");
        job.error = E.unknown;
        break;
      }
      let file: { path: string; fd: number };
      try {
        file = await this.createPicture(job);
      } catch (e) {
        job.error = (e as ErrorRow).code !== undefined ? (e as ErrorRow) : E.writeFile;
        break;
      }
      try {
        await writeAll(file.fd, jpeg);
        job.files.push(file.path);
      } catch (e) {
        this.log.error({ err: e, path: file.path }, "writing a capture failed");
        job.error = E.writeFile;
        // The file this capture created is not left half written.
        if (job.caller) await this.files.unlink(job.caller, file.path).catch(() => {});
        else rmSync(file.path, { force: true });
        break;
      } finally {
        closeFd(file.fd);
      }
    }
    job.busy = false;
    if (job.error) {
      job.ended = true;
      s.jobs.delete(job);
    }
    if (job.ended || job.remaining <= 0) job.finish();
  };

  /**
   * Where a capture writes: the directory the caller named, when the caller may
   * create files there (an absolute path without . or .., not the state
   * directory; the kernel's answer for the caller), or the configured directory.
   * Each file is then created with the caller's rights (createPicture).
   */
  private captureTarget = async (path: string | undefined, caller: Caller): Promise<{ dir: string; caller?: Caller }> => {
    if (path === undefined) {
      if (!writableDir(this.captureDir)) raise(E.cannotWrite);
      return { dir: this.captureDir };
    }
    let dir: string;
    let may = false;
    try {
      dir = this.files.check(path);
      may = await this.files.may(caller, dir, "wx");
    } catch (e) {
      const reason = e instanceof PathRefused ? e.reason : String(e);
      this.refusals.log(`${caller.uid} path`, (repeated) => this.log.warn({ path, reason, uid: caller.uid, ...(repeated ? { repeated } : {}) }, "capture refused: the path"));
      raise(E.cannotWrite);
    }
    if (!may) {
      this.refusals.log(`${caller.uid} path`, (repeated) =>
        this.log.warn({ path, uid: caller.uid, ...(repeated ? { repeated } : {}) }, "capture refused: the caller may not create files there"),
      );
      raise(E.cannotWrite);
    }
    return { dir, caller };
  };

  private formatName = (f: string): FormatName => (f === "YUV" || f === "JPEG" ? f : raise(E.unsupportedFormat));

  /**
   * The camera of a solutions call. Changing solutions changes the frames every
   * reader gets: that is the primary handle's (a camera named by ID: the caller must
   * hold its primary handle, 47 otherwise; 11 when nobody has it open as primary).
   */
  private solutionsCamera = (method: string, req: { handle?: number; id?: string }, caller: Caller, change = false): Camera => {
    if (req.handle !== undefined) return this.handleOf(method, req.handle, caller, { primary: change }).camera;
    if (req.id === undefined) raise(E.wrongParam);
    const cam = this.cameras.get(req.id) ?? raise(E.wrongParam);
    if (!cam.dev) raise(E.notOpened);
    if (change) {
      const l = this.leases.forActor(caller, `${cam.id}/primary`);
      if (l === "free") raise(E.notOpened);
      if (l === "others") raise(E.wrongHandle);
    }
    return cam;
  };

  // ---- the spec's methods -------------------------------------------------------------
  getCameraList(req: Req<"getCameraList">, call: Call) {
    if (call.subscription) this.topics.add(LIST, call.subscription, { shared: true }); // the whole list, hiding nothing, any caller: shared
    return call.subscription ? ok({ deviceList: this.deviceList(), subscribed: true }) : ok({ deviceList: this.deviceList() });
  }

  getInfo(req: Req<"getInfo">, call: Call) {
    const cam = this.cameras.get(req.id) ?? raise(E.noDevice);
    let formats;
    try {
      formats = cam.dev ? cam.dev.formats() : this.backend.formats(cam.desc.key);
    } catch (e) {
      this.log.error({ id: cam.id, err: e }, "reading the camera's formats failed");
      raise(E.cannotOpen);
    }
    const resolution: Record<string, string[]> = {};
    for (const [name, sizes] of Object.entries(formats)) {
      resolution[name] = sizes!.flatMap((s) => (s.fps.length ? s.fps : [0]).map((f) => `${s.width},${s.height},${f}`));
    }
    return ok({ info: { name: cam.desc.name, type: "camera", builtin: cam.desc.builtin, resolution, supported: true } });
  }

  open(req: Req<"open">, call: Call) {
    const cam = this.cameras.get(req.id) ?? raise(E.noDevice);
    const mode = req.mode ?? "primary";
    if (mode !== "primary" && mode !== "secondary") raise(E.parsing);
    const n = this.nextHandle++;
    const primary = mode === "primary";
    const key = primary ? `${cam.id}/primary` : `${cam.id}/secondary/${n}`;
    const h: Handle = { handle: n, camera: cam, owner: call.caller.name, uid: call.caller.uid, pid: call.caller.pid, primary, key };
    try {
      h.lease = this.leases.take(call.caller.name, key, {
        exclusive: true,
        data: h,
        release: (why) => this.closeHandle(h, why),
      });
    } catch (e) {
      if (e instanceof LeaseConflict) raise(E.primaryTaken);
      throw e;
    }
    if (!cam.dev) {
      try {
        cam.dev = this.backend.open(cam.desc.key);
        this.applyDefaultFormat(cam.dev);
      } catch (e) {
        this.log.error({ id: cam.id, err: e }, "opening the camera failed");
        cam.dev = undefined;
        h.lease.release();
        raise(E.cannotOpen);
      }
    }
    this.handles.set(h.handle, h);
    cam.handles.add(h);
    this.log.info({ id: cam.id, handle: h.handle, mode, owner: h.owner, appId: req.appId }, "camera opened");
    return ok({ handle: h.handle });
  }

  close(req: Req<"close">, call: Call) {
    const h = this.handleOf("close", req.handle, call.caller, { present: false });
    if (h.camera.stream?.by === h) raise(E.invalidState);
    h.lease?.release();
    return ok();
  }

  getFormat(req: Req<"getFormat">, call: Call) {
    const cam = this.cameras.get(req.id) ?? raise(E.noDevice);
    if (!cam.dev) raise(E.notOpened);
    const params = cam.dev.getFormat();
    if (call.subscription) this.topics.add(formatKey(cam.id), call.subscription);
    return call.subscription ? ok({ params, subscribed: true }) : ok({ params });
  }

  setFormat(req: Req<"setFormat">, call: Call) {
    const h = this.handleOf("setFormat", req.handle, call.caller, { primary: true });
    const cam = h.camera;
    if (cam.stream) raise(E.alreadyStarted);
    const want: CameraFormat = { ...req.params, format: this.formatName(req.params.format) };
    let params: CameraFormat;
    try {
      params = cam.dev!.setFormat(want);
    } catch (e) {
      if (e instanceof UnsupportedFormat) raise(E.formatUnsupported, { errorText: `${E.formatUnsupported.text}: ${e.message}` });
      throw e;
    }
    this.topics.publish(formatKey(cam.id), { returnValue: true, id: cam.id, params });
    return ok();
  }

  getProperties(req: Req<"getProperties">, call: Call) {
    const cam = this.cameras.get(req.id) ?? raise(E.noDevice);
    if (!cam.dev) raise(E.notOpened);
    for (const n of req.params ?? []) if (!(PROPERTY_NAMES as readonly string[]).includes(n)) raise(E.wrongParam);
    const all = cam.dev.properties();
    const params = req.params ? Object.fromEntries(Object.entries(all).filter(([k]) => req.params!.includes(k))) : all;
    if (call.subscription) this.topics.add(propertiesKey(cam.id), call.subscription);
    return call.subscription ? ok({ params, subscribed: true }) : ok({ params });
  }

  setProperties(req: Req<"setProperties">, call: Call) {
    const h = this.handleOf("setProperties", req.handle, call.caller, { primary: true });
    const cam = h.camera;
    const dev = cam.dev!;
    const have = dev.properties();
    const wanted = Object.entries(req.params).filter(([, v]) => v !== undefined) as [string, { value?: number }][];
    for (const [name, v] of wanted) {
      const cap = have[name] ?? raise(E.wrongParam, { errorText: `${E.wrongParam.text}: this camera has no ${name}` });
      if (v.value === undefined) raise(E.missing, { errorText: `${E.missing.text}: ${name}.value` });
      if (v.value < cap.min || v.value > cap.max) raise(E.outOfRange, { errorText: `${E.outOfRange.text}: ${name} is ${cap.min} to ${cap.max}` });
    }
    if (!wanted.length) return ok();
    for (const [name, v] of wanted) dev.setProperty(name, v.value!);
    const now = dev.properties();
    const params = Object.fromEntries(wanted.map(([n]) => [n, now[n]!]));
    this.topics.publish(propertiesKey(cam.id), { returnValue: true, id: cam.id, params });
    return ok();
  }

  startCamera(req: Req<"startCamera">, call: Call) {
    const h = this.handleOf("startCamera", req.handle, call.caller, { primary: true });
    if (h.camera.stream) raise(E.invalidState);
    const type = req.params?.type ?? "posixshm";
    if (type !== "posixshm" && type !== "sysvshm") raise(E.memoryType);
    const s = this.startStream(h, "camera", type);
    return s.key !== undefined ? ok({ type, key: s.key }) : ok({ type });
  }

  stopCamera(req: Req<"stopCamera">, call: Call) {
    const h = this.handleOf("stopCamera", req.handle, call.caller, { primary: true });
    const s = h.camera.stream;
    if (!s || s.by !== h || s.kind !== "camera") raise(E.invalidState);
    this.stopStream(h.camera, false);
    return ok();
  }

  startPreview(req: Req<"startPreview">, call: Call) {
    const h = this.handleOf("startPreview", req.handle, call.caller, { primary: true });
    const screen = this.o.displays[req.windowId];
    if (!screen && !this.o.windows.includes(req.windowId)) raise(E.invalidWindow);
    if (h.camera.stream) raise(E.invalidState);
    let display: DisplayOutput | undefined;
    if (screen) {
      try {
        display = new DisplayOutput(screen, h.camera.dev!.getFormat());
      } catch (e) {
        this.log.error({ window: req.windowId, card: screen.card, err: e }, "the preview's display cannot be used");
        raise(E.invalidWindow, { errorText: `${E.invalidWindow.text}: ${(e as Error).message}` });
      }
    }
    this.startStream(h, "preview", "posixshm", req.windowId, display);
    return ok();
  }

  stopPreview(req: Req<"stopPreview">, call: Call) {
    const h = this.handleOf("stopPreview", req.handle, call.caller, { primary: true });
    const s = h.camera.stream;
    if (!s || s.by !== h || s.kind !== "preview") raise(E.invalidState);
    this.stopStream(h.camera, false);
    return ok();
  }

  getFd(req: Req<"getFd">, call: Call) {
    const h = this.handleOf("getFd", req.handle, call.caller);
    const s = h.camera.stream;
    if (req.type !== "buffer" && req.type !== "event") raise(E.memoryType);
    if (!s) raise(E.invalidState);
    if (req.type === "buffer") {
      if (s.memfd === undefined) raise(E.notPosix);
      const fd = libc.dup(s.memfd);
      if (fd < 0) raise(E.unknown);
      return new FdReply(ok(), fd, true);
    }
    const efd = eventfd();
    s.eventFds.add(efd);
    // Kept to signal; closed when the stream stops.
    return new FdReply(ok(), efd, false);
  }

  async capture(req: Req<"capture">, call: Call) {
    const h = this.handleOf("capture", req.handle, call.caller, { primary: true });
    const nimage = req.nimage ?? 1;
    if (!Number.isInteger(nimage) || nimage < 1 || nimage > 30) raise(E.outOfRange, { errorText: `${E.outOfRange.text}: nimage is 1 to 30` });
    if (!h.camera.stream) raise(E.notStarted);
    const target = await this.captureTarget(req.path, call.caller);
    // The handle or its stream may have gone while the path was checked.
    if (!this.handles.has(h.handle)) raise(badHandle("capture"));
    const s = h.camera.stream ?? raise(E.notStarted);
    if (s.format.format === "YUV" && !tj.available()) raise(E.unsupportedFormat, { errorText: `${E.unsupportedFormat.text}: no JPEG encoder (libturbojpeg) on this system` });
    const job = this.newJob(target, nimage, false);
    s.jobs.add(job);
    const watchdog = setInterval(() => {
      if (Date.now() - job.lastFrameAt > this.o.frameTimeoutMs && !job.busy) {
        job.error ??= E.timeout;
        this.endJob(s, job);
      }
    }, 250);
    try {
      await job.done;
    } finally {
      clearInterval(watchdog);
    }
    if (job.error) raise(job.error);
    if (job.files.length < nimage) raise(h.camera.gone ? E.noDevice : E.notStarted);
    return ok({ path: job.files });
  }

  async startCapture(req: Req<"startCapture">, call: Call) {
    const h = this.handleOf("startCapture", req.handle, call.caller, { primary: true });
    const s = h.camera.stream ?? raise(E.notStarted);
    const p = req.params;
    const burst = p.mode === "MODE_BURST";
    if (!burst && p.mode !== "MODE_CONTINUOUS") raise(E.wrongParam, { errorText: `${E.wrongParam.text}: mode is MODE_BURST or MODE_CONTINUOUS` });
    if (burst && p.nimage === undefined) raise(E.missing, { errorText: `${E.missing.text}: nimage` });
    if (burst && (!Number.isInteger(p.nimage) || p.nimage! < 1 || p.nimage! > 30)) raise(E.outOfRange);
    const fmt = this.formatName(p.format);
    if (fmt !== s.format.format || p.width !== s.format.width || p.height !== s.format.height) raise(E.formatUnsupported);
    if ([...s.jobs].some((j) => j.continuous || j.remaining > 0)) raise(E.alreadyStarted);
    const target = await this.captureTarget(req.path, call.caller);
    // What may have changed while the path was checked: the stream, another startCapture.
    if (!this.handles.has(h.handle) || h.camera.stream !== s) raise(E.notStarted);
    if ([...s.jobs].some((j) => j.continuous || j.remaining > 0)) raise(E.alreadyStarted);
    if (fmt === "YUV" && !tj.available()) raise(E.unsupportedFormat);
    const job = this.newJob(target, burst ? p.nimage! : Infinity, !burst);
    s.jobs.add(job);
    this.captures.set(h, { stream: s, job });
    return ok({ path: target.dir });
  }

  async stopCapture(req: Req<"stopCapture">, call: Call) {
    const h = this.handleOf("stopCapture", req.handle, call.caller, { primary: true });
    const c = this.captures.get(h);
    if (!c) raise(E.notStarted);
    this.captures.delete(h);
    this.endJob(c.stream, c.job);
    await c.job.done;
    return ok({ path: c.job.files });
  }

  getSolutions(req: Req<"getSolutions">, call: Call) {
    const cam = this.solutionsCamera("getSolutions", req, call.caller);
    return ok({
      solutions: Object.entries(SOLUTIONS).map(([name, s]) => ({ name, params: { enable: !!cam.solutions[name] }, supported: s.supported })),
    });
  }

  setSolutions(req: Req<"setSolutions">, call: Call) {
    const cam = this.solutionsCamera("setSolutions", req, call.caller, true);
    for (const s of req.solutions) {
      const known = SOLUTIONS[s.name] ?? raise(E.wrongParam, { errorText: `${E.wrongParam.text}: no solution ${s.name}` });
      if (s.params.enable && !known.supported) raise(E.wrongParam, { errorText: `${E.wrongParam.text}: ${s.name} needs a model this board does not have` });
    }
    for (const s of req.solutions) cam.solutions[s.name] = s.params.enable;
    return ok();
  }

  getEventNotification(req: Req<"getEventNotification">, call: Call) {
    if (call.subscription) this.topics.add(EVENTS, call.subscription);
    return ok({ subscribed: !!call.subscription });
  }
}
