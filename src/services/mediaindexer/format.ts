// Entries and metadata objects as the spec names their fields, from database rows.
import { join } from "node:path";
import type { Json } from "../../core/errors";
import type { Device } from "./device";
import type { MediaRow } from "./index/store";
import { KIND_OF_CODE } from "./index/kinds";

export const pathOnDevice = (row: Pick<MediaRow, "dir" | "name">) => (row.dir ? `${row.dir}/${row.name}` : row.name);
export const itemUri = (dev: Device, row: Pick<MediaRow, "dir" | "name">) => `${dev.uri}/${pathOnDevice(row)}`;
/** Where a player reads the item: a file:// URI for local files, the server's URL for remote ones. */
export const filePath = (dev: Device, row: MediaRow) => row.url ?? `file://${join(dev.root, pathOnDevice(row))}`;
/** Stable identity of an entry's content: the item, its size and mtime (wyhash, hex). */
export const hashOf = (uri: string, row: MediaRow) => Bun.hash(`${uri}\0${row.size}\0${row.mtime}`).toString(16).padStart(16, "0");

function put(o: Json, key: string, v: unknown) {
  if (v !== null && v !== undefined && v !== "") o[key] = v;
}

/** A list entry (getAudioList, getVideoList, getImageList). */
export function listEntry(dev: Device, row: MediaRow): Json {
  const o: Json = {
    uri: itemUri(dev, row),
    title: row.title ?? row.name,
    last_modified_date: new Date(row.mtime).toISOString(),
    file_size: row.size,
    file_path: filePath(dev, row),
  };
  const kind = KIND_OF_CODE[row.kind];
  if (kind === "audio") {
    put(o, "duration", row.duration);
    o.thumbnail = row.thumbnail ?? "";
    put(o, "genre", row.genre);
    put(o, "album", row.album);
    put(o, "artist", row.artist);
  } else if (kind === "video") {
    put(o, "width", row.width);
    put(o, "height", row.height);
    put(o, "duration", row.duration);
    o.thumbnail = row.thumbnail ?? "";
  } else {
    put(o, "width", row.width);
    put(o, "height", row.height);
  }
  o.dirty = !dev.available;
  return o;
}

/** The metadata object of getAudioMetadata, getVideoMetadata, getImageMetadata. */
export function metadata(dev: Device, row: MediaRow): Json & { uri: string; type: string } {
  const o = listEntry(dev, row);
  const dirty = o.dirty;
  delete o.dirty;
  const out = { ...o, uri: o.uri as string, type: KIND_OF_CODE[row.kind] ?? "unknown", hash: hashOf(o.uri as string, row) } as Json & { uri: string; type: string };
  const extra = row.meta ? (JSON.parse(row.meta) as Json) : {};
  for (const [k, v] of Object.entries(extra)) put(out, k, v);
  out.dirty = dirty;
  return out;
}
