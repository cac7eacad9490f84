// The display through DRM/KMS (src/ffi/drm.ts, src/ffi/kms.ts) on the card the
// board recipe names. Planes show XRGB8888 dumb framebuffers of the video's frame
// size; windows are set by one atomic commit of the plane's FB_ID, CRTC_ID, SRC_*
// and CRTC_* properties where the driver has atomic modesetting, by SETPLANE
// otherwise; alpha and zpos are plane properties, set where the plane has them.
// Plane updates need DRM master: the service must be the card's first opener (no
// compositor running on it). Atomic commits that touch the running CRTC are
// non-blocking and ask for a completion event, read from the card's fd on the
// platform's event source; commits go one at a time (a second one while the first
// is pending would be refused with EBUSY). SETPLANE (drivers without atomic) and the
// one mode set of an idle CRTC wait in the kernel for up to a frame.
import { readdirSync } from "node:fs";
import * as drm from "../../../ffi/drm";
import * as kms from "../../../ffi/kms";
import { SysError } from "../../../ffi/libc";
import { watch, type Watch } from "../../../ffi/loop";
import type { Logger } from "../../../core/log";
import type { Size } from "../schemas";
import { HalError, type Compositing, type DisplayInfo, type VideoBackend, type Window } from "./types";

const PROP_IMMUTABLE = 1 << 2;
/** Fill colours of each plane's framebuffer (XRGB8888), so that a sink is visible without video. */
const COLOURS = [0x00204080, 0x00c06020, 0x0020a040, 0x00a020a0];

interface PlaneState {
  planeId: number;
  props: Map<string, { id: number; value: bigint; prop: drm.Property }>;
  possibleCrtcs: number;
  fb: kms.DumbFramebuffer | null;
  /** What the plane showed before the service gave it a framebuffer (given back on detach). */
  before: { fbId: number; crtcId: number; width: number; height: number } | null;
}

/** Opens a card by /dev/dri path or by its driver's name (DRM_IOCTL_VERSION). */
export function openCardByName(card: string): number {
  if (card.startsWith("/")) return drm.openCard(card);
  const names: string[] = [];
  for (const n of readdirSync("/dev/dri").filter((n) => /^card\d+$/.test(n)).sort()) {
    const fd = drm.openCard(`/dev/dri/${n}`);
    const name = drm.version(fd).name;
    if (name === card) return fd;
    names.push(`${n} (${name})`);
    drm.close(fd);
  }
  throw new Error(`no DRM card with driver ${card} (found: ${names.join(", ") || "none"})`);
}

const hal = (what: string, e: unknown): HalError =>
  e instanceof HalError ? e : new HalError(`${what}: ${(e as Error).message}`, e instanceof SysError ? e.errno : undefined);

export class DrmDisplay implements VideoBackend {
  readonly kind = "linux" as const;
  readonly commit: "atomic" | "legacy";
  private readonly fd: number;
  private readonly planes: PlaneState[];
  private readonly output: kms.Output;
  private readonly crtcIndex: number;
  private background: kms.DumbFramebuffer | null = null;
  private readonly events: Watch;
  /** Commits waiting for their completion event, by user_data. */
  private readonly pending = new Map<bigint, { resolve(): void; timer: ReturnType<typeof setTimeout> }>();
  private nextEvent = 1n;
  /** The tail of the commit queue. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(o: { card: string; connector?: number; commit: "auto" | "atomic" | "legacy" }, private readonly log: Logger) {
    this.fd = openCardByName(o.card);
    try {
      drm.setClientCap(this.fd, drm.CLIENT_CAP_UNIVERSAL_PLANES, 1);
      let atomic = false;
      if (o.commit !== "legacy") {
        try {
          drm.setClientCap(this.fd, drm.CLIENT_CAP_ATOMIC, 1);
          atomic = true;
        } catch (e) {
          if (o.commit === "atomic") throw new Error(`${o.card}: the driver has no atomic modesetting (${(e as Error).message})`);
        }
      }
      this.commit = atomic ? "atomic" : "legacy";
      const output = kms.findOutput(this.fd, o.connector);
      if (!output) throw new Error(`${o.card}: no connected display${o.connector ? ` on connector ${o.connector}` : ""}`);
      this.output = output;
      this.crtcIndex = drm.getResources(this.fd).crtcs.indexOf(output.crtcId);
      this.planes = drm.getPlaneResources(this.fd).sort((a, b) => a - b).map((planeId) => ({
        planeId, props: drm.planeProperties(this.fd, planeId), possibleCrtcs: drm.getPlane(this.fd, planeId).possibleCrtcs, fb: null,
        before: null,
      }));
      this.events = watch(this.fd, {
        readable: () => {
          for (const ev of drm.readEvents(this.fd)) {
            const p = this.pending.get(ev.userData);
            if (!p) continue;
            this.pending.delete(ev.userData);
            clearTimeout(p.timer);
            p.resolve();
          }
        },
      }, { ref: false });
      log.info({ card: o.card, driver: drm.version(this.fd).name, commit: this.commit, planes: this.planeIds(), crtc: output.crtcId,
        connector: output.connectorId }, "video output display opened");
    } catch (e) {
      drm.close(this.fd);
      throw e;
    }
  }

  display(): DisplayInfo {
    const crtc = drm.getCrtc(this.fd, this.output.crtcId);
    const mode = crtc.mode ?? this.output.mode;
    return { width: mode.hdisplay, height: mode.vdisplay, crtcId: this.output.crtcId, connectorId: this.output.connectorId };
  }

  planeIds(): number[] {
    return this.planes.map((p) => p.planeId);
  }

  connectedCount(): number {
    return drm.getResources(this.fd).connectors.filter((id) => drm.getConnector(this.fd, id).connection === drm.MODE_CONNECTED).length;
  }

  private plane(i: number): PlaneState {
    const p = this.planes[i];
    if (!p) throw new HalError(`the card has no plane ${i} (it has ${this.planes.length})`);
    return p;
  }

  /** A CRTC without a mode shows nothing: set the connector's mode with a black background first. */
  private ensureActive(): void {
    if (drm.getCrtc(this.fd, this.output.crtcId).mode) return;
    const { mode } = this.output;
    const bg = kms.createDumbFramebuffer(this.fd, mode.hdisplay, mode.vdisplay);
    bg.map.buffer.fill(0);
    try {
      kms.setCrtc(this.fd, this.output.crtcId, bg.fbId, [this.output.connectorId], mode);
    } catch (e) {
      kms.destroyDumbFramebuffer(this.fd, bg);
      throw e;
    }
    this.background = bg;
    this.log.info({ crtc: this.output.crtcId, mode: mode.name }, "display mode set for video output");
  }

  private newFramebuffer(i: number, frame: Size): kms.DumbFramebuffer {
    const fb = kms.createDumbFramebuffer(this.fd, frame.width, frame.height);
    const colour = COLOURS[i % COLOURS.length]!;
    const row = Buffer.alloc(fb.pitch);
    for (let x = 0; x < frame.width; x++) row.writeUInt32LE(colour, 4 * x);
    for (let y = 0; y < frame.height; y++) row.copy(fb.map.buffer, y * fb.pitch);
    return fb;
  }

  /** Runs fn after every earlier change has completed (one commit in flight at a time). */
  private serial<T>(fn: () => Promise<T> | T): Promise<T> {
    const r = this.queue.then(fn);
    this.queue = r.catch(() => {});
    return r;
  }

  /**
   * One atomic commit. With a running CRTC in it: non-blocking, resolved by its
   * completion event (the kernel sends one per CRTC; at most a frame later).
   */
  private commitAtomic(objects: { id: number; props: { id: number; value: bigint | number }[] }[], crtcInvolved: boolean): Promise<void> {
    if (!crtcInvolved) {
      drm.atomicCommit(this.fd, objects);
      return Promise.resolve();
    }
    const id = this.nextEvent++;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new HalError("the display did not complete the change within 2 s"));
      }, 2000);
      this.pending.set(id, { resolve, timer });
      try {
        drm.atomicCommit(this.fd, objects, drm.MODE_ATOMIC_NONBLOCK | drm.MODE_PAGE_FLIP_EVENT, id);
      } catch (e) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(e);
      }
    });
  }

  /** Shows fbId (0: none) on the plane in window, by atomic commit or SETPLANE. */
  private show(p: PlaneState, fbId: number, w: Window | null, crtc = this.output.crtcId): Promise<void> {
    const crtcId = fbId ? crtc : 0;
    const r = w ?? { src: { x: 0, y: 0, width: 0, height: 0 }, dst: { x: 0, y: 0, width: 0, height: 0 } };
    const s: drm.PlaneSetting = {
      crtcId, fbId, crtcX: r.dst.x, crtcY: r.dst.y, crtcW: r.dst.width, crtcH: r.dst.height,
      srcX: r.src.x * 65536, srcY: r.src.y * 65536, srcW: r.src.width * 65536, srcH: r.src.height * 65536,
    };
    if (this.commit === "legacy") {
      drm.setPlane(this.fd, p.planeId, s);
      return Promise.resolve();
    }
    const prop = (name: string, value: number) => {
      const id = p.props.get(name)?.id;
      if (id === undefined) throw new HalError(`plane ${p.planeId} has no ${name} property`);
      return { id, value: name === "CRTC_X" || name === "CRTC_Y" ? BigInt.asUintN(64, BigInt(value)) : value };
    };
    // Turning a plane off involves the CRTC it was on.
    const involved = crtcId !== 0 || drm.getPlane(this.fd, p.planeId).crtcId !== 0;
    return this.commitAtomic([{
      id: p.planeId,
      props: [
        prop("FB_ID", fbId), prop("CRTC_ID", crtcId),
        prop("SRC_X", s.srcX), prop("SRC_Y", s.srcY), prop("SRC_W", s.srcW), prop("SRC_H", s.srcH),
        prop("CRTC_X", s.crtcX), prop("CRTC_Y", s.crtcY), prop("CRTC_W", s.crtcW), prop("CRTC_H", s.crtcH),
      ],
    }], involved);
  }

  attach(i: number, frame: Size, window: Window, comp: { opacity: number; zOrder: number }): Promise<number> {
    return this.serial(() => this.attachNow(i, frame, window, comp));
  }

  private async attachNow(i: number, frame: Size, window: Window, comp: { opacity: number; zOrder: number }): Promise<number> {
    const p = this.plane(i);
    if (this.crtcIndex >= 0 && !(p.possibleCrtcs & (1 << this.crtcIndex))) {
      throw new HalError(`plane ${p.planeId} cannot be shown on CRTC ${this.output.crtcId}`);
    }
    let fb: kms.DumbFramebuffer | null = null;
    if (!p.fb) p.before = this.current(p);
    try {
      this.ensureActive();
      fb = this.newFramebuffer(i, frame);
      await this.show(p, fb.fbId, window);
    } catch (e) {
      if (fb) kms.destroyDumbFramebuffer(this.fd, fb);
      throw hal(`connecting plane ${p.planeId}`, e);
    }
    if (p.fb) kms.destroyDumbFramebuffer(this.fd, p.fb);
    p.fb = fb;
    try {
      await this.compositeNow([{ planeIndex: i, ...comp }]);
    } catch (e) {
      this.log.warn({ err: e, plane: p.planeId }, "compositing of a connected plane not applied");
    }
    return p.planeId;
  }

  resize(i: number, frame: Size, window: Window): Promise<void> {
    return this.serial(() => this.resizeNow(i, frame, window));
  }

  private async resizeNow(i: number, frame: Size, window: Window): Promise<void> {
    const p = this.plane(i);
    let fb: kms.DumbFramebuffer | null = null;
    try {
      fb = this.newFramebuffer(i, frame);
      await this.show(p, fb.fbId, window);
    } catch (e) {
      if (fb) kms.destroyDumbFramebuffer(this.fd, fb);
      throw hal(`a ${frame.width}x${frame.height} frame on plane ${p.planeId}`, e);
    }
    if (p.fb) kms.destroyDumbFramebuffer(this.fd, p.fb);
    p.fb = fb;
  }

  setWindow(i: number, window: Window): Promise<void> {
    return this.serial(async () => {
      const p = this.plane(i);
      if (!p.fb) throw new HalError(`plane ${p.planeId} has no framebuffer`);
      try {
        await this.show(p, p.fb.fbId, window);
      } catch (e) {
        throw hal(`window of plane ${p.planeId}`, e);
      }
    });
  }

  setCompositing(changes: { planeIndex: number; opacity: number; zOrder: number }[]): Promise<Compositing> {
    return this.serial(() => this.compositeNow(changes));
  }

  private async compositeNow(changes: { planeIndex: number; opacity: number; zOrder: number }[]): Promise<Compositing> {
    const sets: { planeId: number; id: number; value: bigint }[] = [];
    let alpha = true, zpos = true;
    for (const c of changes) {
      const p = this.plane(c.planeIndex);
      const a = p.props.get("alpha");
      if (a && !(a.prop.flags & PROP_IMMUTABLE)) sets.push({ planeId: p.planeId, id: a.id, value: BigInt(c.opacity * 0x101) });
      else alpha = false;
      const z = p.props.get("zpos");
      if (z && !(z.prop.flags & PROP_IMMUTABLE)) {
        const [min = 0n, max = 0n] = z.prop.values;
        const v = min + BigInt(c.zOrder);
        sets.push({ planeId: p.planeId, id: z.id, value: v > max ? max : v });
      } else zpos = false;
    }
    try {
      if (this.commit === "atomic" && sets.length) {
        const byPlane = new Map<number, { id: number; value: bigint }[]>();
        for (const s of sets) byPlane.set(s.planeId, [...(byPlane.get(s.planeId) ?? []), { id: s.id, value: s.value }]);
        // A plane on the CRTC names it again, so the commit's completion event comes from it.
        let involved = false;
        for (const [planeId, props] of byPlane) {
          const crtcId = drm.getPlane(this.fd, planeId).crtcId;
          const prop = this.planes.find((x) => x.planeId === planeId)!.props.get("CRTC_ID");
          if (crtcId && prop) {
            props.push({ id: prop.id, value: BigInt(crtcId) });
            involved = true;
          }
        }
        await this.commitAtomic([...byPlane].map(([id, props]) => ({ id, props })), involved);
      } else {
        for (const s of sets) drm.setObjectProperty(this.fd, s.planeId, drm.MODE_OBJECT_PLANE, s.id, s.value);
      }
    } catch (e) {
      throw hal("plane compositing", e);
    }
    return { alpha, zpos };
  }

  /** The framebuffer a plane shows now (fbcon's, another client's), with its size; null: none. */
  private current(p: PlaneState): PlaneState["before"] {
    const g = drm.getPlane(this.fd, p.planeId);
    if (!g.fbId) return null;
    try {
      const f = kms.getFramebuffer(this.fd, g.fbId);
      return { fbId: g.fbId, crtcId: g.crtcId, width: f.width, height: f.height };
    } catch {
      return null;
    }
  }

  /**
   * Gives the plane back: to what it showed before (fbcon's framebuffer on a primary
   * plane), else off; a primary plane that a driver will not turn off while its CRTC
   * is on (simple display pipes such as bochs) shows the black background.
   */
  private async giveBack(p: PlaneState): Promise<void> {
    const whole = (w: number, h: number): Window => ({ src: { x: 0, y: 0, width: w, height: h }, dst: { x: 0, y: 0, width: w, height: h } });
    const tries: (() => Promise<void>)[] = [];
    const b = p.before;
    if (b) tries.push(() => this.show(p, b.fbId, whole(b.width, b.height), b.crtcId));
    tries.push(() => this.show(p, 0, null));
    const bg = this.background;
    if (bg) tries.push(() => this.show(p, bg.fbId, whole(bg.width, bg.height)));
    let last: unknown;
    for (const t of tries) {
      try {
        return await t();
      } catch (e) {
        last = e;
      }
    }
    throw last;
  }

  detach(i: number): Promise<void> {
    return this.serial(() => this.detachNow(i));
  }

  private async detachNow(i: number): Promise<void> {
    const p = this.plane(i);
    try {
      await this.giveBack(p);
    } catch (e) {
      throw hal(`turning plane ${p.planeId} off`, e);
    }
    if (p.fb) kms.destroyDumbFramebuffer(this.fd, p.fb);
    p.fb = null;
    p.before = null;
  }

  close(): void {
    this.events.close();
    for (const p of this.pending.values()) clearTimeout(p.timer);
    this.pending.clear();
    // At stop, SETPLANE (blocking, at most a frame a plane): the fd closes right after.
    for (const p of this.planes) {
      if (!p.fb) continue;
      const b = p.before;
      try {
        if (b) {
          drm.setPlane(this.fd, p.planeId, { crtcId: b.crtcId, fbId: b.fbId, crtcX: 0, crtcY: 0, crtcW: b.width, crtcH: b.height,
            srcX: 0, srcY: 0, srcW: b.width * 65536, srcH: b.height * 65536 });
        } else {
          drm.setPlane(this.fd, p.planeId, { crtcId: 0, fbId: 0, crtcX: 0, crtcY: 0, crtcW: 0, crtcH: 0, srcX: 0, srcY: 0, srcW: 0, srcH: 0 });
        }
      } catch {}
      kms.destroyDumbFramebuffer(this.fd, p.fb);
      p.fb = null;
    }
    if (this.background) kms.destroyDumbFramebuffer(this.fd, this.background);
    drm.close(this.fd);
  }
}
