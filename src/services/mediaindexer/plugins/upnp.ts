// upnp: DLNA/UPnP media servers. Detection sends SSDP M-SEARCH for MediaServer
// devices (UDP, to the multicast group or a configured address; again every
// searchInterval seconds); a server that answers is described (its device
// description: UDN, friendly name, ContentDirectory control URL) and becomes the
// device upnp://<UDN uuid>. Indexing walks its ContentDirectory with Browse
// (BrowseDirectChildren, a page at a time) and stores each item once (servers list
// an item under several containers: it is keyed by its resource URL's path, which
// is also its path on the device); the resource URL is the entry's file_path. A
// server that no longer answers is unavailable, its entries kept.
// Loaded by the first search, not while the process starts (docs/performance.md).
const dgram = () => require("node:dgram") as typeof import("node:dgram");
import type { Device } from "../device";
import type { Plugin, PluginHost } from "./plugin";
import type { ScanResult } from "../index/scanner";
import { Slicer } from "../index/scanner";
import { KIND_CODE, BAD, kindOfClass } from "../index/kinds";
import type { NewMedia } from "../index/store";

const SSDP_ST = "urn:schemas-upnp-org:device:MediaServer:1";
const CDS = "urn:schemas-upnp-org:service:ContentDirectory:1";
const HTTP_TIMEOUT_MS = 10000;
const BATCH = 64;

export interface Server {
  udn: string;
  name: string;
  location: string;
  controlUrl: string;
}

// ---------------------------------------------------------------- small XML helpers

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
export const unxml = (s: string) =>
  s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_, e: string) =>
    e[0] === "#" ? String.fromCodePoint(e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10)) : ENTITIES[e.toLowerCase()]!,
  );
const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
/** The text of the first element named tag (namespace prefix optional). */
const text = (xml: string, tag: string): string | undefined => {
  const m = new RegExp(`<(?:[\\w-]+:)?${tag}(?:\\s[^>]*)?>([\\s\\S]*?)</(?:[\\w-]+:)?${tag}>`).exec(xml);
  return m ? unxml(m[1]!.trim()) : undefined;
};
const attrs = (s: string): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const m of s.matchAll(/([\w:-]+)\s*=\s*"([^"]*)"/g)) out[m[1]!] = unxml(m[2]!);
  return out;
};

/** The MediaServer parts of a device description. */
export function parseDescription(xml: string, location: string): Server | undefined {
  const udn = text(xml, "UDN");
  if (!udn) return undefined;
  const base = text(xml, "URLBase") || location;
  for (const m of xml.matchAll(/<service>([\s\S]*?)<\/service>/g)) {
    if (!text(m[1]!, "serviceType")?.startsWith("urn:schemas-upnp-org:service:ContentDirectory:")) continue;
    const ctl = text(m[1]!, "controlURL");
    if (!ctl) continue;
    return { udn: udn.replace(/^uuid:/, ""), name: text(xml, "friendlyName") ?? udn, location, controlUrl: new URL(ctl, base).href };
  }
  return undefined;
}

export interface DidlItem {
  id: string;
  title: string;
  upnpClass: string;
  url: string;
  mime: string;
  size?: number;
  duration?: number;
  width?: number;
  height?: number;
  artist?: string;
  album?: string;
  genre?: string;
  date?: string;
  albumArt?: string;
  sampleRate?: number;
  bitrate?: number;
  channels?: number;
}

/** "H+:MM:SS[.F+]" -> seconds. */
export function parseDuration(s: string | undefined): number | undefined {
  const m = s && /^(\d+):(\d\d):(\d\d(?:\.\d+)?)$/.exec(s.trim());
  return m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) : undefined;
}

const num = (s: string | undefined) => (s !== undefined && s !== "" && Number.isFinite(Number(s)) ? Number(s) : undefined);

/** Containers and items of a DIDL-Lite document (the Result of Browse). */
export function parseDidl(didl: string): { containers: string[]; items: DidlItem[] } {
  const containers: string[] = [];
  for (const m of didl.matchAll(/<container\s([^>]*)>/g)) {
    const id = attrs(m[1]!).id;
    if (id !== undefined) containers.push(id);
  }
  const items: DidlItem[] = [];
  for (const m of didl.matchAll(/<item\s([^>]*)>([\s\S]*?)<\/item>/g)) {
    const a = attrs(m[1]!);
    const body = m[2]!;
    const res = /<res\s([^>]*)>([^<]*)<\/res>/.exec(body);
    if (!res || a.id === undefined) continue;
    const ra = attrs(res[1]!);
    const mime = (ra.protocolInfo ?? "").split(":")[2] ?? "";
    const [w, h] = (ra.resolution ?? "").split("x").map(Number);
    items.push({
      id: a.id,
      title: text(body, "title") ?? a.id,
      upnpClass: text(body, "class") ?? "",
      url: unxml(res[2]!.trim()),
      mime,
      size: num(ra.size),
      duration: parseDuration(ra.duration),
      width: w || undefined,
      height: h || undefined,
      artist: text(body, "artist") ?? text(body, "creator"),
      album: text(body, "album"),
      genre: text(body, "genre"),
      date: text(body, "date"),
      albumArt: text(body, "albumArtURI"),
      sampleRate: num(ra.sampleFrequency),
      bitrate: num(ra.bitrate),
      channels: num(ra.nrAudioChannels),
    });
  }
  return { containers, items };
}

async function http(url: string, init?: RequestInit): Promise<string> {
  const r = await fetch(url, { ...init, signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.text();
}

/** One Browse (BrowseDirectChildren) page. */
export async function browse(controlUrl: string, objectId: string, start: number, count: number) {
  const body =
    `<?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">` +
    `<s:Body><u:Browse xmlns:u="${CDS}"><ObjectID>${esc(objectId)}</ObjectID><BrowseFlag>BrowseDirectChildren</BrowseFlag><Filter>*</Filter>` +
    `<StartingIndex>${start}</StartingIndex><RequestedCount>${count}</RequestedCount><SortCriteria></SortCriteria></u:Browse></s:Body></s:Envelope>`;
  const xml = await http(controlUrl, {
    method: "POST",
    headers: { "Content-Type": 'text/xml; charset="utf-8"', SOAPACTION: `"${CDS}#Browse"` },
    body,
  });
  const result = /<Result>([\s\S]*?)<\/Result>/.exec(xml);
  if (!result) throw new Error(`Browse ${objectId}: no Result`);
  return {
    ...parseDidl(unxml(result[1]!)),
    returned: Number(text(xml, "NumberReturned") ?? 0),
    total: Number(text(xml, "TotalMatches") ?? 0),
  };
}

/** SSDP M-SEARCH: the LOCATION of every MediaServer that answers within mx seconds (and a little). */
export function ssdpSearch(o: { address: string; port: number; mx: number; interfaceAddress?: string }): Promise<Set<string>> {
  return new Promise((resolve) => {
    const found = new Set<string>();
    const s = dgram().createSocket({ type: "udp4", reuseAddr: true });
    const done = () => {
      try {
        s.close();
      } catch {}
      resolve(found);
    };
    s.on("error", done);
    s.on("message", (m) => {
      const t = m.toString("latin1");
      if (!/^HTTP\/1\.[01] 200/.test(t)) return;
      const loc = /^LOCATION:\s*(\S+)/im.exec(t)?.[1];
      const st = /^ST:\s*(\S+)/im.exec(t)?.[1];
      if (loc && (!st || st === SSDP_ST)) found.add(loc);
    });
    s.bind(0, o.interfaceAddress, () => {
      try {
        if (o.interfaceAddress) s.setMulticastInterface(o.interfaceAddress);
        s.setMulticastLoopback(true);
      } catch {}
      const msg = `M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: "ssdp:discover"\r\nMX: ${o.mx}\r\nST: ${SSDP_ST}\r\n\r\n`;
      // Twice: UDP may drop one.
      s.send(msg, o.port, o.address);
      setTimeout(() => s.send(msg, o.port, o.address, () => {}), 100);
      setTimeout(done, o.mx * 1000 + 500);
    });
  });
}

const isLoopback = (url: string) => {
  try {
    const h = new URL(url).hostname;
    return h === "localhost" || h.startsWith("127.") || h === "[::1]";
  } catch {
    return false;
  }
};

export class UpnpPlugin implements Plugin {
  readonly name = "upnp" as const;
  active = false;
  detecting = false;
  private timer?: ReturnType<typeof setInterval>;
  /** Device uri -> its server (control URL). */
  private servers = new Map<string, Server>();
  private searching?: Promise<void>;

  constructor(private ix: PluginHost) {}

  unavailable() {
    return null;
  }

  async startDetect() {
    const o = this.ix.cfg.upnp;
    if (!this.detecting && o.searchInterval > 0) {
      this.timer = setInterval(() => void this.search(), o.searchInterval * 1000);
      this.timer.unref?.();
    }
    this.detecting = true;
    await this.search();
  }

  /** One search: servers that answer are (again) available and indexed; known ones that do not, checked and dropped. */
  search(): Promise<void> {
    this.searching ??= this.doSearch().finally(() => (this.searching = undefined));
    return this.searching;
  }

  private async doSearch() {
    const o = this.ix.cfg.upnp;
    const locations = await ssdpSearch(o);
    const answered = new Set<string>();
    for (const loc of locations) {
      if (o.loopbackOnly && !isLoopback(loc)) continue;
      let server: Server | undefined;
      try {
        server = parseDescription(await http(loc), loc);
      } catch (e) {
        this.ix.log.warn({ location: loc, err: (e as Error).message }, "upnp: device description not read");
      }
      if (!server || (o.loopbackOnly && !isLoopback(server.controlUrl))) continue;
      const uri = `upnp://${server.udn}`;
      answered.add(uri);
      this.servers.set(uri, server);
      const known = this.ix.devices.get(uri);
      if (known?.available) continue;
      this.ix.log.info({ device: uri, name: server.name, location: loc }, "upnp: media server found");
      const dev = this.ix.upsertDevice({ uri, plugin: "upnp", name: server.name, description: `UPnP media server ${server.name} (${loc})`, root: loc }, true);
      void this.ix.scan(dev).catch(() => {});
    }
    for (const dev of this.ix.devicesOf("upnp")) {
      if (!dev.available || answered.has(dev.uri)) continue;
      try {
        await http(dev.root);
      } catch {
        this.ix.log.info({ device: dev.uri }, "upnp: media server gone");
        this.ix.setUnavailable(dev.uri);
      }
    }
  }

  stopDetect() {
    this.detecting = false;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Walks the server's ContentDirectory; entries of items no longer listed are removed. */
  async scan(dev: Device, _sub: string, _recursive: boolean, abort: { aborted: boolean }): Promise<ScanResult> {
    const t0 = performance.now();
    const r: ScanResult = { files: 0, indexed: 0, unchanged: 0, removed: 0, failed: 0, subdirs: [], unreadableDirs: 0, peakEntries: 0, ms: 0, aborted: false };
    const store = this.ix.store;
    let server = this.servers.get(dev.uri);
    try {
      server ??= parseDescription(await http(dev.root), dev.root);
    } catch {}
    if (!server) {
      this.ix.setUnavailable(dev.uri);
      throw new Error(`${dev.uri}: server not reachable`);
    }
    this.servers.set(dev.uri, server);
    const slicer = new Slicer();
    const known = new Map<string, { id: number; kind: number; size: number; mtime: number; url: string | null; title: string | null }>();
    for (const row of store.rowsOf(dev.uri)) known.set(`${row.dir}\0${row.name}`, row);
    const seen = new Set<string>();
    const visited = new Set<string>(["0"]);
    const queue = ["0"];
    const pending: NewMedia[] = [];
    const delta = [0, 0, 0];
    const flush = () => {
      const rows = pending.splice(0);
      store.upsertMany(rows);
      this.ix.noteChange(dev.uri, delta.splice(0, 3, 0, 0, 0), rows.length > 0);
    };
    const pageSize = this.ix.cfg.upnp.pageSize;
    try {
      while (queue.length && !abort.aborted) {
        const id = queue.shift()!;
        for (let start = 0; !abort.aborted; ) {
          const page = await browse(server.controlUrl, id, start, pageSize);
          for (const c of page.containers) if (!visited.has(c)) visited.add(c), queue.push(c);
          for (const it of page.items) {
            const kind = kindOfClass(it.upnpClass, it.mime);
            if (!kind) continue;
            let path: string;
            try {
              path = decodeURIComponent(new URL(it.url).pathname).replace(/^\/+/, "") || it.id;
            } catch {
              path = it.id;
            }
            const i = path.lastIndexOf("/");
            const dir = i < 0 ? "" : path.slice(0, i);
            const name = path.slice(i + 1);
            const key = `${dir}\0${name}`;
            if (seen.has(key)) continue;
            seen.add(key);
            r.files++;
            const size = it.size ?? 0;
            const mtime = it.date && Number.isFinite(Date.parse(it.date)) ? Date.parse(it.date) : 0;
            const old = known.get(key);
            if (old && old.size === size && old.mtime === mtime && old.url === it.url && old.title === it.title && old.kind === KIND_CODE[kind]) {
              r.unchanged++;
              continue;
            }
            const meta: Record<string, string | number> = {};
            if (it.mime) meta.mime = it.mime;
            if (it.date) meta.date_of_creation = it.date;
            if (it.sampleRate) meta.sample_rate = it.sampleRate;
            if (it.bitrate) meta.bit_rate = it.bitrate;
            if (it.channels) meta.channels = it.channels;
            pending.push({
              device: dev.uri, dir, name, kind: KIND_CODE[kind], size, mtime, url: it.url, title: it.title,
              duration: it.duration ?? null, thumbnail: it.albumArt ?? null, genre: it.genre ?? null, album: it.album ?? null,
              artist: it.artist ?? null, width: it.width ?? null, height: it.height ?? null, meta: JSON.stringify(meta),
            });
            if (old && old.kind !== BAD) delta[old.kind]!--;
            delta[KIND_CODE[kind]]!++;
            r.indexed++;
            if (pending.length >= BATCH) flush();
          }
          start += page.returned;
          if (!page.returned || (page.total > 0 && start >= page.total)) break;
          await slicer.tick();
        }
        await slicer.tick();
      }
    } catch (e) {
      flush();
      this.ix.log.warn({ device: dev.uri, err: (e as Error).message }, "upnp: browsing failed; the server is unavailable");
      this.ix.setUnavailable(dev.uri);
      r.aborted = true;
      r.ms = performance.now() - t0;
      return r;
    }
    flush();
    if (!abort.aborted) {
      const gone = [...known].filter(([k]) => !seen.has(k)).map(([, row]) => row.id);
      for (const k of store.deleteIds(gone)) if (k !== BAD) delta[k]!--;
      r.removed = gone.length;
      this.ix.noteChange(dev.uri, delta, false);
    }
    r.aborted = abort.aborted;
    r.ms = performance.now() - t0;
    return r;
  }

  close() {
    this.stopDetect();
  }
}
