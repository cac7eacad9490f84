// The recipe's `hardware` section: what `board check` expects of the kernel beyond
// what the services' own sections name (docs/board-recipes.md, "Checking a board").
// The services do not read it; `board scan` writes it.
import { z } from "zod";
import { PARSE_OPTIONS } from "../core/config";

const fourcc = z.string().regex(/^[\x21-\x7e][\x20-\x7e]{0,3}(-BE)?$/, "a V4L2 pixel format code (fourcc) such as YUYV, -BE for a big-endian variant");

export const VideoDevice = z.object({
  /** The node (/dev/videoN); or find the node by driver (and card). */
  device: z.string().min(1).optional(),
  /** VIDIOC_QUERYCAP's driver (vivid, uvcvideo, unicam...). */
  driver: z.string().min(1).optional(),
  /** VIDIOC_QUERYCAP's card name. */
  card: z.string().min(1).optional(),
  /** Capture formats the device must offer (VIDIOC_ENUM_FMT). */
  formats: z.array(fourcc).default([]),
  optional: z.boolean().default(false),
  description: z.string().optional(),
}).refine((v) => v.device !== undefined || v.driver !== undefined, "a video device needs device or driver");

export const Plane = z.object({
  /** The plane's index on the card (every plane by ascending id, as videooutput's sinks count them). */
  index: z.number().int().min(0),
  type: z.enum(["Primary", "Overlay", "Cursor"]).optional(),
  /** Property names the plane must have (zpos, alpha, rotation...). */
  properties: z.array(z.string().min(1)).default([]),
});

export type PlaneT = z.output<typeof Plane>;

export const HardwareSection = z.object({
  /** Network interfaces by name. */
  network: z.record(z.string().min(1).max(15), z.object({ optional: z.boolean().default(false), description: z.string().optional() })).default({}),
  /** V4L2 capture devices by an ID for people (camera0, rear...). */
  video: z.record(z.string().min(1), VideoDevice).default({}),
  /** The display card's planes (the card is serviceConfig.videooutput.card, or this one). */
  display: z.object({ card: z.string().min(1).optional(), planes: z.array(Plane).default([]) }).optional(),
  /** Directories that must be mount points (or exist: mounted: false). */
  mounts: z.record(z.string().regex(/^\//, "an absolute path"), z.object({ mounted: z.boolean().default(true), optional: z.boolean().default(false) })).default({}),
});
export type HardwareSectionT = z.output<typeof HardwareSection>;

export function parseHardware(data: unknown, origin: string): HardwareSectionT {
  const r = HardwareSection.safeParse(data ?? {}, PARSE_OPTIONS);
  if (!r.success) throw new Error(`${origin}: the hardware section is invalid: ${z.prettifyError(r.error)}`);
  return r.data;
}
