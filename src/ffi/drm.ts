// DRM/KMS (drm/drm.h, drm/drm_mode.h): driver version, client caps and the mode
// objects (CRTCs, connectors, encoders, planes) with their properties. Array-valued
// ioctls are called twice, first for the counts, as libdrm does.
import { IOW, IOWR, O_CLOEXEC, O_NONBLOCK, O_RDWR, closeFd, cString, ioctl, openFile, readAvailable } from "./libc.ts";
import { Struct, readU32s, readU64s, struct, u32Array, u64Array } from "./struct.ts";

const DRM_IOCTL_BASE = "d";
const DRM_IOW = (nr: number, size: number) => IOW(DRM_IOCTL_BASE, nr, size);
const DRM_IOWR = (nr: number, size: number) => IOWR(DRM_IOCTL_BASE, nr, size);

export const CLIENT_CAP_STEREO_3D = 1, CLIENT_CAP_UNIVERSAL_PLANES = 2, CLIENT_CAP_ATOMIC = 3;
export const MODE_OBJECT_CRTC = 0xcccccccc, MODE_OBJECT_CONNECTOR = 0xc0c0c0c0, MODE_OBJECT_ENCODER = 0xe0e0e0e0,
  MODE_OBJECT_PLANE = 0xeeeeeeee;
/** drm_mode_get_connector.connection */
export const MODE_CONNECTED = 1, MODE_DISCONNECTED = 2, MODE_UNKNOWNCONNECTION = 3;
export const MODE_CONNECTOR_VIRTUAL = 15;
/** drm_mode_atomic.flags (with MODE_PAGE_FLIP_EVENT: an event on the fd when the commit is done) */
export const MODE_PAGE_FLIP_EVENT = 0x01;
/** drm_event.type */
export const EVENT_VBLANK = 0x01, EVENT_FLIP_COMPLETE = 0x02;
export const MODE_ATOMIC_TEST_ONLY = 0x0100, MODE_ATOMIC_NONBLOCK = 0x0200, MODE_ATOMIC_ALLOW_MODESET = 0x0400;
export const MODE_PROP_RANGE = 1 << 1, MODE_PROP_ENUM = 1 << 3, MODE_PROP_BITMASK = 1 << 5;
export const DRM_DISPLAY_MODE_LEN = 32, DRM_PROP_NAME_LEN = 32;

export const structs = {
  drm_version: {
    c: "struct drm_version", size: 64,
    fields: { version_major: 0, version_minor: 4, version_patchlevel: 8, name_len: 16, name: 24, date_len: 32, date: 40, desc_len: 48, desc: 56 },
  },
  drm_set_client_cap: { c: "struct drm_set_client_cap", size: 16, fields: { capability: 0, value: 8 } },
  drm_mode_card_res: {
    c: "struct drm_mode_card_res", size: 64,
    fields: {
      fb_id_ptr: 0, crtc_id_ptr: 8, connector_id_ptr: 16, encoder_id_ptr: 24, count_fbs: 32, count_crtcs: 36,
      count_connectors: 40, count_encoders: 44, min_width: 48, max_width: 52, min_height: 56, max_height: 60,
    },
  },
  drm_mode_modeinfo: {
    c: "struct drm_mode_modeinfo", size: 68,
    fields: {
      clock: 0, hdisplay: 4, hsync_start: 6, hsync_end: 8, htotal: 10, hskew: 12, vdisplay: 14, vsync_start: 16,
      vsync_end: 18, vtotal: 20, vscan: 22, vrefresh: 24, flags: 28, type: 32, name: 36,
    },
    lengths: { name: DRM_DISPLAY_MODE_LEN },
  },
  drm_mode_crtc: {
    c: "struct drm_mode_crtc", size: 104,
    fields: { set_connectors_ptr: 0, count_connectors: 8, crtc_id: 12, fb_id: 16, x: 20, y: 24, gamma_size: 28, mode_valid: 32, mode: 36 },
  },
  drm_mode_get_encoder: {
    c: "struct drm_mode_get_encoder", size: 20,
    fields: { encoder_id: 0, encoder_type: 4, crtc_id: 8, possible_crtcs: 12, possible_clones: 16 },
  },
  drm_mode_get_connector: {
    c: "struct drm_mode_get_connector", size: 80,
    fields: {
      encoders_ptr: 0, modes_ptr: 8, props_ptr: 16, prop_values_ptr: 24, count_modes: 32, count_props: 36,
      count_encoders: 40, encoder_id: 44, connector_id: 48, connector_type: 52, connector_type_id: 56, connection: 60,
      mm_width: 64, mm_height: 68, subpixel: 72, pad: 76,
    },
  },
  drm_mode_get_plane_res: { c: "struct drm_mode_get_plane_res", size: 16, fields: { plane_id_ptr: 0, count_planes: 8 } },
  drm_mode_get_plane: {
    c: "struct drm_mode_get_plane", size: 32,
    fields: { plane_id: 0, crtc_id: 4, fb_id: 8, possible_crtcs: 12, gamma_size: 16, count_format_types: 20, format_type_ptr: 24 },
  },
  drm_mode_obj_get_properties: {
    c: "struct drm_mode_obj_get_properties", size: 32,
    fields: { props_ptr: 0, prop_values_ptr: 8, count_props: 16, obj_id: 20, obj_type: 24 },
  },
  drm_mode_get_property: {
    c: "struct drm_mode_get_property", size: 64,
    fields: { values_ptr: 0, enum_blob_ptr: 8, prop_id: 16, flags: 20, name: 24, count_values: 56, count_enum_blobs: 60 },
    lengths: { name: DRM_PROP_NAME_LEN },
  },
  drm_mode_property_enum: { c: "struct drm_mode_property_enum", size: 40, fields: { value: 0, name: 8 }, lengths: { name: DRM_PROP_NAME_LEN } },
  drm_mode_set_plane: {
    c: "struct drm_mode_set_plane", size: 48,
    fields: {
      plane_id: 0, crtc_id: 4, fb_id: 8, flags: 12, crtc_x: 16, crtc_y: 20, crtc_w: 24, crtc_h: 28,
      src_x: 32, src_y: 36, src_h: 40, src_w: 44,
    },
  },
  drm_mode_obj_set_property: { c: "struct drm_mode_obj_set_property", size: 24, fields: { value: 0, prop_id: 8, obj_id: 12, obj_type: 16 } },
  drm_event: { c: "struct drm_event", size: 8, fields: { type: 0, length: 4 } },
  drm_event_vblank: {
    c: "struct drm_event_vblank", size: 32,
    fields: { base: 0, user_data: 8, tv_sec: 16, tv_usec: 20, sequence: 24, crtc_id: 28 },
  },
  drm_mode_atomic: {
    c: "struct drm_mode_atomic", size: 56,
    fields: { flags: 0, count_objs: 4, objs_ptr: 8, count_props_ptr: 16, props_ptr: 24, prop_values_ptr: 32, reserved: 40, user_data: 48 },
  },
} as const;
const S = structs;

export const ioctls = {
  DRM_IOCTL_VERSION: DRM_IOWR(0x00, S.drm_version.size),
  DRM_IOCTL_SET_CLIENT_CAP: DRM_IOW(0x0d, S.drm_set_client_cap.size),
  DRM_IOCTL_MODE_GETRESOURCES: DRM_IOWR(0xa0, S.drm_mode_card_res.size),
  DRM_IOCTL_MODE_GETCRTC: DRM_IOWR(0xa1, S.drm_mode_crtc.size),
  DRM_IOCTL_MODE_GETENCODER: DRM_IOWR(0xa6, S.drm_mode_get_encoder.size),
  DRM_IOCTL_MODE_GETCONNECTOR: DRM_IOWR(0xa7, S.drm_mode_get_connector.size),
  DRM_IOCTL_MODE_GETPROPERTY: DRM_IOWR(0xaa, S.drm_mode_get_property.size),
  DRM_IOCTL_MODE_GETPLANERESOURCES: DRM_IOWR(0xb5, S.drm_mode_get_plane_res.size),
  DRM_IOCTL_MODE_GETPLANE: DRM_IOWR(0xb6, S.drm_mode_get_plane.size),
  DRM_IOCTL_MODE_OBJ_GETPROPERTIES: DRM_IOWR(0xb9, S.drm_mode_obj_get_properties.size),
  DRM_IOCTL_MODE_SETPLANE: DRM_IOWR(0xb7, S.drm_mode_set_plane.size),
  DRM_IOCTL_MODE_OBJ_SETPROPERTY: DRM_IOWR(0xba, S.drm_mode_obj_set_property.size),
  DRM_IOCTL_MODE_ATOMIC: DRM_IOWR(0xbc, S.drm_mode_atomic.size),
} as const;

/** Opens /dev/dri/cardN (a path or a number). Non-blocking, so reading its events never waits. */
export function openCard(card: string | number): number {
  return openFile(typeof card === "number" ? `/dev/dri/card${card}` : card, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}

export const close = closeFd;

export interface Version { major: number; minor: number; patchlevel: number; name: string; date: string; desc: string }

/** DRM_IOCTL_VERSION: the driver's name (e.g. "bochs-drm", "vkms"), date and description. */
export function version(fd: number): Version {
  const v = struct(S.drm_version);
  ioctl(fd, ioctls.DRM_IOCTL_VERSION, v.buf, "DRM_IOCTL_VERSION");
  // The first call gives the lengths; the second fills buffers of those sizes (plus a NUL).
  const text = (["name", "date", "desc"] as const).map((f) => {
    const b = Buffer.alloc(Number(v.u64(`${f}_len`)) + 1);
    v.setU64(`${f}_len`, b.length).setPtr(f, b);
    return b;
  });
  ioctl(fd, ioctls.DRM_IOCTL_VERSION, v.buf, "DRM_IOCTL_VERSION");
  const [name, date, desc] = text.map((b) => cString(b, 0, b.length));
  return { major: v.i32("version_major"), minor: v.i32("version_minor"), patchlevel: v.i32("version_patchlevel"), name: name!, date: date!, desc: desc! };
}

/** DRM_IOCTL_SET_CLIENT_CAP, e.g. CLIENT_CAP_UNIVERSAL_PLANES so primary and cursor planes are listed. */
export function setClientCap(fd: number, capability: number, value: number | bigint = 1): void {
  const c = struct(S.drm_set_client_cap).setU64("capability", capability).setU64("value", value);
  ioctl(fd, ioctls.DRM_IOCTL_SET_CLIENT_CAP, c.buf, "DRM_IOCTL_SET_CLIENT_CAP");
}

export interface Resources {
  fbs: number[]; crtcs: number[]; connectors: number[]; encoders: number[];
  minWidth: number; maxWidth: number; minHeight: number; maxHeight: number;
}

const RES_ARRAYS = [["fb_id_ptr", "count_fbs"], ["crtc_id_ptr", "count_crtcs"], ["connector_id_ptr", "count_connectors"],
  ["encoder_id_ptr", "count_encoders"]] as const;

export function getResources(fd: number): Resources {
  for (;;) {
    const r = struct(S.drm_mode_card_res);
    ioctl(fd, ioctls.DRM_IOCTL_MODE_GETRESOURCES, r.buf, "DRM_IOCTL_MODE_GETRESOURCES");
    const counts = RES_ARRAYS.map(([, n]) => r.u32(n));
    const arrays = counts.map((n) => u32Array(n));
    RES_ARRAYS.forEach(([p], i) => r.setPtr(p, arrays[i]));
    ioctl(fd, ioctls.DRM_IOCTL_MODE_GETRESOURCES, r.buf, "DRM_IOCTL_MODE_GETRESOURCES");
    // A hotplug between the calls changes the counts: ask again.
    if (RES_ARRAYS.some(([, n], i) => r.u32(n) > counts[i]!)) continue;
    const [fbs, crtcs, connectors, encoders] = arrays.map((a, i) => readU32s(a, r.u32(RES_ARRAYS[i]![1])));
    return {
      fbs: fbs!, crtcs: crtcs!, connectors: connectors!, encoders: encoders!,
      minWidth: r.u32("min_width"), maxWidth: r.u32("max_width"), minHeight: r.u32("min_height"), maxHeight: r.u32("max_height"),
    };
  }
}

/** Plane ids; without CLIENT_CAP_UNIVERSAL_PLANES only overlay planes are listed. */
export function getPlaneResources(fd: number): number[] {
  const r = struct(S.drm_mode_get_plane_res);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPLANERESOURCES, r.buf, "DRM_IOCTL_MODE_GETPLANERESOURCES");
  const n = r.u32("count_planes");
  const ids = u32Array(n);
  r.setPtr("plane_id_ptr", ids);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPLANERESOURCES, r.buf, "DRM_IOCTL_MODE_GETPLANERESOURCES");
  return readU32s(ids, Math.min(n, r.u32("count_planes")));
}

export interface Plane { planeId: number; crtcId: number; fbId: number; possibleCrtcs: number; gammaSize: number; formats: number[] }

export function getPlane(fd: number, planeId: number): Plane {
  const p = struct(S.drm_mode_get_plane).setU32("plane_id", planeId);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPLANE, p.buf, "DRM_IOCTL_MODE_GETPLANE");
  const n = p.u32("count_format_types");
  const formats = u32Array(n);
  p.setPtr("format_type_ptr", formats);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPLANE, p.buf, "DRM_IOCTL_MODE_GETPLANE");
  return {
    planeId: p.u32("plane_id"), crtcId: p.u32("crtc_id"), fbId: p.u32("fb_id"), possibleCrtcs: p.u32("possible_crtcs"),
    gammaSize: p.u32("gamma_size"), formats: readU32s(formats, Math.min(n, p.u32("count_format_types"))),
  };
}

/** Enables universal planes and counts every plane (primary, overlay and cursor). */
export function planeCount(fd: number): number {
  setClientCap(fd, CLIENT_CAP_UNIVERSAL_PLANES, 1);
  return getPlaneResources(fd).length;
}

export interface ModeInfo {
  clock: number; hdisplay: number; hsyncStart: number; hsyncEnd: number; htotal: number; hskew: number;
  vdisplay: number; vsyncStart: number; vsyncEnd: number; vtotal: number; vscan: number; vrefresh: number;
  flags: number; type: number; name: string;
}

export function decodeMode(m: Struct<typeof S.drm_mode_modeinfo>): ModeInfo {
  return {
    clock: m.u32("clock"), hdisplay: m.u16("hdisplay"), hsyncStart: m.u16("hsync_start"), hsyncEnd: m.u16("hsync_end"),
    htotal: m.u16("htotal"), hskew: m.u16("hskew"), vdisplay: m.u16("vdisplay"), vsyncStart: m.u16("vsync_start"),
    vsyncEnd: m.u16("vsync_end"), vtotal: m.u16("vtotal"), vscan: m.u16("vscan"), vrefresh: m.u32("vrefresh"),
    flags: m.u32("flags"), type: m.u32("type"), name: m.str("name"),
  };
}

export interface Crtc { crtcId: number; fbId: number; x: number; y: number; gammaSize: number; mode: ModeInfo | null }

export function getCrtc(fd: number, crtcId: number): Crtc {
  const c = struct(S.drm_mode_crtc).setU32("crtc_id", crtcId);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETCRTC, c.buf, "DRM_IOCTL_MODE_GETCRTC");
  return {
    crtcId: c.u32("crtc_id"), fbId: c.u32("fb_id"), x: c.u32("x"), y: c.u32("y"), gammaSize: c.u32("gamma_size"),
    mode: c.u32("mode_valid") ? decodeMode(c.nested("mode", S.drm_mode_modeinfo)) : null,
  };
}

export interface Encoder { encoderId: number; encoderType: number; crtcId: number; possibleCrtcs: number; possibleClones: number }

export function getEncoder(fd: number, encoderId: number): Encoder {
  const e = struct(S.drm_mode_get_encoder).setU32("encoder_id", encoderId);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETENCODER, e.buf, "DRM_IOCTL_MODE_GETENCODER");
  return {
    encoderId: e.u32("encoder_id"), encoderType: e.u32("encoder_type"), crtcId: e.u32("crtc_id"),
    possibleCrtcs: e.u32("possible_crtcs"), possibleClones: e.u32("possible_clones"),
  };
}

export interface Connector {
  connectorId: number; encoderId: number; connectorType: number; connectorTypeId: number;
  /** MODE_CONNECTED, MODE_DISCONNECTED or MODE_UNKNOWNCONNECTION */
  connection: number;
  mmWidth: number; mmHeight: number; subpixel: number;
  modes: ModeInfo[]; encoders: number[]; props: { id: number; value: bigint }[];
}

/**
 * DRM_IOCTL_MODE_GETCONNECTOR. The first call with no modes buffer makes the driver
 * probe the connector (on real hardware: an EDID read over DDC, tens of ms).
 */
export function getConnector(fd: number, connectorId: number): Connector {
  for (;;) {
    const c = struct(S.drm_mode_get_connector).setU32("connector_id", connectorId);
    ioctl(fd, ioctls.DRM_IOCTL_MODE_GETCONNECTOR, c.buf, "DRM_IOCTL_MODE_GETCONNECTOR");
    const nModes = c.u32("count_modes"), nProps = c.u32("count_props"), nEnc = c.u32("count_encoders");
    const encoders = u32Array(nEnc), modes = Struct.array(S.drm_mode_modeinfo, nModes);
    const props = u32Array(nProps), values = u64Array(nProps);
    c.setPtr("encoders_ptr", encoders).setPtr("modes_ptr", modes).setPtr("props_ptr", props).setPtr("prop_values_ptr", values);
    ioctl(fd, ioctls.DRM_IOCTL_MODE_GETCONNECTOR, c.buf, "DRM_IOCTL_MODE_GETCONNECTOR");
    if (c.u32("count_modes") > nModes || c.u32("count_props") > nProps || c.u32("count_encoders") > nEnc) continue;
    const ids = readU32s(props, c.u32("count_props")), vals = readU64s(values, c.u32("count_props"));
    return {
      connectorId: c.u32("connector_id"), encoderId: c.u32("encoder_id"), connectorType: c.u32("connector_type"),
      connectorTypeId: c.u32("connector_type_id"), connection: c.u32("connection"), mmWidth: c.u32("mm_width"),
      mmHeight: c.u32("mm_height"), subpixel: c.u32("subpixel"),
      modes: Struct.each(S.drm_mode_modeinfo, modes, c.u32("count_modes")).map(decodeMode),
      encoders: readU32s(encoders, c.u32("count_encoders")),
      props: ids.map((id, i) => ({ id, value: vals[i]! })),
    };
  }
}

/** DRM_IOCTL_MODE_OBJ_GETPROPERTIES: property ids and current values of a mode object. */
export function getObjectProperties(fd: number, objId: number, objType: number): { id: number; value: bigint }[] {
  const o = struct(S.drm_mode_obj_get_properties).setU32("obj_id", objId).setU32("obj_type", objType);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_OBJ_GETPROPERTIES, o.buf, "DRM_IOCTL_MODE_OBJ_GETPROPERTIES");
  const n = o.u32("count_props");
  const ids = u32Array(n), values = u64Array(n);
  o.setPtr("props_ptr", ids).setPtr("prop_values_ptr", values);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_OBJ_GETPROPERTIES, o.buf, "DRM_IOCTL_MODE_OBJ_GETPROPERTIES");
  const count = Math.min(n, o.u32("count_props"));
  const vals = readU64s(values, count);
  return readU32s(ids, count).map((id, i) => ({ id, value: vals[i]! }));
}

export interface Property { id: number; name: string; flags: number; values: bigint[]; enums: { value: bigint; name: string }[] }

/** DRM_IOCTL_MODE_GETPROPERTY: a property's name, flags, range values and enum names. */
export function getProperty(fd: number, propId: number): Property {
  const p = struct(S.drm_mode_get_property).setU32("prop_id", propId);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPROPERTY, p.buf, "DRM_IOCTL_MODE_GETPROPERTY");
  const nValues = p.u32("count_values"), nEnums = p.u32("count_enum_blobs");
  const values = u64Array(nValues), enums = Struct.array(S.drm_mode_property_enum, nEnums);
  p.setPtr("values_ptr", values).setPtr("enum_blob_ptr", enums);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPROPERTY, p.buf, "DRM_IOCTL_MODE_GETPROPERTY");
  const flags = p.u32("flags");
  const enumList = flags & (MODE_PROP_ENUM | MODE_PROP_BITMASK)
    ? Struct.each(S.drm_mode_property_enum, enums, Math.min(nEnums, p.u32("count_enum_blobs")))
      .map((e) => ({ value: e.u64("value"), name: e.str("name") }))
    : [];
  return {
    id: p.u32("prop_id"), name: p.str("name"), flags,
    values: readU64s(values, Math.min(nValues, p.u32("count_values"))), enums: enumList,
  };
}

export type PlaneType = "Overlay" | "Primary" | "Cursor";

/** A plane's "type" property, by its enum name (needs CLIENT_CAP_UNIVERSAL_PLANES). */
export function planeType(fd: number, planeId: number): PlaneType | undefined {
  for (const p of getObjectProperties(fd, planeId, MODE_OBJECT_PLANE)) {
    const prop = getProperty(fd, p.id);
    if (prop.name === "type") return prop.enums.find((e) => e.value === p.value)?.name as PlaneType | undefined;
  }
  return undefined;
}

/** A plane's properties by name: id and current value. */
export function planeProperties(fd: number, planeId: number): Map<string, { id: number; value: bigint; prop: Property }> {
  const out = new Map<string, { id: number; value: bigint; prop: Property }>();
  for (const p of getObjectProperties(fd, planeId, MODE_OBJECT_PLANE)) {
    const prop = getProperty(fd, p.id);
    out.set(prop.name, { id: p.id, value: p.value, prop });
  }
  return out;
}

/** Where a plane shows a framebuffer: the CRTC rectangle and the source rectangle in 16.16 fixed point. */
export interface PlaneSetting {
  crtcId: number; fbId: number;
  crtcX: number; crtcY: number; crtcW: number; crtcH: number;
  /** 16.16 fixed point, as the uAPI has them. */
  srcX: number; srcY: number; srcW: number; srcH: number;
}

/**
 * DRM_IOCTL_MODE_SETPLANE (legacy, needs DRM master): shows fbId on planeId over
 * crtcId; fbId 0 turns the plane off. The kernel refuses a scaling or position the
 * plane cannot do with EINVAL or ERANGE.
 */
export function setPlane(fd: number, planeId: number, s: PlaneSetting): void {
  const p = struct(S.drm_mode_set_plane).setU32("plane_id", planeId).setU32("crtc_id", s.crtcId).setU32("fb_id", s.fbId)
    .setI32("crtc_x", s.crtcX).setI32("crtc_y", s.crtcY).setU32("crtc_w", s.crtcW).setU32("crtc_h", s.crtcH)
    .setU32("src_x", s.srcX).setU32("src_y", s.srcY).setU32("src_w", s.srcW).setU32("src_h", s.srcH);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_SETPLANE, p.buf, "DRM_IOCTL_MODE_SETPLANE");
}

/** DRM_IOCTL_MODE_OBJ_SETPROPERTY: one property of one mode object (a plane's alpha or zpos). */
export function setObjectProperty(fd: number, objId: number, objType: number, propId: number, value: bigint | number): void {
  const p = struct(S.drm_mode_obj_set_property).setU64("value", value).setU32("prop_id", propId).setU32("obj_id", objId)
    .setU32("obj_type", objType);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_OBJ_SETPROPERTY, p.buf, "DRM_IOCTL_MODE_OBJ_SETPROPERTY");
}

/**
 * DRM_IOCTL_MODE_ATOMIC (needs CLIENT_CAP_ATOMIC and DRM master): sets the listed
 * properties of each object in one commit, all or none. flags: MODE_ATOMIC_*.
 */
export function atomicCommit(
  fd: number, objects: { id: number; props: { id: number; value: bigint | number }[] }[], flags = 0, userData: bigint | number = 0,
): void {
  const n = objects.reduce((a, o) => a + o.props.length, 0);
  const objs = u32Array(objects.length), counts = u32Array(objects.length), props = u32Array(n), values = u64Array(n);
  let k = 0;
  objects.forEach((o, i) => {
    objs.writeUInt32LE(o.id, 4 * i);
    counts.writeUInt32LE(o.props.length, 4 * i);
    for (const p of o.props) {
      props.writeUInt32LE(p.id, 4 * k);
      values.writeBigUInt64LE(BigInt.asUintN(64, BigInt(p.value)), 8 * k);
      k++;
    }
  });
  const a = struct(S.drm_mode_atomic).setU32("flags", flags).setU32("count_objs", objects.length).setPtr("objs_ptr", objs)
    .setPtr("count_props_ptr", counts).setPtr("props_ptr", props).setPtr("prop_values_ptr", values).setU64("user_data", userData);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_ATOMIC, a.buf, "DRM_IOCTL_MODE_ATOMIC");
}

export interface DrmEvent { type: number; userData: bigint; sequence: number; crtcId: number }

/**
 * The events waiting on a card's fd (opened O_NONBLOCK): vblank and flip-complete
 * events with the user_data of the request that asked for them. Read it when the
 * event source says the fd is readable.
 */
export function readEvents(fd: number): DrmEvent[] {
  const out: DrmEvent[] = [];
  const buf = Buffer.alloc(4096);
  for (;;) {
    const b = readAvailable(fd, buf.length, buf);
    if (!b || !b.length) return out;
    for (let off = 0; off + S.drm_event.size <= b.length;) {
      const len = b.readUInt32LE(off + 4);
      if (len < S.drm_event.size) break;
      const type = b.readUInt32LE(off);
      if ((type === EVENT_VBLANK || type === EVENT_FLIP_COMPLETE) && len >= S.drm_event_vblank.size) {
        out.push({ type, userData: b.readBigUInt64LE(off + 8), sequence: b.readUInt32LE(off + 24), crtcId: b.readUInt32LE(off + 28) });
      }
      off += len;
    }
  }
}
