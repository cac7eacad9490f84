// DRM/KMS (drm/drm.h, drm/drm_mode.h): driver version, client caps and the mode
// objects (CRTCs, connectors, encoders, planes) with their properties. Array-valued
// ioctls are called twice, first for the counts, as libdrm does.
import { IOW, IOWR, O_CLOEXEC, O_RDWR, closeFd, ioctl, openFile, ptr } from "./libc.ts";

const DRM_IOCTL_BASE = "d";
const DRM_IOW = (nr: number, size: number) => IOW(DRM_IOCTL_BASE, nr, size);
const DRM_IOWR = (nr: number, size: number) => IOWR(DRM_IOCTL_BASE, nr, size);

export const CLIENT_CAP_STEREO_3D = 1, CLIENT_CAP_UNIVERSAL_PLANES = 2, CLIENT_CAP_ATOMIC = 3;
export const MODE_OBJECT_CRTC = 0xcccccccc, MODE_OBJECT_CONNECTOR = 0xc0c0c0c0, MODE_OBJECT_ENCODER = 0xe0e0e0e0,
  MODE_OBJECT_PLANE = 0xeeeeeeee;
/** drm_mode_get_connector.connection */
export const MODE_CONNECTED = 1, MODE_DISCONNECTED = 2, MODE_UNKNOWNCONNECTION = 3;
export const MODE_CONNECTOR_VIRTUAL = 15;
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
  },
  drm_mode_property_enum: { c: "struct drm_mode_property_enum", size: 40, fields: { value: 0, name: 8 } },
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
} as const;

function cString(b: Buffer, off: number, len: number): string {
  const s = b.subarray(off, off + len);
  const nul = s.indexOf(0);
  return s.subarray(0, nul < 0 ? len : nul).toString("utf8");
}

const addr = (b: Buffer) => (b.length ? BigInt(ptr(b)) : 0n);
const u32s = (b: Buffer, n: number) => Array.from({ length: n }, (_, i) => b.readUInt32LE(i * 4));

/** Opens /dev/dri/cardN (a path or a number). */
export function openCard(card: string | number): number {
  return openFile(typeof card === "number" ? `/dev/dri/card${card}` : card, O_RDWR | O_CLOEXEC);
}

export const close = closeFd;

export interface Version { major: number; minor: number; patchlevel: number; name: string; date: string; desc: string }

/** DRM_IOCTL_VERSION: the driver's name (e.g. "bochs-drm", "vkms"), date and description. */
export function version(fd: number): Version {
  const b = Buffer.alloc(S.drm_version.size);
  ioctl(fd, ioctls.DRM_IOCTL_VERSION, b, "DRM_IOCTL_VERSION");
  const name = Buffer.alloc(Number(b.readBigUInt64LE(16)) + 1);
  const date = Buffer.alloc(Number(b.readBigUInt64LE(32)) + 1);
  const desc = Buffer.alloc(Number(b.readBigUInt64LE(48)) + 1);
  b.writeBigUInt64LE(BigInt(name.length), 16); b.writeBigUInt64LE(addr(name), 24);
  b.writeBigUInt64LE(BigInt(date.length), 32); b.writeBigUInt64LE(addr(date), 40);
  b.writeBigUInt64LE(BigInt(desc.length), 48); b.writeBigUInt64LE(addr(desc), 56);
  ioctl(fd, ioctls.DRM_IOCTL_VERSION, b, "DRM_IOCTL_VERSION");
  return {
    major: b.readInt32LE(0), minor: b.readInt32LE(4), patchlevel: b.readInt32LE(8),
    name: cString(name, 0, name.length), date: cString(date, 0, date.length), desc: cString(desc, 0, desc.length),
  };
}

/** DRM_IOCTL_SET_CLIENT_CAP, e.g. CLIENT_CAP_UNIVERSAL_PLANES so primary and cursor planes are listed. */
export function setClientCap(fd: number, capability: number, value: number | bigint = 1): void {
  const b = Buffer.alloc(S.drm_set_client_cap.size);
  b.writeBigUInt64LE(BigInt(capability), 0);
  b.writeBigUInt64LE(BigInt(value), 8);
  ioctl(fd, ioctls.DRM_IOCTL_SET_CLIENT_CAP, b, "DRM_IOCTL_SET_CLIENT_CAP");
}

export interface Resources {
  fbs: number[]; crtcs: number[]; connectors: number[]; encoders: number[];
  minWidth: number; maxWidth: number; minHeight: number; maxHeight: number;
}

export function getResources(fd: number): Resources {
  for (;;) {
    const b = Buffer.alloc(S.drm_mode_card_res.size);
    ioctl(fd, ioctls.DRM_IOCTL_MODE_GETRESOURCES, b, "DRM_IOCTL_MODE_GETRESOURCES");
    const counts = [32, 36, 40, 44].map((o) => b.readUInt32LE(o));
    const arrays = counts.map((n) => Buffer.alloc(n * 4));
    arrays.forEach((a, i) => b.writeBigUInt64LE(addr(a), i * 8));
    ioctl(fd, ioctls.DRM_IOCTL_MODE_GETRESOURCES, b, "DRM_IOCTL_MODE_GETRESOURCES");
    // A hotplug between the calls changes the counts: ask again.
    if ([32, 36, 40, 44].some((o, i) => b.readUInt32LE(o) > counts[i]!)) continue;
    const [fbs, crtcs, connectors, encoders] = arrays.map((a, i) => u32s(a, Math.min(counts[i]!, b.readUInt32LE(32 + i * 4))));
    return {
      fbs: fbs!, crtcs: crtcs!, connectors: connectors!, encoders: encoders!,
      minWidth: b.readUInt32LE(48), maxWidth: b.readUInt32LE(52), minHeight: b.readUInt32LE(56), maxHeight: b.readUInt32LE(60),
    };
  }
}

/** Plane ids; without CLIENT_CAP_UNIVERSAL_PLANES only overlay planes are listed. */
export function getPlaneResources(fd: number): number[] {
  const b = Buffer.alloc(S.drm_mode_get_plane_res.size);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPLANERESOURCES, b, "DRM_IOCTL_MODE_GETPLANERESOURCES");
  const n = b.readUInt32LE(8);
  const ids = Buffer.alloc(n * 4);
  b.writeBigUInt64LE(addr(ids), 0);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPLANERESOURCES, b, "DRM_IOCTL_MODE_GETPLANERESOURCES");
  return u32s(ids, Math.min(n, b.readUInt32LE(8)));
}

export interface Plane { planeId: number; crtcId: number; fbId: number; possibleCrtcs: number; gammaSize: number; formats: number[] }

export function getPlane(fd: number, planeId: number): Plane {
  const b = Buffer.alloc(S.drm_mode_get_plane.size);
  b.writeUInt32LE(planeId, 0);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPLANE, b, "DRM_IOCTL_MODE_GETPLANE");
  const n = b.readUInt32LE(20);
  const formats = Buffer.alloc(n * 4);
  b.writeBigUInt64LE(addr(formats), 24);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPLANE, b, "DRM_IOCTL_MODE_GETPLANE");
  return {
    planeId: b.readUInt32LE(0), crtcId: b.readUInt32LE(4), fbId: b.readUInt32LE(8), possibleCrtcs: b.readUInt32LE(12),
    gammaSize: b.readUInt32LE(16), formats: u32s(formats, Math.min(n, b.readUInt32LE(20))),
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

function decodeMode(b: Buffer, o: number): ModeInfo {
  return {
    clock: b.readUInt32LE(o), hdisplay: b.readUInt16LE(o + 4), hsyncStart: b.readUInt16LE(o + 6), hsyncEnd: b.readUInt16LE(o + 8),
    htotal: b.readUInt16LE(o + 10), hskew: b.readUInt16LE(o + 12), vdisplay: b.readUInt16LE(o + 14),
    vsyncStart: b.readUInt16LE(o + 16), vsyncEnd: b.readUInt16LE(o + 18), vtotal: b.readUInt16LE(o + 20),
    vscan: b.readUInt16LE(o + 22), vrefresh: b.readUInt32LE(o + 24), flags: b.readUInt32LE(o + 28), type: b.readUInt32LE(o + 32),
    name: cString(b, o + 36, DRM_DISPLAY_MODE_LEN),
  };
}

export interface Crtc { crtcId: number; fbId: number; x: number; y: number; gammaSize: number; mode: ModeInfo | null }

export function getCrtc(fd: number, crtcId: number): Crtc {
  const b = Buffer.alloc(S.drm_mode_crtc.size);
  b.writeUInt32LE(crtcId, 12);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETCRTC, b, "DRM_IOCTL_MODE_GETCRTC");
  return {
    crtcId: b.readUInt32LE(12), fbId: b.readUInt32LE(16), x: b.readUInt32LE(20), y: b.readUInt32LE(24),
    gammaSize: b.readUInt32LE(28), mode: b.readUInt32LE(32) ? decodeMode(b, 36) : null,
  };
}

export interface Encoder { encoderId: number; encoderType: number; crtcId: number; possibleCrtcs: number; possibleClones: number }

export function getEncoder(fd: number, encoderId: number): Encoder {
  const b = Buffer.alloc(S.drm_mode_get_encoder.size);
  b.writeUInt32LE(encoderId, 0);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETENCODER, b, "DRM_IOCTL_MODE_GETENCODER");
  return {
    encoderId: b.readUInt32LE(0), encoderType: b.readUInt32LE(4), crtcId: b.readUInt32LE(8),
    possibleCrtcs: b.readUInt32LE(12), possibleClones: b.readUInt32LE(16),
  };
}

export interface Connector {
  connectorId: number; encoderId: number; connectorType: number; connectorTypeId: number;
  /** MODE_CONNECTED, MODE_DISCONNECTED or MODE_UNKNOWNCONNECTION */
  connection: number;
  mmWidth: number; mmHeight: number; subpixel: number;
  modes: ModeInfo[]; encoders: number[]; props: { id: number; value: bigint }[];
}

/** DRM_IOCTL_MODE_GETCONNECTOR; the first call makes the driver probe the connector's modes. */
export function getConnector(fd: number, connectorId: number): Connector {
  for (;;) {
    const b = Buffer.alloc(S.drm_mode_get_connector.size);
    b.writeUInt32LE(connectorId, 48);
    ioctl(fd, ioctls.DRM_IOCTL_MODE_GETCONNECTOR, b, "DRM_IOCTL_MODE_GETCONNECTOR");
    const nModes = b.readUInt32LE(32), nProps = b.readUInt32LE(36), nEnc = b.readUInt32LE(40);
    const encoders = Buffer.alloc(nEnc * 4), modes = Buffer.alloc(nModes * S.drm_mode_modeinfo.size);
    const props = Buffer.alloc(nProps * 4), values = Buffer.alloc(nProps * 8);
    b.writeBigUInt64LE(addr(encoders), 0); b.writeBigUInt64LE(addr(modes), 8);
    b.writeBigUInt64LE(addr(props), 16); b.writeBigUInt64LE(addr(values), 24);
    ioctl(fd, ioctls.DRM_IOCTL_MODE_GETCONNECTOR, b, "DRM_IOCTL_MODE_GETCONNECTOR");
    if (b.readUInt32LE(32) > nModes || b.readUInt32LE(36) > nProps || b.readUInt32LE(40) > nEnc) continue;
    return {
      connectorId: b.readUInt32LE(48), encoderId: b.readUInt32LE(44), connectorType: b.readUInt32LE(52),
      connectorTypeId: b.readUInt32LE(56), connection: b.readUInt32LE(60), mmWidth: b.readUInt32LE(64),
      mmHeight: b.readUInt32LE(68), subpixel: b.readUInt32LE(72),
      modes: Array.from({ length: b.readUInt32LE(32) }, (_, i) => decodeMode(modes, i * S.drm_mode_modeinfo.size)),
      encoders: u32s(encoders, b.readUInt32LE(40)),
      props: Array.from({ length: b.readUInt32LE(36) }, (_, i) => ({ id: props.readUInt32LE(i * 4), value: values.readBigUInt64LE(i * 8) })),
    };
  }
}

/** DRM_IOCTL_MODE_OBJ_GETPROPERTIES: property ids and current values of a mode object. */
export function getObjectProperties(fd: number, objId: number, objType: number): { id: number; value: bigint }[] {
  const b = Buffer.alloc(S.drm_mode_obj_get_properties.size);
  b.writeUInt32LE(objId, 20);
  b.writeUInt32LE(objType, 24);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_OBJ_GETPROPERTIES, b, "DRM_IOCTL_MODE_OBJ_GETPROPERTIES");
  const n = b.readUInt32LE(16);
  const ids = Buffer.alloc(n * 4), values = Buffer.alloc(n * 8);
  b.writeBigUInt64LE(addr(ids), 0);
  b.writeBigUInt64LE(addr(values), 8);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_OBJ_GETPROPERTIES, b, "DRM_IOCTL_MODE_OBJ_GETPROPERTIES");
  return Array.from({ length: Math.min(n, b.readUInt32LE(16)) }, (_, i) => ({ id: ids.readUInt32LE(i * 4), value: values.readBigUInt64LE(i * 8) }));
}

export interface Property { id: number; name: string; flags: number; values: bigint[]; enums: { value: bigint; name: string }[] }

/** DRM_IOCTL_MODE_GETPROPERTY: a property's name, flags, range values and enum names. */
export function getProperty(fd: number, propId: number): Property {
  const b = Buffer.alloc(S.drm_mode_get_property.size);
  b.writeUInt32LE(propId, 16);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPROPERTY, b, "DRM_IOCTL_MODE_GETPROPERTY");
  const nValues = b.readUInt32LE(56), nEnums = b.readUInt32LE(60);
  const values = Buffer.alloc(nValues * 8), enums = Buffer.alloc(nEnums * S.drm_mode_property_enum.size);
  b.writeBigUInt64LE(addr(values), 0);
  b.writeBigUInt64LE(addr(enums), 8);
  ioctl(fd, ioctls.DRM_IOCTL_MODE_GETPROPERTY, b, "DRM_IOCTL_MODE_GETPROPERTY");
  const flags = b.readUInt32LE(20);
  const enumList = flags & (MODE_PROP_ENUM | MODE_PROP_BITMASK)
    ? Array.from({ length: Math.min(nEnums, b.readUInt32LE(60)) }, (_, i) => ({
      value: enums.readBigUInt64LE(i * 40), name: cString(enums, i * 40 + 8, DRM_PROP_NAME_LEN),
    }))
    : [];
  return {
    id: b.readUInt32LE(16), name: cString(b, 24, DRM_PROP_NAME_LEN), flags,
    values: Array.from({ length: Math.min(nValues, b.readUInt32LE(56)) }, (_, i) => values.readBigUInt64LE(i * 8)),
    enums: enumList,
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
