import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as drm from "../../src/ffi/drm.ts";
import { checkAgainstHeaders } from "./cabi.ts";

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
