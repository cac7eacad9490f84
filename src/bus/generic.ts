// The one file that uses dbus-next: marshalling and unmarshalling of message
// bodies whose signature has containers or variants (a{sv}, arrays, structs).
// The bodies devservices sends and receives on every call (strings, integers,
// booleans, fds) take codec.ts' own path; see docs/decisions.md ("The bus stack").
import dbus from "dbus-next";
// @ts-ignore untyped internal module
import marshall from "dbus-next/lib/marshall.js";
// @ts-ignore untyped internal module
import DBusBuffer from "dbus-next/lib/dbus-buffer.js";
// @ts-ignore untyped internal module
import { messageToJsFmt } from "dbus-next/lib/marshall-compat.js";
// @ts-ignore untyped internal module
import { parseSignature } from "dbus-next/lib/signature.js";
// @ts-ignore untyped internal module
import constants from "dbus-next/lib/constants.js";

/** A D-Bus variant value (`v`): its signature and value. */
export const Variant = dbus.Variant;
export type Variant = InstanceType<typeof dbus.Variant>;

interface TypeNode {
  type: string;
  child: TypeNode[];
}

// Plain values -> dbus-next's marshaller format (what its marshall-compat does for
// whole messages): a variant is [signature, value], a dict is a list of [key, value].
function toMarshal(t: TypeNode, value: any): unknown {
  if (value === undefined) throw new Error(`a value is missing for D-Bus type '${t.type}'`);
  if (t.type === "v") {
    if (!(value instanceof Variant)) throw new Error("expected a Variant for D-Bus type 'v'");
    return [value.signature, toMarshal(parseSignature(value.signature)[0], value.value)];
  }
  if (!t.child.length) return value;
  if (t.type === "a") {
    const el = t.child[0]!;
    if (el.type === "y") return value;
    if (el.type === "{") return Object.entries(value).map(([k, v]) => [k, toMarshal(el.child[1]!, v)]);
    return (value as unknown[]).map((v) => toMarshal(el, v));
  }
  if (t.type === "(") return (value as unknown[]).map((v, i) => toMarshal(t.child[i]!, v));
  throw new Error(`unknown D-Bus type '${t.type}'`);
}

/** Marshals a body of any signature (alignment as at an 8-aligned body start). */
export function encodeBodyGeneric(signature: string, body: unknown[], fds: number[]): Buffer {
  const tree: TypeNode[] = parseSignature(signature);
  if (tree.length !== body.length) throw new Error(`signature '${signature}' wants ${tree.length} values, got ${body.length}`);
  return marshall(signature, tree.map((t, i) => toMarshal(t, body[i])), 0, fds);
}

/** Unmarshals a body of any signature into plain values (a{sv} -> object of Variant). */
export function decodeBodyGeneric(buf: Buffer, signature: string, littleEndian: boolean, fds: number[]): unknown[] {
  const endian = littleEndian ? constants.endianness.le : constants.endianness.be;
  const raw = new DBusBuffer(buf, 0, endian, fds, { ayBuffer: true }).read(signature);
  return messageToJsFmt({ signature, body: raw }).body;
}
