// The virtual display: one CRTC and connector, and as many planes as the options
// give (two on the virtual board), each keeping what a DRM plane would: its
// framebuffer, window, alpha and zpos. Scaling within the sinks' limits is accepted
// (the service checks the limits); a source crop outside the frame is refused as a
// driver would refuse it.
import type { Size } from "../schemas";
import { HalError, type Compositing, type DisplayInfo, type VideoBackend, type Window } from "./types";

export interface VirtualPlane {
  planeId: number;
  fbId: number;
  frame: Size | null;
  window: Window | null;
  alpha: number;
  zpos: number;
}

const PLANE_BASE = 31, CRTC_ID = 40, CONNECTOR_ID = 50;

export class VirtualDisplay implements VideoBackend {
  readonly kind = "virtual" as const;
  readonly commit = "memory";
  readonly planes: VirtualPlane[];
  private nextFb = 100;

  constructor(private readonly size: Size, planeCount = 2) {
    this.planes = [];
    for (let i = 0; i < planeCount; i++) this.planes.push({ planeId: PLANE_BASE + i, fbId: 0, frame: null, window: null, alpha: 0xffff, zpos: i });
  }

  display(): DisplayInfo {
    return { width: this.size.width, height: this.size.height, crtcId: CRTC_ID, connectorId: CONNECTOR_ID };
  }

  planeIds(): number[] {
    return this.planes.map((p) => p.planeId);
  }

  connectedCount(): number {
    return 1;
  }

  private plane(i: number): VirtualPlane {
    const p = this.planes[i];
    if (!p) throw new HalError(`the display has no plane ${i}`);
    return p;
  }

  private check(frame: Size, w: Window): void {
    const { src } = w;
    if (src.x < 0 || src.y < 0 || src.x + src.width > frame.width || src.y + src.height > frame.height || !src.width || !src.height) {
      throw new HalError(`source ${JSON.stringify(src)} is outside the ${frame.width}x${frame.height} frame`);
    }
  }

  async attach(i: number, frame: Size, window: Window, comp: { opacity: number; zOrder: number }): Promise<number> {
    const p = this.plane(i);
    this.check(frame, window);
    Object.assign(p, { fbId: this.nextFb++, frame, window, alpha: comp.opacity * 0x101, zpos: comp.zOrder });
    return p.planeId;
  }

  async resize(i: number, frame: Size, window: Window): Promise<void> {
    const p = this.plane(i);
    this.check(frame, window);
    Object.assign(p, { fbId: this.nextFb++, frame, window });
  }

  async setWindow(i: number, window: Window): Promise<void> {
    const p = this.plane(i);
    if (!p.frame) throw new HalError(`plane ${p.planeId} has no framebuffer`);
    this.check(p.frame, window);
    p.window = window;
  }

  async setCompositing(changes: { planeIndex: number; opacity: number; zOrder: number }[]): Promise<Compositing> {
    for (const c of changes) this.plane(c.planeIndex);
    for (const c of changes) Object.assign(this.plane(c.planeIndex), { alpha: c.opacity * 0x101, zpos: c.zOrder });
    return { alpha: true, zpos: true };
  }

  async detach(i: number): Promise<void> {
    Object.assign(this.plane(i), { fbId: 0, frame: null, window: null });
  }

  close(): void {}
}
