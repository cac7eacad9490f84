// The board recipe's `record` section: which pipeline instances the board has, the
// video sources by camera ID, the audio source, and the encoders and containers by
// the names requests use. Everything here is a gst-launch fragment written by the
// board's maker; nothing a client sends becomes part of a launch description except
// validated numbers (sizes, rates, bit rates, quality). The output file is opened by
// the service with the caller's rights and handed to the sink as an fd, never
// parsed. docs/board-recipes.md, "record".
import { z } from "zod";
import { parseRecorded } from "../../core/config";
import type { Board } from "../../core/board";
import type { StartRequest } from "./schemas";

const fragment = () => z.string().min(1);
const encoder = () => z.object({
  /** What it encodes. */
  kind: z.enum(["video", "audio", "image"]),
  /** The encoder, with {bps}, {kbps}, {fps}, {quality} for the request's values. */
  element: fragment(),
  /** The parser between the encoder and the muxer (h264parse, aacparse); none for images. */
  parser: z.string().optional(),
});
const format = () => z.object({
  /** The muxer (its properties: fragment-duration makes MP4 fragmented, so a cut file still plays). */
  muxer: fragment(),
  /** Codec names it carries. */
  codecs: z.array(z.string()).min(1),
});

export const DEFAULT_ENCODERS: Record<string, z.input<ReturnType<typeof encoder>>> = {
  H264: { kind: "video", element: "x264enc tune=zerolatency speed-preset=ultrafast bitrate={kbps} key-int-max={fps}", parser: "h264parse" },
  AAC: { kind: "audio", element: "avenc_aac bitrate={bps}", parser: "aacparse" },
  JPEG: { kind: "image", element: "jpegenc quality={quality}" },
};
export const DEFAULT_FORMATS: Record<string, z.input<ReturnType<typeof format>>> = {
  MP4: { muxer: "mp4mux fragment-duration=500", codecs: ["H264", "AAC"] },
};

/**
 * A video source that is the camera service's stream of one camera (com.vendor.service.camera2):
 * the camera is opened as primary, set to this YUV format and streamed into shared
 * memory; its frames are pushed into the pipeline through an appsrc.
 */
const cameraStream = () => {
  // A type several fields share, built once (core/config.ts, "Shared option types").
  const count = z.number().int().positive();
  return z.object({
    camera: z.string().min(1),
    width: count.default(640),
    height: count.default(480),
    fps: count.default(30),
  });
};
export type CameraStream = z.output<ReturnType<typeof cameraStream>>;
const videoSource = () => z.union([fragment(), cameraStream()]);

const ID = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const recordSection = () => z.object({
  /** Pipeline IDs: each is served as com.vendor.pipeline.record.<id>. */
  pipelines: z.array(z.string().regex(ID, "a pipeline ID is letters, digits and _ (a bus name label)")).min(1).default(["main"]),
  /** Video sources by the ID requests name in videoSrc (camera1 -> "v4l2src device=/dev/video0"). */
  videoSources: z.record(z.string(), videoSource()).default({ camera1: "videotestsrc is-live=true pattern=ball" }),
  /** The audio source (alsasrc, pulsesrc; audiotestsrc on the virtual board). */
  audioSource: fragment().default("audiotestsrc is-live=true wave=sine volume=0.3"),
  /** Encoders by codec name, added to (or replacing) the software defaults. */
  encoders: z.record(z.string(), encoder()).default({}),
  /** Containers by format name, added to (or replacing) the defaults. */
  formats: z.record(z.string(), format()).default({}),
});
export type RecordSection = z.output<ReturnType<typeof recordSection>>;
export type Recipe = Omit<RecordSection, "encoders" | "formats"> & {
  encoders: Record<string, z.output<ReturnType<typeof encoder>>>;
  formats: Record<string, z.output<ReturnType<typeof format>>>;
};

/** The board's `record` section with the defaults merged (names upper-cased). */
export function readRecipe(board: Board): Recipe {
  const raw = (board as Record<string, unknown>).record ?? {};
  const r = parseRecorded("record section", recordSection, raw);
  if (!r.success) throw new Error(`board ${board.name}: record section is invalid: ${z.prettifyError(r.error)}`);
  const up = <T>(o: Record<string, T>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k.toUpperCase(), v]));
  // The built-in encoders and formats, checked as the recipe's are.
  const defaults = parseRecorded("record defaults", () => recordSection().pick({ encoders: true, formats: true }), { encoders: DEFAULT_ENCODERS, formats: DEFAULT_FORMATS });
  if (!defaults.success) throw new Error(`the built-in encoders or formats are invalid: ${z.prettifyError(defaults.error)}`);
  return {
    ...r.data,
    encoders: { ...up(defaults.data.encoders), ...up(r.data.encoders) },
    formats: { ...up(defaults.data.formats), ...up(r.data.formats) },
  };
}

/** Why a request cannot become a pipeline (answered as error 1, logged with this text). */
export class PlanError extends Error {}

export interface Plan {
  /** The gst-launch description; the file sink is an fdsink named `sink` (its fd set afterwards). */
  description: string;
  kind: "av" | "image";
  /** The camera ID of the recording, when it has video. */
  cameraId?: string;
  /** The camera service's stream feeding the appsrc named `camera` (when the source is one). */
  cameraStream?: CameraStream;
}

/** The appsrc a camera service stream is pushed into (YUYV frames, timestamped on arrival). */
export const CAMERA_APPSRC = "camera";

const fill = (t: string, v: Record<string, number>) =>
  t.replace(/\{(\w+)\}/g, (m, k: string) => {
    if (!(k in v)) throw new PlanError(`the recipe fragment '${t}' uses {${k}}, which this stream has no value for`);
    return String(v[k]);
  });

/** Turns a validated start request into a launch description (no GStreamer call). */
export function plan(req: StartRequest, recipe: Recipe): Plan {
  const encoder = (codec: string, kind: "video" | "audio" | "image") => {
    const e = recipe.encoders[codec.toUpperCase()];
    if (!e || e.kind !== kind) throw new PlanError(`no ${kind} codec ${codec} on this board (${Object.keys(recipe.encoders).filter((k) => recipe.encoders[k]!.kind === kind).join(", ")})`);
    return e;
  };
  let cameraStream: CameraStream | undefined;
  const source = (id: string) => {
    const s = recipe.videoSources[id];
    if (!s) throw new PlanError(`no video source ${id} on this board (${Object.keys(recipe.videoSources).join(", ")})`);
    if (typeof s === "string") return s;
    cameraStream = s;
    return (
      `appsrc name=${CAMERA_APPSRC} is-live=true do-timestamp=true format=time leaky-type=upstream max-bytes=${s.width * s.height * 2 * 4} ` +
      `caps=video/x-raw,format=YUY2,width=${s.width},height=${s.height},framerate=${s.fps}/1`
    );
  };
  // fdsink writes each buffer with write(2) as it comes (unbuffered) and seeks on a
  // regular file, so muxers that rewrite their header (mp4mux without fragments) work.
  const sink = "fdsink name=sink";
  if (req.image) {
    // identity eos-after=N sends end-of-stream in place of buffer N: one frame reaches the encoder.
    if (req.video || req.audio) throw new PlanError("an image is recorded alone (no video or audio with it)");
    const i = req.image;
    if (req.format.toUpperCase() !== i.codec.toUpperCase()) throw new PlanError(`an image's format is its codec (${i.codec}), not ${req.format}`);
    const enc = encoder(i.codec, "image");
    const src = source(i.videoSrc);
    return {
      kind: "image",
      cameraId: i.videoSrc,
      cameraStream,
      description:
        `${src} ! identity eos-after=2 ! videoconvert ! videoscale ! video/x-raw,width=${i.width},height=${i.height} ! ` +
        `${fill(enc.element, { quality: i.quality })} ! ${sink}`,
    };
  }
  const format = recipe.formats[req.format.toUpperCase()];
  if (!format) throw new PlanError(`no format ${req.format} on this board (${Object.keys(recipe.formats).join(", ")})`);
  const branches: string[] = [];
  if (req.video) {
    const v = req.video;
    const enc = encoder(v.codec, "video");
    if (!format.codecs.includes(v.codec.toUpperCase())) throw new PlanError(`${req.format} does not carry ${v.codec}`);
    branches.push(
      `${source(v.videoSrc)} ! videoconvert ! videoscale ! videorate ! video/x-raw,width=${v.width},height=${v.height},framerate=${v.fps}/1 ! ` +
        `${fill(enc.element, { bps: v.bitRate, kbps: Math.max(1, Math.round(v.bitRate / 1000)), fps: v.fps })} ! ${enc.parser ? `${enc.parser} ! ` : ""}queue ! mux.`,
    );
  }
  if (req.audio) {
    const a = req.audio;
    const enc = encoder(a.codec, "audio");
    if (!format.codecs.includes(a.codec.toUpperCase())) throw new PlanError(`${req.format} does not carry ${a.codec}`);
    branches.push(
      `${recipe.audioSource} ! audioconvert ! audioresample ! audio/x-raw,rate=${a.sampleRate},channels=${a.channelCount} ! ` +
        `${fill(enc.element, { bps: a.bitRate, kbps: Math.max(1, Math.round(a.bitRate / 1000)) })} ! ${enc.parser ? `${enc.parser} ! ` : ""}queue ! mux.`,
    );
  }
  return { kind: "av", cameraId: req.video?.videoSrc, cameraStream, description: `${branches.join(" ")} ${format.muxer} name=mux ! ${sink}` };
}
