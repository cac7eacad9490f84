// Matching intents against handler filters (spec "What the service does", intent
// service) and the order of several matches (docs/decisions/intent.md).
import type { IntentFilterT, IntentT, MimeTypeEntryT } from "./schemas";

/** One handler of the pool: an application descriptor, under a session or shared. */
export interface HandlerEntry {
  name: string;
  sessionId?: string;
  intentFilters: IntentFilterT[];
  /** The app's executable from its descriptor (the exec launcher runs it). */
  main?: string;
  /** The app's directory (holds appinfo.json). */
  dir: string;
}

/** Extensions of the play-media intent's `file://` paths, when no mimeType is given. */
export const EXTENSION_MIME: Record<string, string> = {
  mp4: "video/mp4",
  m4v: "video/mp4",
  mkv: "video/x-matroska",
  webm: "video/webm",
  avi: "video/x-msvideo",
  mov: "video/quicktime",
  ts: "video/mp2t",
  mpg: "video/mpeg",
  mpeg: "video/mpeg",
  "3gp": "video/3gpp",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  aac: "audio/aac",
  ogg: "audio/ogg",
  oga: "audio/ogg",
  opus: "audio/opus",
  flac: "audio/flac",
  wav: "audio/wav",
  wma: "audio/x-ms-wma",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  bmp: "image/bmp",
  webp: "image/webp",
  m3u8: "application/vnd.apple.mpegurl",
  pdf: "application/pdf",
  txt: "text/plain",
  html: "text/html",
};

export function uriScheme(uri: string): string | undefined {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri);
  return m ? m[1]!.toLowerCase() : undefined;
}

/** Lower-case extension of the uri's last path segment ("" when none). */
export function uriExtension(uri: string): string {
  let path = uri.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*/, "").replace(/[?#].*$/, "");
  try {
    path = decodeURIComponent(path);
  } catch {
    /* kept as written */
  }
  const last = path.slice(path.lastIndexOf("/") + 1);
  const dot = last.lastIndexOf(".");
  return dot > 0 ? last.slice(dot + 1).toLowerCase() : "";
}

/** The intent's mime type: as given, else derived from a `file://` uri's extension. */
export function effectiveMime(intent: IntentT): string | undefined {
  if (intent.mimeType) return intent.mimeType.toLowerCase();
  if (intent.uri && uriScheme(intent.uri) === "file") return EXTENSION_MIME[uriExtension(intent.uri)];
  return undefined;
}

function mimeMatches(pattern: string, mime: string): boolean {
  const [pt, ps] = pattern.toLowerCase().split("/");
  const [mt, ms] = mime.split("/");
  return (pt === "*" || pt === mt) && (ps === "*" || ps === ms);
}

function entryMatches(e: MimeTypeEntryT, uri: string | undefined, mime: string | undefined): boolean {
  const entry = typeof e === "string" ? { mime: e } : e;
  const scheme = uri ? uriScheme(uri) : undefined;
  if (entry.scheme !== undefined) {
    if (scheme !== entry.scheme.toLowerCase()) return false;
    if (entry.mime === undefined && entry.extension === undefined) return true;
  }
  if (entry.mime === undefined && entry.extension === undefined) return false;
  // A type from a non-file uri is a stream: only entries that say they take streams match.
  if (uri !== undefined && scheme !== "file" && entry.scheme === undefined && entry.stream !== true) return false;
  if (entry.mime !== undefined && (mime === undefined || !mimeMatches(entry.mime, mime))) return false;
  if (entry.extension !== undefined) {
    if (uri === undefined || uriExtension(uri) !== entry.extension.toLowerCase().replace(/^\./, "")) return false;
  }
  return true;
}

/** How well one filter matches: undefined when it does not. */
export function filterMatch(f: IntentFilterT, intent: IntentT): { priority: number; specificity: number } | undefined {
  if (!intent.action || !(f.actions ?? []).includes(intent.action)) return undefined;
  const priority = f.priority ?? 0;
  const uri = intent.uri;
  const mime = effectiveMime(intent);
  if (uri === undefined && mime === undefined) return { priority, specificity: 0 };
  let specificity = -1;
  if (uri !== undefined) for (const p of f.uris ?? []) if (uri.startsWith(p)) specificity = Math.max(specificity, p.length);
  if (specificity < 0 && (f.mimeTypes ?? []).some((e) => entryMatches(e, uri, mime))) specificity = 0;
  return specificity < 0 ? undefined : { priority, specificity };
}

const byNameSession = (a: HandlerEntry, b: HandlerEntry) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : (a.sessionId ?? "") < (b.sessionId ?? "") ? -1 : (a.sessionId ?? "") > (b.sessionId ?? "") ? 1 : 0;

/** All handlers in the stable order: by name, then session (shared handlers first). */
export function ordered(handlers: HandlerEntry[]): HandlerEntry[] {
  return [...handlers].sort(byNameSession);
}

/**
 * The handlers for an intent, best first. Explicit (name): every handler of that
 * name. Implicit (action): those with a matching filter, ordered by the filter's
 * priority (higher first), then the longer matching uri prefix, then name and session.
 */
export function matchIntent(handlers: HandlerEntry[], intent: IntentT): HandlerEntry[] {
  if (intent.name) return ordered(handlers.filter((h) => h.name === intent.name));
  const found: { h: HandlerEntry; priority: number; specificity: number }[] = [];
  for (const h of handlers) {
    let best: { priority: number; specificity: number } | undefined;
    for (const f of h.intentFilters) {
      const m = filterMatch(f, intent);
      if (m && (!best || m.priority > best.priority || (m.priority === best.priority && m.specificity > best.specificity))) best = m;
    }
    if (best) found.push({ h, ...best });
  }
  found.sort((a, b) => b.priority - a.priority || b.specificity - a.specificity || byNameSession(a.h, b.h));
  return found.map((x) => x.h);
}
