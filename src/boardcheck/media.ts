// V4L2 capture devices and their formats, and the display card's planes.
import { join } from "node:path";
import * as v4l2 from "../ffi/v4l2";
import * as drm from "../ffi/drm";
import type { HardwareSectionT, PlaneT } from "./section";
import { at, listed, missing, mismatch, ok, why, type Part } from "./part";
import { nodes, type ProbeOptions } from "./system";

/**
 * A pixel format as recipes write it: its four characters without trailing spaces,
 * and `-BE` for the big-endian variants (bit 31 set), as v4l2-ctl prints them.
 */
export function formatName(pixelformat: number): string {
  const name = v4l2.fourccString(pixelformat & 0x7fffffff).trimEnd();
  return pixelformat & 0x80000000 ? `${name}-BE` : name;
}

export interface VideoSeen { path: string; node: string; driver: string; card: string; capture: boolean; formats: string[]; error?: string }

/** Every /dev/videoN: VIDIOC_QUERYCAP and its capture formats (VIDIOC_ENUM_FMT). */
export function listVideo(o: ProbeOptions): VideoSeen[] {
  return nodes(o.dev, /^video\d+$/).map((node) => {
    const path = join(o.dev, node);
    let fd: number;
    try {
      fd = v4l2.openDevice(path);
    } catch (e) {
      return { path, node, driver: "", card: "", capture: false, formats: [], error: why(e) };
    }
    try {
      const cap = v4l2.querycap(fd);
      const capture = (cap.deviceCaps & v4l2.Cap.VIDEO_CAPTURE) !== 0;
      return { path, node, driver: cap.driver, card: cap.card, capture, formats: capture ? v4l2.enumFormats(fd).map((f) => formatName(f.pixelformat)) : [] };
    } catch (e) {
      return { path, node, driver: "", card: "", capture: false, formats: [], error: why(e) };
    } finally {
      v4l2.close(fd);
    }
  });
}

const videoText = (v: VideoSeen) => `${v.node} (${v.driver || "?"}${v.card ? ` '${v.card}'` : ""})`;

export function checkVideo(video: HardwareSectionT["video"], seen: VideoSeen[]): Part[] {
  const parts: Part[] = [];
  for (const [id, want] of Object.entries(video)) {
    const candidates = seen.filter((v) =>
      (want.device === undefined || v.path === want.device) && (want.driver === undefined || v.driver === want.driver) && (want.card === undefined || v.card === want.card) && (want.device !== undefined || v.capture));
    const v = candidates[0];
    const opt = (p: Part) => parts.push({ ...p, required: p.required && !want.optional, ...(v && !v.error ? { node: v.path } : {}) });
    if (!v) {
      const what = [want.device, want.driver && `driver ${want.driver}`, want.card && `card '${want.card}'`].filter(Boolean).join(", ");
      opt(missing("video", id, `no V4L2 capture device ${what} (video devices here: ${listed(seen.map(videoText))})`,
        "the recipe's device/driver, or the camera's device tree node and driver"));
      continue;
    }
    if (v.error) {
      opt(mismatch("video", id, `${v.path} does not answer VIDIOC_QUERYCAP: ${v.error}`, "the node's group and mode (udev rule), or run the check as the service's user or root"));
      continue;
    }
    if (!v.capture) {
      opt(mismatch("video", id, `${videoText(v)} is not a capture device`, "the recipe's device: a node with V4L2_CAP_VIDEO_CAPTURE"));
      continue;
    }
    const absent = want.formats.filter((f) => !v.formats.includes(f));
    if (absent.length) {
      opt(mismatch("video", id, `${videoText(v)} does not offer ${absent.map((f) => `'${f}'`).join(", ")} (formats there: ${listed(v.formats)})`,
        "the recipe's formats, or the sensor driver and its media pipeline (media-ctl) configuration"));
      continue;
    }
    opt(ok("video", id, `${videoText(v)}, formats ${listed(v.formats)}`));
  }
  return parts;
}

export function scanVideo(seen: VideoSeen[]): HardwareSectionT["video"] {
  const out: HardwareSectionT["video"] = {};
  let n = 0;
  for (const v of seen) {
    if (v.error || !v.capture) continue;
    out[`camera${n++}`] = { device: v.path, driver: v.driver, card: v.card, formats: v.formats, optional: false };
  }
  return out;
}

export interface PlaneSeen { index: number; id: number; type?: string; properties: string[] }
export interface CardSeen { path: string; node: string; driver: string; planes: PlaneSeen[]; error?: string }

/** Every /dev/dri/cardN: its driver and every plane (universal planes, ascending id) with its properties. */
export function listCards(o: ProbeOptions): CardSeen[] {
  const dir = join(o.dev, "dri");
  return nodes(dir, /^card\d+$/).map((node) => {
    const path = join(dir, node);
    let fd: number;
    try {
      fd = drm.openCard(path);
    } catch (e) {
      return { path, node, driver: "", planes: [], error: why(e) };
    }
    try {
      const driver = drm.version(fd).name;
      try {
        drm.setClientCap(fd, drm.CLIENT_CAP_UNIVERSAL_PLANES, 1);
      } catch {
        /* a driver without KMS: no planes */
      }
      let ids: number[] = [];
      try {
        ids = drm.getPlaneResources(fd).sort((a, b) => a - b);
      } catch {
        /* no KMS */
      }
      const planes = ids.map((id, index) => {
        const props = drm.planeProperties(fd, id);
        const typeProp = props.get("type");
        const type = typeProp?.prop.enums.find((e) => e.value === typeProp.value)?.name;
        return { index, id, type, properties: [...props.keys()].sort() };
      });
      return { path, node, driver, planes };
    } catch (e) {
      return { path, node, driver: "", planes: [], error: why(e) };
    } finally {
      drm.close(fd);
    }
  });
}

const cardText = (c: CardSeen) => `${c.node} (${c.driver || "?"}, ${c.planes.length} planes)`;

/** The card a recipe names (a /dev/dri path or a driver name), as videooutput opens it. */
export function findCard(cards: CardSeen[], card: string): CardSeen | undefined {
  return card.startsWith("/") ? cards.find((c) => c.path === card) : cards.find((c) => c.driver === card);
}

/** The card, each sink's plane, and the planes the hardware section describes. */
export function checkDisplay(card: string, sinks: { sink: string; plane: number }[], planes: PlaneT[], cards: CardSeen[]): Part[] {
  const c = findCard(cards, card);
  if (!c) {
    return [missing("display", card, `no DRM card ${card.startsWith("/") ? card : `with driver ${card}`} (cards here: ${listed(cards.map(cardText))})`,
      "serviceConfig.videooutput.card (a /dev/dri path or a driver name), or the display's device tree node and driver")];
  }
  if (c.error) return [mismatch("display", card, `${c.path} does not open: ${c.error}`, "the node's group and mode (udev rule), or run the check as the service's user or root")];
  const parts: Part[] = [at(ok("display", card, `${cardText(c)}: ${listed(c.planes.map((p) => `${p.index} ${p.type ?? "?"}`))}`), c.path)];
  for (const s of sinks) {
    const p = c.planes[s.plane];
    parts.push(p
      ? ok("plane", `sink ${s.sink}`, `plane ${s.plane} of ${c.node} is plane id ${p.id} (${p.type ?? "?"})`)
      : missing("plane", `sink ${s.sink}`, `plane ${s.plane} not on ${cardText(c)}`, "serviceConfig.videooutput.sinks (plane indexes count every plane, primary and cursor included)"));
  }
  for (const want of planes) {
    const p = c.planes[want.index];
    const name = `${c.node} plane ${want.index}`;
    if (!p) {
      parts.push(missing("plane", name, `not on ${cardText(c)}`, "the hardware section's display planes, or the display driver"));
      continue;
    }
    if (want.type && p.type !== want.type) {
      parts.push(mismatch("plane", name, `is ${p.type ?? "of no type"}, not ${want.type}`, "the hardware section's plane type or index"));
      continue;
    }
    const absent = want.properties.filter((x) => !p.properties.includes(x));
    parts.push(absent.length
      ? mismatch("plane", name, `has no property ${absent.map((x) => `'${x}'`).join(", ")} (properties there: ${listed(p.properties, 24)})`, "the hardware section's properties, or a driver that creates them")
      : ok("plane", name, `${p.type ?? "?"}, id ${p.id}${want.properties.length ? `, has ${want.properties.join(", ")}` : ""}`));
  }
  return parts;
}
