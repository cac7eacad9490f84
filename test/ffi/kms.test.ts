import { existsSync } from "node:fs";
import * as kms from "../../src/ffi/kms.ts";
import { checkAgainstHeaders } from "./cabi.ts";

// libdrm-dev's copy of the uAPI headers (scripts/setup installs it), included by their own names.
const inc = ["/usr/include/libdrm", "/usr/include/drm"].find((d) => existsSync(`${d}/drm_mode.h`));
checkAgainstHeaders("kms.ts mirrors drm/drm_mode.h", {
  headers: ["drm.h", "drm_mode.h", "drm_fourcc.h"],
  includeDirs: inc ? [inc] : [],
  structs: kms.structs,
  ioctls: kms.ioctls,
  consts: { FORMAT_XRGB8888: ["DRM_FORMAT_XRGB8888", kms.FORMAT_XRGB8888] },
  skip: !inc,
});
