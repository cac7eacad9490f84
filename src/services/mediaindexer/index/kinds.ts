// Which files are media: by file name extension, the way MiniDLNA and most indexers
// decide before reading a byte. Each extension has its kind and MIME type.
export type Kind = "audio" | "video" | "image";
export const KINDS: Kind[] = ["audio", "video", "image"];
/** Database code of each kind; BAD marks a file that could not be read (kept so a rescan skips it). */
export const KIND_CODE: Record<Kind, number> = { audio: 0, video: 1, image: 2 };
export const BAD = 9;
export const KIND_OF_CODE: Kind[] = ["audio", "video", "image"];

const TYPES: Record<string, [Kind, string]> = {
  mp3: ["audio", "audio/mpeg"],
  m4a: ["audio", "audio/mp4"],
  aac: ["audio", "audio/aac"],
  flac: ["audio", "audio/flac"],
  ogg: ["audio", "audio/ogg"],
  oga: ["audio", "audio/ogg"],
  opus: ["audio", "audio/opus"],
  wav: ["audio", "audio/wav"],
  wma: ["audio", "audio/x-ms-wma"],
  aif: ["audio", "audio/aiff"],
  aiff: ["audio", "audio/aiff"],
  mp4: ["video", "video/mp4"],
  m4v: ["video", "video/x-m4v"],
  mov: ["video", "video/quicktime"],
  "3gp": ["video", "video/3gpp"],
  mkv: ["video", "video/x-matroska"],
  webm: ["video", "video/webm"],
  avi: ["video", "video/x-msvideo"],
  ts: ["video", "video/mp2t"],
  mpg: ["video", "video/mpeg"],
  mpeg: ["video", "video/mpeg"],
  wmv: ["video", "video/x-ms-wmv"],
  jpg: ["image", "image/jpeg"],
  jpeg: ["image", "image/jpeg"],
  png: ["image", "image/png"],
  gif: ["image", "image/gif"],
  bmp: ["image", "image/bmp"],
  webp: ["image", "image/webp"],
};

export function extensionOf(name: string): string {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
}

/** The kind and MIME type of a file name, or undefined when it is not media. */
export function mediaType(name: string): { kind: Kind; mime: string } | undefined {
  const t = TYPES[extensionOf(name)];
  return t && { kind: t[0], mime: t[1] };
}

/** The kind of a MIME type or UPnP class (object.item.audioItem.musicTrack...). */
export function kindOfClass(upnpClass: string, mime = ""): Kind | undefined {
  if (upnpClass.startsWith("object.item.audioItem") || mime.startsWith("audio/")) return "audio";
  if (upnpClass.startsWith("object.item.videoItem") || mime.startsWith("video/")) return "video";
  if (upnpClass.startsWith("object.item.imageItem") || mime.startsWith("image/")) return "image";
  return undefined;
}
