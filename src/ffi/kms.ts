// KMS output (drm/drm_mode.h): dumb buffers (CREATE_DUMB, MAP_DUMB, DESTROY_DUMB),
// framebuffers over them (ADDFB2, RMFB) and mode setting (SETCRTC), enough to put
// pixels on a display's primary plane. The read side (resources, connectors, CRTCs,
// planes) is drm.ts. Setting a CRTC needs DRM master: the first opener of a card
// that no compositor holds gets it.
import { IOWR, ioctl } from "./libc.ts";
import { mmap, type Mapping } from "./shm.ts";
import { struct } from "./struct.ts";
import * as drm from "./drm.ts";

const DRM_IOWR = (nr: number, size: number) => IOWR("d", nr, size);

/** DRM_FORMAT_XRGB8888 (fourcc XR24): 32 bits a pixel, B, G, R, X in memory. */
export const FORMAT_XRGB8888 = 0x34325258;

export const structs = {
  drm_mode_create_dumb: {
    c: "struct drm_mode_create_dumb", size: 32,
    fields: { height: 0, width: 4, bpp: 8, flags: 12, handle: 16, pitch: 20, size: 24 },
  },
  drm_mode_map_dumb: { c: "struct drm_mode_map_dumb", size: 16, fields: { handle: 0, pad: 4, offset: 8 } },
  drm_mode_destroy_dumb: { c: "struct drm_mode_destroy_dumb", size: 4, fields: { handle: 0 } },
  drm_mode_fb_cmd: {
    c: "struct drm_mode_fb_cmd", size: 28,
    fields: { fb_id: 0, width: 4, height: 8, pitch: 12, bpp: 16, depth: 20, handle: 24 },
  },
  drm_mode_fb_cmd2: {
    c: "struct drm_mode_fb_cmd2", size: 104,
    fields: { fb_id: 0, width: 4, height: 8, pixel_format: 12, flags: 16, handles: 20, pitches: 36, offsets: 52, modifier: 72 },
    lengths: { handles: 16, pitches: 16, offsets: 16, modifier: 32 },
  },
} as const;
const S = structs;
const D = drm.structs;

export const ioctls = {
  DRM_IOCTL_MODE_SETCRTC: DRM_IOWR(0xa2, D.drm_mode_crtc.size),
  DRM_IOCTL_MODE_GETFB: DRM_IOWR(0xad, S.drm_mode_fb_cmd.size),
  DRM_IOCTL_MODE_RMFB: DRM_IOWR(0xaf, 4),
  DRM_IOCTL_MODE_CREATE_DUMB: DRM_IOWR(0xb2, S.drm_mode_create_dumb.size),
  DRM_IOCTL_MODE_MAP_DUMB: DRM_IOWR(0xb3, S.drm_mode_map_dumb.size),
  DRM_IOCTL_MODE_DESTROY_DUMB: DRM_IOWR(0xb4, S.drm_mode_destroy_dumb.size),
  DRM_IOCTL_MODE_ADDFB2: DRM_IOWR(0xb8, S.drm_mode_fb_cmd2.size),
} as const;

/** A dumb buffer mapped into the process, with a framebuffer over it. */
export interface DumbFramebuffer {
  fbId: number;
  handle: number;
  width: number;
  height: number;
  /** Bytes a row. */
  pitch: number;
  map: Mapping;
}

/** Creates a width x height XRGB8888 dumb buffer, maps it and adds a framebuffer for it. */
export function createDumbFramebuffer(fd: number, width: number, height: number): DumbFramebuffer {
  const c = struct(S.drm_mode_create_dumb).setU32("width", width).setU32("height", height).setU32("bpp", 32);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_CREATE_DUMB, c.buf, "DRM_IOCTL_MODE_CREATE_DUMB");
  const handle = c.u32("handle"), pitch = c.u32("pitch"), size = Number(c.u64("size"));
  try {
    const f = struct(S.drm_mode_fb_cmd2).setU32("width", width).setU32("height", height).setU32("pixel_format", FORMAT_XRGB8888)
      .setU32At("handles", 0, handle).setU32At("pitches", 0, pitch);
    ioctl(fd, ioctls.DRM_IOCTL_MODE_ADDFB2, f.buf, "DRM_IOCTL_MODE_ADDFB2");
    const fbId = f.u32("fb_id");
    try {
      const m = struct(S.drm_mode_map_dumb).setU32("handle", handle);
      ioctl(fd, ioctls.DRM_IOCTL_MODE_MAP_DUMB, m.buf, "DRM_IOCTL_MODE_MAP_DUMB");
      const map = mmap(fd, size, { offset: Number(m.u64("offset")) });
      return { fbId, handle, width, height, pitch, map };
    } catch (e) {
      removeFramebuffer(fd, fbId);
      throw e;
    }
  } catch (e) {
    destroyDumb(fd, handle);
    throw e;
  }
}

export function removeFramebuffer(fd: number, fbId: number): void {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(fbId);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_RMFB, b, "DRM_IOCTL_MODE_RMFB");
}

export function destroyDumb(fd: number, handle: number): void {
  ioctl(fd, ioctls.DRM_IOCTL_MODE_DESTROY_DUMB, struct(S.drm_mode_destroy_dumb).setU32("handle", handle).buf, "DRM_IOCTL_MODE_DESTROY_DUMB");
}

/** Unmaps, removes the framebuffer and frees the buffer (each step tried). */
export function destroyDumbFramebuffer(fd: number, fb: DumbFramebuffer): void {
  fb.map.unmap();
  try {
    removeFramebuffer(fd, fb.fbId);
  } catch {}
  try {
    destroyDumb(fd, fb.handle);
  } catch {}
}

export interface FramebufferInfo { fbId: number; width: number; height: number; pitch: number; bpp: number; depth: number; handle: number }

/**
 * DRM_IOCTL_MODE_GETFB: a framebuffer's size and format; `handle` is a GEM handle
 * of this fd for its buffer only for DRM master or CAP_SYS_ADMIN (else 0).
 */
export function getFramebuffer(fd: number, fbId: number): FramebufferInfo {
  const f = struct(S.drm_mode_fb_cmd).setU32("fb_id", fbId);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETFB, f.buf, "DRM_IOCTL_MODE_GETFB");
  return {
    fbId, width: f.u32("width"), height: f.u32("height"), pitch: f.u32("pitch"), bpp: f.u32("bpp"), depth: f.u32("depth"),
    handle: f.u32("handle"),
  };
}

/** Maps a dumb buffer by GEM handle (read-only by default). */
export function mapDumb(fd: number, handle: number, size: number, prot = 1 /* PROT_READ */): Mapping {
  const m = struct(S.drm_mode_map_dumb).setU32("handle", handle);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_MAP_DUMB, m.buf, "DRM_IOCTL_MODE_MAP_DUMB");
  return mmap(fd, size, { offset: Number(m.u64("offset")), prot });
}

/**
 * DRM_IOCTL_MODE_SETCRTC: shows fbId on crtcId through the connectors with mode;
 * fbId 0 and no mode turn the CRTC off.
 */
export function setCrtc(fd: number, crtcId: number, fbId: number, connectors: number[], mode: drm.ModeInfo | null, x = 0, y = 0): void {
  const ids = Buffer.alloc(Math.max(4, connectors.length * 4));
  connectors.forEach((id, i) => ids.writeUInt32LE(id, i * 4));
  const c = struct(D.drm_mode_crtc).setU32("crtc_id", crtcId).setU32("fb_id", fbId).setU32("x", x).setU32("y", y)
    .setU32("count_connectors", connectors.length).setPtr("set_connectors_ptr", connectors.length ? ids : null);
  if (mode) {
    c.setU32("mode_valid", 1);
    const m = c.nested("mode", D.drm_mode_modeinfo);
    m.setU32("clock", mode.clock).setU16("hdisplay", mode.hdisplay).setU16("hsync_start", mode.hsyncStart)
      .setU16("hsync_end", mode.hsyncEnd).setU16("htotal", mode.htotal).setU16("hskew", mode.hskew)
      .setU16("vdisplay", mode.vdisplay).setU16("vsync_start", mode.vsyncStart).setU16("vsync_end", mode.vsyncEnd)
      .setU16("vtotal", mode.vtotal).setU16("vscan", mode.vscan).setU32("vrefresh", mode.vrefresh).setU32("flags", mode.flags)
      .setU32("type", mode.type).setStr("name", mode.name);
  }
  ioctl(fd, ioctls.DRM_IOCTL_MODE_SETCRTC, c.buf, "DRM_IOCTL_MODE_SETCRTC");
}

/** A connected connector, the CRTC that can drive it, and its preferred mode (or the first). */
export interface Output {
  connectorId: number;
  crtcId: number;
  mode: drm.ModeInfo;
}

const MODE_TYPE_PREFERRED = 1 << 3;

export function findOutput(fd: number, connectorId?: number): Output | undefined {
  const res = drm.getResources(fd);
  for (const id of connectorId !== undefined ? [connectorId] : res.connectors) {
    const conn = drm.getConnector(fd, id);
    if (conn.connection !== drm.MODE_CONNECTED || !conn.modes.length) continue;
    const mode = conn.modes.find((m) => m.type & MODE_TYPE_PREFERRED) ?? conn.modes[0]!;
    for (const encId of conn.encoderId ? [conn.encoderId, ...conn.encoders] : conn.encoders) {
      const enc = drm.getEncoder(fd, encId);
      if (enc.crtcId) return { connectorId: id, crtcId: enc.crtcId, mode };
      const i = res.crtcs.findIndex((_, k) => enc.possibleCrtcs & (1 << k));
      if (i >= 0) return { connectorId: id, crtcId: res.crtcs[i]!, mode };
    }
  }
  return undefined;
}
