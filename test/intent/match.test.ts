// Matching and ordering (spec "What the service does", intent service; docs/decisions/intent.md).
import { test, expect } from "bun:test";
import { matchIntent, effectiveMime, type HandlerEntry } from "../../src/services/intent/match";

const h = (name: string, intentFilters: HandlerEntry["intentFilters"], sessionId?: string): HandlerEntry => ({
  name,
  intentFilters,
  dir: `/apps/${name}`,
  ...(sessionId ? { sessionId } : {}),
});

const pool: HandlerEntry[] = [
  h("com.vendor.browser", [{ actions: ["view"], uris: ["http://", "https://"] }]),
  h("com.vendor.navigation", [{ actions: ["view"], uris: ["geo://"] }], "driver"),
  h("com.vendor.settings", [{ actions: ["view"], uris: ["app://com.vendor.settings/"] }]),
  h("com.vendor.player", [
    {
      actions: ["view"],
      mimeTypes: [{ mime: "video/*" }, { extension: "mp3" }, { mime: "application/vnd.apple.mpegurl", stream: true }, { scheme: "rtsp" }],
    },
  ]),
  h("com.vendor.nothing", [{ actions: ["edit"], uris: [], mimeTypes: [] }]),
];
const names = (hs: HandlerEntry[]) => hs.map((x) => x.name);

test("the four standard intents find their handlers", () => {
  expect(names(matchIntent(pool, { action: "view", uri: "http://example.com/a" }))).toEqual(["com.vendor.browser"]);
  expect(names(matchIntent(pool, { action: "view", uri: "https://example.com/" }))).toEqual(["com.vendor.browser"]);
  expect(names(matchIntent(pool, { action: "view", uri: "geo://48.1,11.5" }))).toEqual(["com.vendor.navigation"]);
  expect(names(matchIntent(pool, { action: "view", uri: "app://com.vendor.settings/wifi" }))).toEqual(["com.vendor.settings"]);
  expect(names(matchIntent(pool, { action: "view", uri: "file:///media/usb/clip.MP4" }))).toEqual(["com.vendor.player"]);
});

test("play media: mime type from the file:// extension, by extension entry, or given", () => {
  expect(effectiveMime({ uri: "file:///media/a%20b.mkv" })).toBe("video/x-matroska");
  expect(effectiveMime({ uri: "file:///media/song.mp3?x=1" })).toBe("audio/mpeg");
  expect(effectiveMime({ uri: "http://x/clip.mp4" })).toBeUndefined();
  expect(names(matchIntent(pool, { action: "view", uri: "file:///media/song.mp3" }))).toEqual(["com.vendor.player"]);
  expect(names(matchIntent(pool, { action: "view", uri: "file:///media/doc.pdf" }))).toEqual([]);
  expect(names(matchIntent(pool, { action: "view", uri: "file:///media/noext", mimeType: "video/webm" }))).toEqual(["com.vendor.player"]);
  expect(names(matchIntent(pool, { action: "view", mimeType: "video/mp4" }))).toEqual(["com.vendor.player"]);
});

test("a type from a non-file uri matches only stream entries; scheme entries take the whole scheme", () => {
  expect(names(matchIntent(pool, { action: "view", uri: "https://cdn/x.m3u8", mimeType: "application/vnd.apple.mpegurl" }))).toEqual([
    "com.vendor.browser",
    "com.vendor.player",
  ]);
  expect(names(matchIntent(pool, { action: "view", uri: "smb://nas/x.mp4", mimeType: "video/mp4" }))).toEqual([]);
  expect(names(matchIntent(pool, { action: "view", uri: "rtsp://cam/1" }))).toEqual(["com.vendor.player"]);
});

test("action only matches on actions; unknown action and empty kinds match nothing", () => {
  expect(names(matchIntent(pool, { action: "view" }))).toEqual([
    "com.vendor.browser",
    "com.vendor.navigation",
    "com.vendor.player",
    "com.vendor.settings",
  ]);
  expect(names(matchIntent(pool, { action: "edit" }))).toEqual(["com.vendor.nothing"]);
  expect(names(matchIntent(pool, { action: "edit", uri: "http://x" }))).toEqual([]);
  expect(names(matchIntent(pool, { action: "share" }))).toEqual([]);
});

test("order: priority, then the longer uri prefix, then name and session", () => {
  const apps = [
    h("b.generic", [{ actions: ["view"], uris: ["https://"] }]),
    h("a.generic", [{ actions: ["view"], uris: ["https://"] }]),
    h("c.maps", [{ actions: ["view"], uris: ["https://maps.example.com/"] }]),
    h("d.preferred", [{ actions: ["view"], uris: ["https://"], priority: 10 }]),
    h("a.generic", [{ actions: ["view"], uris: ["https://"] }], "driver"),
  ];
  expect(matchIntent(apps, { action: "view", uri: "https://maps.example.com/x" }).map((x) => `${x.name}/${x.sessionId ?? ""}`)).toEqual([
    "d.preferred/",
    "c.maps/",
    "a.generic/",
    "a.generic/driver",
    "b.generic/",
  ]);
  // The best filter of a handler counts.
  const two = [h("x", [{ actions: ["view"], uris: ["https://"] }, { actions: ["view"], uris: ["https://a/"], priority: 5 }]), h("y", [{ actions: ["view"], uris: ["https://"], priority: 3 }])];
  expect(names(matchIntent(two, { action: "view", uri: "https://a/b" }))).toEqual(["x", "y"]);
  expect(names(matchIntent(two, { action: "view", uri: "https://b/" }))).toEqual(["y", "x"]);
});

test("explicit intents by name return every session's handler of that name", () => {
  const apps = [h("nav", [], "passenger"), h("nav", []), h("nav", [], "driver"), h("other", [])];
  expect(matchIntent(apps, { name: "nav", action: "ignored" }).map((x) => x.sessionId ?? "")).toEqual(["", "driver", "passenger"]);
});
