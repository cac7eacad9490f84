// Recording pipeline API (spec part 2, com.vendor.pipeline.record.<pipeline_id>,
// API level 32). One entry per spec method; field names are the spec's.
import { z } from "zod";
import { answerSchema as answer, once, type Api } from "../../core/service";
import { group } from "../../core/access";
import { requireOneOf } from "../../core/jsonschema";

/** Root or members of this group may start and control recordings (configurable: accessGroup; "*": any caller). */
export const DEFAULT_GROUP = "devservices-record";

const int = (min: number, max: number, what: string) => z.number().int().min(min).max(max).describe(what);

export const Video = once(() => z.lazy(() => z.object({
  videoSrc: z.string().min(1).describe("a video source of the board recipe (a camera ID such as camera1)"),
  width: int(16, 7680, "pixels"),
  height: int(16, 4320, "pixels"),
  codec: z.string().min(1).describe("H264 (the board recipe may offer others)"),
  fps: int(1, 240, "frames a second"),
  bitRate: int(1000, 200_000_000, "bits a second"),
})));

export const Audio = once(() => z.lazy(() => z.object({
  codec: z.string().min(1).describe("AAC (the board recipe may offer others)"),
  sampleRate: int(8000, 192000, "samples a second"),
  channelCount: int(1, 8, "channels"),
  bitRate: int(8000, 2_000_000, "bits a second"),
})));

export const Image = once(() => z.lazy(() => z.object({
  videoSrc: z.string().min(1).describe("a video source of the board recipe (a camera ID such as camera1)"),
  codec: z.string().min(1).describe("JPEG"),
  width: int(16, 7680, "pixels"),
  height: int(16, 4320, "pixels"),
  quality: int(1, 100, "encoder quality, 1 to 100"),
})));

/** A recording needs at least one of video, audio, image (published as anyOf of required). */
export const StartRequest = once(() => requireOneOf(
  z.looseObject({
    video: Video().optional(),
    audio: Audio().optional(),
    image: Image().optional(),
    format: z.string().min(1).describe("container: MP4 for video and audio, JPEG for an image"),
    path: z.string().min(1).describe("absolute path of a new output file, created with the caller's rights (an existing file is not replaced)"),
  }),
  ["video", "audio", "image"],
));

export type StartRequest = z.output<ReturnType<typeof StartRequest>>;

/** The pushed event (spec: Recording pipeline event). */
export const RecordEvent = once(() => z.lazy(() => z.looseObject({
  returnValue: z.literal(true),
  id: z.string().describe("the camera ID of the recording (the pipeline ID when it has no video)"),
  eventType: z.enum(["endOfStream", "error", "warning", "stateChanged"]),
})));

export const api = {
  pause: {
    summary: "Pauses a recording (PAUSED): nothing is recorded until resume. Invalid state unless recording.",
    request: () => z.looseObject({}),
    response: () => answer({}),
    access: group(DEFAULT_GROUP),
    level: 32,
  },
  resume: {
    summary: "Resumes a paused recording (PLAYING); the file goes on without a gap. Invalid state unless paused.",
    request: () => z.looseObject({}),
    response: () => answer({}),
    access: group(DEFAULT_GROUP),
    level: 32,
  },
  start: {
    summary:
      "Builds the pipeline (sources and encoders from the board recipe) and records to path: video and/or audio into fragmented MP4, or one image as JPEG. Answers once the pipeline is PLAYING.",
    request: () => StartRequest(),
    response: () => answer({}),
    access: group(DEFAULT_GROUP),
    level: 32,
  },
  stop: {
    summary: "Stops the recording: end-of-stream through the pipeline, the file finalized on disk, the pipeline released.",
    request: () => z.looseObject({}),
    response: () => answer({}),
    access: group(DEFAULT_GROUP),
    level: 32,
  },
  subscribe: {
    summary:
      "With subscribe true: the pipeline's events are pushed ({returnValue, id, eventType: endOfStream | error | warning | stateChanged, ...}); the first answer carries the recorder's state. Without it (the field is optional): the state, answered once (subscribed false).",
    request: () => z.looseObject({ subscribe: z.boolean().optional() }),
    response: () => answer({ subscribed: z.boolean(), state: z.string() }),
    subscribable: true,
    level: 32,
  },
} satisfies Api;
