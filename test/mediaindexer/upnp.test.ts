// The upnp plugin against a real MiniDLNA (minidlnad from Debian) serving a
// directory on loopback: SSDP M-SEARCH finds it, ContentDirectory Browse walks it,
// its items are listed as the device's media with the server's URLs as file_path
// (Browse pages of 2 items, so paging is exercised);
// when the server stops, the device is unavailable and its entries stay.
import { test, expect, beforeAll, afterAll, describe } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn, type Subprocess } from "bun";
import { miEnv, type MiEnv } from "./env";
import { mp3, jpeg, put } from "./media";
import { eventually } from "../helpers/harness";
import { parseDidl, parseDuration, parseDescription } from "../../src/services/mediaindexer/plugins/upnp";
import type { Json } from "../../src/core/errors";

const MINIDLNAD = ["/usr/sbin/minidlnad", "/usr/bin/minidlnad"].find((p) => existsSync(p));
const UDN = "4d696e69-444c-164e-9d41-0000000000a1";

test("DIDL-Lite items, durations and device descriptions are read", () => {
  const didl = `<DIDL-Lite><container id="1" parentID="0"><dc:title>Music</dc:title></container>
<item id="64$0" parentID="64"><dc:title>A &amp; B</dc:title><upnp:class>object.item.audioItem.musicTrack</upnp:class><upnp:artist>Ann</upnp:artist>
<res size="3389" duration="0:01:02.500" bitrate="16000" sampleFrequency="44100" nrAudioChannels="2" protocolInfo="http-get:*:audio/mpeg:DLNA.ORG_PN=MP3">http://h:1/MediaItems/22.mp3</res></item>
<item id="9" parentID="3"><dc:title>P</dc:title><upnp:class>object.item.imageItem.photo</upnp:class><res resolution="640x480" protocolInfo="http-get:*:image/jpeg:*">http://h:1/MediaItems/9.jpg</res></item></DIDL-Lite>`;
  const d = parseDidl(didl);
  expect(d.containers).toEqual(["1"]);
  expect(d.items[0]).toMatchObject({ id: "64$0", title: "A & B", artist: "Ann", size: 3389, duration: 62.5, mime: "audio/mpeg", url: "http://h:1/MediaItems/22.mp3", sampleRate: 44100, channels: 2 });
  expect(d.items[1]).toMatchObject({ width: 640, height: 480, mime: "image/jpeg" });
  expect(parseDuration("1:00:00")).toBe(3600);
  expect(parseDescription(`<root><URLBase>http://x:5/</URLBase><device><UDN>uuid:abc</UDN><friendlyName>F</friendlyName><serviceList><service><serviceType>urn:schemas-upnp-org:service:ContentDirectory:1</serviceType><controlURL>/ctl/CD</controlURL></service></serviceList></device></root>`, "http://y:6/d.xml"))
    .toEqual({ udn: "abc", name: "F", location: "http://y:6/d.xml", controlUrl: "http://x:5/ctl/CD" });
});

describe.skipIf(!MINIDLNAD)("a MiniDLNA server on loopback", () => {
  let mi: MiEnv;
  let dir: string;
  let server: Subprocess | undefined;
  let port: number;
  const URI = `upnp://${UDN}`;

  const startServer = async () => {
    server = spawn([MINIDLNAD!, "-f", join(dir, "minidlna.conf"), "-d", "-P", join(dir, "minidlna.pid")], { stdout: "ignore", stderr: "ignore", cwd: dir });
    await eventually(async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/rootDesc.xml`)).ok;
      } catch {
        return false;
      }
    }, 10000, 100);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "mediaindexer-dlna-"));
    port = 20000 + Math.floor(Math.random() * 20000);
    put(join(dir, "served/music/a.mp3"), mp3({ title: "Served One", artist: "Server", album: "Remote" }));
    put(join(dir, "served/music/b.mp3"), mp3({ title: "Served Two" }));
    put(join(dir, "served/pics/p.jpg"), jpeg({ width: 64, height: 48 }));
    mkdirSync(join(dir, "db"));
    writeFileSync(join(dir, "minidlna.conf"), [
      `port=${port}`, "network_interface=lo", `media_dir=${join(dir, "served")}`, `db_dir=${join(dir, "db")}`, `log_dir=${dir}`,
      "friendly_name=Devservices test server", "inotify=no", `uuid=${UDN}`, "",
    ].join("\n"));
    await startServer();
    mi = await miEnv({ plugins: ["upnp"], upnp: { interfaceAddress: "127.0.0.1", loopbackOnly: true, searchInterval: 0, pageSize: 2 } });
  });
  afterAll(async () => {
    server?.kill();
    await server?.exited;
    await mi?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const upnpDevices = async () => ((await mi.call("getDeviceList")).pluginList as Json[]).find((p) => p.uri === "upnp")!.deviceList as Json[];

  test("found by SSDP, browsed, its items listed with the server's URLs", async () => {
    await eventually(async () => {
      // MiniDLNA scans its directory after it starts answering: search again until its items are there.
      const d = (await upnpDevices()).find((x) => x.uri === URI);
      if (d?.state === "idle" && d.audioCount === 2 && d.imageCount === 1) return true;
      if (!d || d.state === "idle") await mi.call("runDetect", { uri: "upnp" });
      if (d?.state === "idle") await mi.call("requestMediaScan", { path: URI });
      return false;
    }, 15000, 300);
    const d = (await upnpDevices()).find((x) => x.uri === URI)!;
    expect(d).toMatchObject({ name: "Devservices test server", available: true });
    const audio = ((await mi.call("getAudioList", { uri: URI })).audioList as Json).results as Json[];
    const one = audio.find((e) => e.title === "Served One")!;
    expect(one).toMatchObject({ artist: "Server", album: "Remote", dirty: false });
    expect(one.file_path as string).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/MediaItems/\\d+\\.mp3$`));
    expect((await fetch(one.file_path as string)).ok).toBe(true);
    const md = await mi.call("getAudioMetadata", { uri: one.uri });
    expect(md.metadata).toMatchObject({ type: "audio", mime: "audio/mpeg", sample_rate: 44100, channels: 2 });
    const img = ((await mi.call("getImageList", { uri: URI })).imageList as Json).results as Json[];
    expect(img[0]).toMatchObject({ width: 64, height: 48 });
    // Items appear once although the server lists them under several containers.
    expect(audio.length).toBe(2);
    // A remote item is not deleted.
    expect(await mi.call("requestDelete", { uri: one.uri })).toMatchObject({ returnValue: false, errorCode: -1, errorText: expect.stringMatching(/^Delete failed: .* remote server/) });
    expect(await mi.call("requestDelete", { uri: one.file_path })).toMatchObject({ returnValue: false, errorText: expect.stringMatching(/^Delete failed: /) });
  });

  test("a stopped server is unavailable; its entries stay", async () => {
    server!.kill();
    await server!.exited;
    await mi.call("runDetect", { uri: "upnp" });
    await eventually(async () => (await upnpDevices()).some((d) => d.uri === URI && d.available === false), 10000, 200);
    const list = (await mi.call("getAudioList", { uri: URI })).audioList as Json;
    expect(list.count).toBe(2);
    expect((list.results as Json[]).every((e) => e.dirty === true)).toBe(true);
  });
});
