import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as drm from "../../src/ffi/drm.ts";
import { checkAgainstHeaders } from "./cabi.ts";
import { O_CLOEXEC, O_NONBLOCK, closeFd, makePipe, writeAll } from "../../src/ffi/libc.ts";

// The DRM uAPI headers are not in linux-libc-dev: take them from libdrm-dev or a
// linux-headers package (scripts/vboard installs one).
function drmIncludeDir(): string | undefined {
  if (existsSync("/usr/include/drm/drm_mode.h")) return "/usr/include";
  if (existsSync("/usr/include/libdrm/drm_mode.h")) {
    // libdrm-dev keeps them in libdrm/: present that directory as drm/.
    const dir = mkdtempSync(join(tmpdir(), "drm-include-"));
    symlinkSync("/usr/include/libdrm", join(dir, "drm"));
    return dir;
  }
  const dirs = existsSync("/usr/src") ? readdirSync("/usr/src").filter((d) => d.startsWith("linux-headers-")).sort().reverse() : [];
  for (const d of dirs) if (existsSync(`/usr/src/${d}/include/uapi/drm/drm_mode.h`)) return `/usr/src/${d}/include/uapi`;
  return undefined;
}
const inc = drmIncludeDir();
if (!inc) console.warn("drm.test.ts: no DRM uAPI headers (scripts/setup installs libdrm-dev); layout checks skipped");

const consts: Record<string, [string, number]> = {
  CLIENT_CAP_UNIVERSAL_PLANES: ["DRM_CLIENT_CAP_UNIVERSAL_PLANES", drm.CLIENT_CAP_UNIVERSAL_PLANES],
  CLIENT_CAP_ATOMIC: ["DRM_CLIENT_CAP_ATOMIC", drm.CLIENT_CAP_ATOMIC],
  MODE_OBJECT_PLANE: ["DRM_MODE_OBJECT_PLANE", drm.MODE_OBJECT_PLANE],
  MODE_OBJECT_CRTC: ["DRM_MODE_OBJECT_CRTC", drm.MODE_OBJECT_CRTC],
  MODE_OBJECT_CONNECTOR: ["DRM_MODE_OBJECT_CONNECTOR", drm.MODE_OBJECT_CONNECTOR],
  MODE_OBJECT_ENCODER: ["DRM_MODE_OBJECT_ENCODER", drm.MODE_OBJECT_ENCODER],
  MODE_CONNECTOR_VIRTUAL: ["DRM_MODE_CONNECTOR_VIRTUAL", drm.MODE_CONNECTOR_VIRTUAL],
  MODE_PROP_ENUM: ["DRM_MODE_PROP_ENUM", drm.MODE_PROP_ENUM],
  MODE_PROP_BITMASK: ["DRM_MODE_PROP_BITMASK", drm.MODE_PROP_BITMASK],
  DRM_PROP_NAME_LEN: ["DRM_PROP_NAME_LEN", drm.DRM_PROP_NAME_LEN],
  MODE_ATOMIC_TEST_ONLY: ["DRM_MODE_ATOMIC_TEST_ONLY", drm.MODE_ATOMIC_TEST_ONLY],
  MODE_PAGE_FLIP_EVENT: ["DRM_MODE_PAGE_FLIP_EVENT", drm.MODE_PAGE_FLIP_EVENT],
  EVENT_VBLANK: ["DRM_EVENT_VBLANK", drm.EVENT_VBLANK],
  EVENT_FLIP_COMPLETE: ["DRM_EVENT_FLIP_COMPLETE", drm.EVENT_FLIP_COMPLETE],
  MODE_ATOMIC_NONBLOCK: ["DRM_MODE_ATOMIC_NONBLOCK", drm.MODE_ATOMIC_NONBLOCK],
  MODE_ATOMIC_ALLOW_MODESET: ["DRM_MODE_ATOMIC_ALLOW_MODESET", drm.MODE_ATOMIC_ALLOW_MODESET],
};
checkAgainstHeaders("drm.ts mirrors drm/drm.h and drm/drm_mode.h", {
  headers: ["drm/drm.h", "drm/drm_mode.h"],
  includeDirs: inc ? [inc] : [],
  structs: drm.structs,
  ioctls: drm.ioctls,
  consts,
  skip: !inc,
});

describe("readEvents", () => {
  test("flip-complete and vblank events as the kernel lays them out; other event types skipped; nothing waiting: none", () => {
    const [r, w] = makePipe(O_CLOEXEC | O_NONBLOCK);
    try {
      expect(drm.readEvents(r)).toEqual([]);
      const vblank = (type: number, userData: bigint, sequence: number, crtcId: number) => {
        const b = Buffer.alloc(32);
        b.writeUInt32LE(type, 0);
        b.writeUInt32LE(32, 4);
        b.writeBigUInt64LE(userData, 8);
        b.writeUInt32LE(sequence, 24);
        b.writeUInt32LE(crtcId, 28);
        return b;
      };
      const other = Buffer.alloc(16); // a driver-private event: skipped by the length in its header
      other.writeUInt32LE(0x80000000, 0);
      other.writeUInt32LE(16, 4);
      writeAll(w, Buffer.concat([vblank(drm.EVENT_FLIP_COMPLETE, 7n, 100, 40), other, vblank(drm.EVENT_VBLANK, 2n ** 40n, 101, 40)]));
      expect(drm.readEvents(r)).toEqual([
        { type: drm.EVENT_FLIP_COMPLETE, userData: 7n, sequence: 100, crtcId: 40 },
        { type: drm.EVENT_VBLANK, userData: 2n ** 40n, sequence: 101, crtcId: 40 },
      ]);
      expect(drm.readEvents(r)).toEqual([]);
    } finally {
      closeFd(r);
      closeFd(w);
    }
  });
});
