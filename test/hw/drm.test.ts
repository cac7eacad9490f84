// bochs-display (QEMU) and vkms through DRM: driver names, planes with their types,
// CRTCs and a virtual connector with modes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import * as drm from "../../src/ffi/drm.ts";
import { guest } from "./vboard.ts";

function cards(): Map<string, number> {
  const byDriver = new Map<string, number>();
  for (const n of readdirSync("/dev/dri").filter((n) => /^card\d+$/.test(n))) {
    const fd = drm.openCard(`/dev/dri/${n}`);
    byDriver.set(drm.version(fd).name, fd);
  }
  return byDriver;
}

guest("DRM on bochs-display and vkms", () => {
  let open = new Map<string, number>();
  beforeAll(() => { open = cards(); });
  afterAll(() => { for (const fd of open.values()) drm.close(fd); });

  test("DRM_IOCTL_VERSION names both drivers", () => {
    expect([...open.keys()].sort()).toEqual(["bochs-drm", "vkms"]);
    expect(drm.version(open.get("vkms")!).desc).toContain("Virtual");
  });

  test("vkms has a primary and a cursor plane", () => {
    const fd = open.get("vkms")!;
    expect(drm.getPlaneResources(fd)).toHaveLength(0); // overlays only, and vkms has none by default
    expect(drm.planeCount(fd)).toBe(2);
    const types = drm.getPlaneResources(fd).map((id) => drm.planeType(fd, id)).sort();
    expect(types).toEqual(["Cursor", "Primary"]);
    const [plane] = drm.getPlaneResources(fd).map((id) => drm.getPlane(fd, id));
    expect(plane!.formats.length).toBeGreaterThan(0);
  });

  test("bochs has a primary plane", () => {
    const fd = open.get("bochs-drm")!;
    expect(drm.planeCount(fd)).toBeGreaterThanOrEqual(1);
    expect(drm.getPlaneResources(fd).map((id) => drm.planeType(fd, id))).toContain("Primary");
  });

  test("resources, CRTC and a connected virtual connector with modes", () => {
    const fd = open.get("vkms")!;
    const res = drm.getResources(fd);
    expect(res.crtcs).toHaveLength(1);
    expect(res.connectors).toHaveLength(1);
    expect(res.maxWidth).toBeGreaterThanOrEqual(1024);
    expect(drm.getCrtc(fd, res.crtcs[0]!).crtcId).toBe(res.crtcs[0]!);
    const conn = drm.getConnector(fd, res.connectors[0]!);
    expect(conn.connectorType).toBe(drm.MODE_CONNECTOR_VIRTUAL);
    expect(conn.connection).toBe(drm.MODE_CONNECTED);
    expect(conn.modes.map((m) => `${m.hdisplay}x${m.vdisplay}`)).toContain("1024x768");
    expect(conn.encoders.length).toBeGreaterThan(0);
    expect(drm.getEncoder(fd, conn.encoders[0]!).possibleCrtcs).toBe(1);
  });
});
