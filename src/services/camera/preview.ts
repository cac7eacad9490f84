// Preview on a display: a DRM card's connected output (its preferred mode), driven
// through the primary plane with a dumb XRGB8888 framebuffer the camera's frames are
// drawn into (YUYV converted with BT.601 tables, MJPEG decoded by libturbojpeg
// straight into the framebuffer), top-left, unscaled, clipped to the screen. The
// CRTC's previous state is put back when the preview stops.
//
// Drawing runs in the frame callback on the event loop (~3 ms for 640x480 on a
// desktop core); when one draw takes longer than a frame interval, the frames that
// arrive meanwhile are not drawn (the display rate drops, the stream's does not).
import * as drm from "../../ffi/drm";
import * as kms from "../../ffi/kms";
import * as tj from "../../ffi/turbojpeg";
import type { CameraFormat } from "./backend/types";

export interface DisplayConfig {
  /** The DRM card node (/dev/dri/cardN). */
  card: string;
  /** A connector id; default the first connected one. */
  connector?: number;
}

// BT.601 limited range to RGB, as lookup tables.
const YT = new Int32Array(256), RV = new Int32Array(256), GU = new Int32Array(256), GV = new Int32Array(256), BU = new Int32Array(256);
for (let i = 0; i < 256; i++) {
  YT[i] = Math.round(1.164 * (i - 16) * 1024);
  RV[i] = Math.round(1.596 * (i - 128) * 1024);
  GU[i] = Math.round(0.392 * (i - 128) * 1024);
  GV[i] = Math.round(0.813 * (i - 128) * 1024);
  BU[i] = Math.round(2.017 * (i - 128) * 1024);
}
const c8 = (v: number) => (v <= 0 ? 0 : v >= 260608 ? 255 : (v + 512) >> 10); // rounded, clamped to 0..255

/** Draws a YUYV frame into an XRGB8888 buffer (pitch in bytes), clipped to w x h. */
export function yuyvToXrgb(src: Uint8Array, fw: number, fh: number, dst: Uint32Array, pitch: number, w: number, h: number): void {
  const cols = Math.min(fw, w) & ~1, rows = Math.min(fh, h);
  const stride = pitch >> 2;
  for (let r = 0; r < rows; r++) {
    let s = r * fw * 2, d = r * stride;
    for (let x = 0; x < cols; x += 2, s += 4, d += 2) {
      const u = src[s + 1]!, v = src[s + 3]!;
      const rv = RV[v]!, g = GU[u]! + GV[v]!, bu = BU[u]!;
      const y0 = YT[src[s]!]!, y1 = YT[src[s + 2]!]!;
      dst[d] = (c8(y0 + rv) << 16) | (c8(y0 - g) << 8) | c8(y0 + bu);
      dst[d + 1] = (c8(y1 + rv) << 16) | (c8(y1 - g) << 8) | c8(y1 + bu);
    }
  }
}

export class DisplayOutput {
  private fd: number;
  private out: kms.Output;
  private fb: kms.DumbFramebuffer;
  private saved: drm.Crtc;
  private pixels: Uint32Array;
  private skip = 0;
  frames = 0;

  constructor(cfg: DisplayConfig, private readonly format: CameraFormat) {
    this.fd = drm.openCard(cfg.card);
    try {
      const out = kms.findOutput(this.fd, cfg.connector);
      if (!out) throw new Error(`no connected output on ${cfg.card}`);
      this.out = out;
      this.saved = drm.getCrtc(this.fd, out.crtcId);
      this.fb = kms.createDumbFramebuffer(this.fd, out.mode.hdisplay, out.mode.vdisplay);
      this.fb.map.buffer.fill(0);
      this.pixels = new Uint32Array(this.fb.map.buffer.buffer, this.fb.map.buffer.byteOffset, this.fb.map.buffer.byteLength >> 2);
      try {
        kms.setCrtc(this.fd, out.crtcId, this.fb.fbId, [out.connectorId], out.mode);
      } catch (e) {
        kms.destroyDumbFramebuffer(this.fd, this.fb);
        throw e;
      }
    } catch (e) {
      drm.close(this.fd);
      throw e;
    }
  }

  get crtcId(): number {
    return this.out.crtcId;
  }

  /** Draws one frame (or skips it while drawing runs behind the frame rate). */
  show(frame: Uint8Array): void {
    if (this.skip > 0) {
      this.skip--;
      return;
    }
    const t0 = performance.now();
    const { width, height } = this.format;
    if (this.format.format === "YUV") yuyvToXrgb(frame, width, height, this.pixels, this.fb.pitch, this.fb.width, this.fb.height);
    else tj.decodeInto(frame, this.fb.map.buffer, this.fb.pitch, this.fb.width, this.fb.height);
    this.frames++;
    const interval = 1000 / (this.format.fps || 30);
    this.skip = Math.floor((performance.now() - t0) / interval);
  }

  /** Puts the CRTC back as it was and frees the framebuffer. */
  close(): void {
    try {
      const s = this.saved;
      if (s.fbId && s.mode) kms.setCrtc(this.fd, s.crtcId, s.fbId, [this.out.connectorId], s.mode, s.x, s.y);
      else kms.setCrtc(this.fd, s.crtcId, 0, [], null);
    } catch {}
    kms.destroyDumbFramebuffer(this.fd, this.fb);
    drm.close(this.fd);
  }
}
