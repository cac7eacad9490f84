// The display through DRM/KMS (src/ffi/drm.ts, src/ffi/kms.ts) on the card the
// board recipe names. Planes show XRGB8888 dumb framebuffers of the video's frame
// size; windows are set by one atomic commit of the plane's FB_ID, CRTC_ID, SRC_*
// and CRTC_* properties where the driver has atomic modesetting, by SETPLANE
// otherwise; alpha and zpos are plane properties, set where the plane has them.
// Plane updates need DRM master: the service must be the card's first opener (no
// compositor running on it). Each ioctl returns once the kernel has validated and
// queued the change (no wait for a vblank here), so none blocks the event loop.
import { readdirSync } from "node:fs";
import * as drm from "../../../ffi/drm";
import * as kms from "../../../ffi/kms";
import { SysError } from "../../../ffi/libc";
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

  /** Shows fbId (0: none) on the plane in window, by atomic commit or SETPLANE. */
  private show(p: PlaneState, fbId: number, w: Window | null, crtc = this.output.crtcId): void {
    const crtcId = fbId ? crtc : 0;
    const r = w ?? { src: { x: 0, y: 0, width: 0, height: 0 }, dst: { x: 0, y: 0, width: 0, height: 0 } };
    const s: drm.PlaneSetting = {
      crtcId, fbId, crtcX: r.dst.x, crtcY: r.dst.y, crtcW: r.dst.width, crtcH: r.dst.height,
      srcX: r.src.x * 65536, srcY: r.src.y * 65536, srcW: r.src.width * 65536, srcH: r.src.height * 65536,
    };
    if (this.commit === "legacy") return drm.setPlane(this.fd, p.planeId, s);
    const prop = (name: string, value: number) => {
      const id = p.props.get(name)?.id;
      if (id === undefined) throw new HalError(`plane ${p.planeId} has no ${name} property`);
      return { id, value: name === "CRTC_X" || name === "CRTC_Y" ? BigInt.asUintN(64, BigInt(value)) : value };
    };
    drm.atomicCommit(this.fd, [{
      id: p.planeId,
      props: [
        prop("FB_ID", fbId), prop("CRTC_ID", crtcId),
        prop("SRC_X", s.srcX), prop("SRC_Y", s.srcY), prop("SRC_W", s.srcW), prop("SRC_H", s.srcH),
        prop("CRTC_X", s.crtcX), prop("CRTC_Y", s.crtcY), prop("CRTC_W", s.crtcW), prop("CRTC_H", s.crtcH),
      ],
    }]);
  }

  attach(i: number, frame: Size, window: Window, comp: { opacity: number; zOrder: number }): number {
    const p = this.plane(i);
    if (this.crtcIndex >= 0 && !(p.possibleCrtcs & (1 << this.crtcIndex))) {
      throw new HalError(`plane ${p.planeId} cannot be shown on CRTC ${this.output.crtcId}`);
    }
    let fb: kms.DumbFramebuffer | null = null;
    if (!p.fb) p.before = this.current(p);
    try {
      this.ensureActive();
      fb = this.newFramebuffer(i, frame);
      this.show(p, fb.fbId, window);
    } catch (e) {
      if (fb) kms.destroyDumbFramebuffer(this.fd, fb);
      throw hal(`connecting plane ${p.planeId}`, e);
    }
    if (p.fb) kms.destroyDumbFramebuffer(this.fd, p.fb);
    p.fb = fb;
    try {
      this.setCompositing([{ planeIndex: i, ...comp }]);
    } catch (e) {
      this.log.warn({ err: e, plane: p.planeId }, "compositing of a connected plane not applied");
    }
    return p.planeId;
  }

  resize(i: number, frame: Size, window: Window): void {
    const p = this.plane(i);
    let fb: kms.DumbFramebuffer | null = null;
    try {
      fb = this.newFramebuffer(i, frame);
      this.show(p, fb.fbId, window);
    } catch (e) {
      if (fb) kms.destroyDumbFramebuffer(this.fd, fb);
      throw hal(`a ${frame.width}x${frame.height} frame on plane ${p.planeId}`, e);
    }
    if (p.fb) kms.destroyDumbFramebuffer(this.fd, p.fb);
    p.fb = fb;
  }

  setWindow(i: number, window: Window): void {
    const p = this.plane(i);
    if (!p.fb) throw new HalError(`plane ${p.planeId} has no framebuffer`);
    try {
      this.show(p, p.fb.fbId, window);
    } catch (e) {
      throw hal(`window of plane ${p.planeId}`, e);
    }
  }

  setCompositing(changes: { planeIndex: number; opacity: number; zOrder: number }[]): Compositing {
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
        drm.atomicCommit(this.fd, [...byPlane].map(([id, props]) => ({ id, props })));
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
  private giveBack(p: PlaneState): void {
    const whole = (w: number, h: number): Window => ({ src: { x: 0, y: 0, width: w, height: h }, dst: { x: 0, y: 0, width: w, height: h } });
    const tries: (() => void)[] = [];
    const b = p.before;
    if (b) tries.push(() => this.show(p, b.fbId, whole(b.width, b.height), b.crtcId));
    tries.push(() => this.show(p, 0, null));
    const bg = this.background;
    if (bg) tries.push(() => this.show(p, bg.fbId, whole(bg.width, bg.height)));
    let last: unknown;
    for (const t of tries) {
      try {
        return t();
      } catch (e) {
        last = e;
      }
    }
    throw last;
  }

  detach(i: number): void {
    const p = this.plane(i);
    try {
      this.giveBack(p);
    } catch (e) {
      throw hal(`turning plane ${p.planeId} off`, e);
    }
    if (p.fb) kms.destroyDumbFramebuffer(this.fd, p.fb);
    p.fb = null;
    p.before = null;
  }

  close(): void {
    for (const p of this.planes) {
      if (!p.fb) continue;
      try {
        this.giveBack(p);
      } catch {}
      kms.destroyDumbFramebuffer(this.fd, p.fb);
      p.fb = null;
    }
    if (this.background) kms.destroyDumbFramebuffer(this.fd, this.background);
    drm.close(this.fd);
  }
}
