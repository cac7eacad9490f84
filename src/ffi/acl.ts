// POSIX access control lists through their extended attributes
// (system.posix_acl_access, system.posix_acl_default; the layout of
// <linux/posix_acl_xattr.h>): a user entry added to a file's or directory's ACL, the
// mask recomputed the way setfacl does.
import { dlopen, FFIType, ptr } from "bun:ffi";
import { statSync } from "node:fs";
import { errno, SysError, cstr } from "./libc";

const { i32, i64, u64, ptr: P } = FFIType;
const lib = dlopen("libc.so.6", {
  getxattr: { args: [P, P, P, u64], returns: i64 },
  setxattr: { args: [P, P, P, u64, i32], returns: i32 },
}).symbols;

/** struct posix_acl_xattr_header { __le32 a_version; } and entries { __le16 e_tag; __le16 e_perm; __le32 e_id; }. */
export const POSIX_ACL_XATTR_VERSION = 2;
export const structs = {
  header: { c: "struct posix_acl_xattr_header", size: 4, fields: { a_version: 0 } },
  entry: { c: "struct posix_acl_xattr_entry", size: 8, fields: { e_tag: 0, e_perm: 2, e_id: 4 } },
};
export const SIZEOF_HEADER = structs.header.size, SIZEOF_ENTRY = structs.entry.size;
export const ACL_USER_OBJ = 0x01, ACL_USER = 0x02, ACL_GROUP_OBJ = 0x04, ACL_GROUP = 0x08, ACL_MASK = 0x10, ACL_OTHER = 0x20;
export const ACL_UNDEFINED_ID = 0xffffffff;
import { ENODATA } from "./errno";

export interface AclEntry {
  tag: number;
  perm: number;
  id: number;
}

export const ACCESS = "system.posix_acl_access";
export const DEFAULT = "system.posix_acl_default";

/** The entries of an ACL attribute, or null when the file has none. */
export function readAcl(path: string, attr: string): AclEntry[] | null {
  const buf = Buffer.alloc(SIZEOF_HEADER + 64 * SIZEOF_ENTRY);
  const n = Number(lib.getxattr(ptr(cstr(path)), ptr(cstr(attr)), ptr(buf), BigInt(buf.length)));
  if (n < 0) {
    const e = errno();
    if (e === ENODATA) return null;
    throw new SysError(`getxattr(${path}, ${attr})`, e);
  }
  if (n < SIZEOF_HEADER || buf.readUInt32LE(0) !== POSIX_ACL_XATTR_VERSION) throw new Error(`${path}: unknown ACL format`);
  const out: AclEntry[] = [];
  for (let o = SIZEOF_HEADER; o + SIZEOF_ENTRY <= n; o += SIZEOF_ENTRY)
    out.push({ tag: buf.readUInt16LE(o), perm: buf.readUInt16LE(o + 2), id: buf.readUInt32LE(o + 4) });
  return out;
}

export function writeAcl(path: string, attr: string, entries: AclEntry[]): void {
  const sorted = [...entries].sort((a, b) => a.tag - b.tag || a.id - b.id);
  const buf = Buffer.alloc(SIZEOF_HEADER + sorted.length * SIZEOF_ENTRY);
  buf.writeUInt32LE(POSIX_ACL_XATTR_VERSION, 0);
  sorted.forEach((e, i) => {
    const o = SIZEOF_HEADER + i * SIZEOF_ENTRY;
    buf.writeUInt16LE(e.tag, o);
    buf.writeUInt16LE(e.perm, o + 2);
    buf.writeUInt32LE(e.id >>> 0, o + 4);
  });
  if (lib.setxattr(ptr(cstr(path)), ptr(cstr(attr)), ptr(buf), BigInt(buf.length), 0) !== 0)
    throw new SysError(`setxattr(${path}, ${attr})`, errno());
}

/** The ACL a file's mode stands for (owner, group, other). */
function fromMode(mode: number): AclEntry[] {
  return [
    { tag: ACL_USER_OBJ, perm: (mode >> 6) & 7, id: ACL_UNDEFINED_ID },
    { tag: ACL_GROUP_OBJ, perm: (mode >> 3) & 7, id: ACL_UNDEFINED_ID },
    { tag: ACL_OTHER, perm: mode & 7, id: ACL_UNDEFINED_ID },
  ];
}

/**
 * Gives uid the permission bits perm (4 read, 2 write, 1 search) in the file's
 * access ACL, or in a directory's default ACL (what files created in it inherit).
 * Other entries are kept; the mask becomes the union of the group class.
 */
export function grantUser(path: string, uid: number, perm: number, attr: string = ACCESS): void {
  let acl = readAcl(path, attr);
  if (!acl) acl = fromMode(statSync(path).mode);
  acl = acl.filter((e) => !(e.tag === ACL_USER && e.id === uid) && e.tag !== ACL_MASK);
  acl.push({ tag: ACL_USER, perm, id: uid });
  const mask = acl.filter((e) => e.tag === ACL_USER || e.tag === ACL_GROUP || e.tag === ACL_GROUP_OBJ).reduce((m, e) => m | e.perm, 0);
  acl.push({ tag: ACL_MASK, perm: mask, id: ACL_UNDEFINED_ID });
  writeAcl(path, attr, acl);
}
