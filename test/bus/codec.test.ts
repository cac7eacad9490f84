// The wire codec against dbus-next (the reference marshaller): the same bodies encode
// to the same bytes, and each side reads what the other wrote.
import { test, expect } from "bun:test";
import { encode, decode, Variant, parseSignature, METHOD_RETURN, METHOD_CALL } from "../../src/bus/codec";
import { encodeBodyGeneric, decodeBodyGeneric, Variant as DVariant } from "../../src/bus/generic";

const bodyOf = (sig: string, body: unknown[]) => {
  const { data } = encode({ type: METHOD_RETURN, replySerial: 1, signature: sig, body }, 9);
  const fieldsLen = data.readUInt32LE(12);
  return data.subarray(16 + Math.ceil(fieldsLen / 8) * 8);
};

test("basic, array, dict and variant bodies encode as dbus-next does", () => {
  const cases: [string, unknown[], unknown[]][] = [
    ["s", ["héllo"], ["héllo"]],
    ["us", [7, '{"a":1}'], [7, '{"a":1}']],
    ["bynqiuxtd", [true, 200, -3, 65000, -70000, 4000000000, -5, 6, 1.5], [true, 200, -3, 65000, -70000, 4000000000, -5, 6, 1.5]],
    ["as", [["a", "bc", ""]], [["a", "bc", ""]]],
    ["au", [[1, 2, 3]], [[1, 2, 3]]],
    ["a{sv}", [{ UnixUserID: new Variant("u", 0), UnixGroupIDs: new Variant("au", [0, 5]), Name: new Variant("s", "x") }], [{ UnixUserID: new DVariant("u", 0), UnixGroupIDs: new DVariant("au", [0, 5]), Name: new DVariant("s", "x") }]],
    ["a{sv}", [{}], [{}]],
    ["sa{su}x", ["k", { a: 1, b: 2 }, 12], ["k", { a: 1, b: 2 }, 12]],
  ];
  for (const [sig, ours, theirs] of cases) {
    const mine = bodyOf(sig, ours);
    expect(mine.toString("hex")).toBe(encodeBodyGeneric(sig, theirs, []).toString("hex"));
    const back = decodeBodyGeneric(mine, sig, true, []);
    const plain = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? Number(x) : x));
    expect(plain(back)).toBe(plain(theirs));
  }
});

test("decode reads what dbus-next wrote, variants included", () => {
  const sig = "a{sv}";
  const buf = encodeBodyGeneric(sig, [{ ProcessID: new DVariant("u", 42), Groups: new DVariant("au", [1, 2]), Pair: new DVariant("(su)", ["a", 3]) }], []);
  const { data } = encode({ type: METHOD_RETURN, replySerial: 1, signature: "a{sv}", body: [{}] }, 9);
  // Splice dbus-next's body into a header that declares its length.
  const fieldsLen = data.readUInt32LE(12);
  const head = Buffer.from(data.subarray(0, 16 + Math.ceil(fieldsLen / 8) * 8));
  head.writeUInt32LE(buf.length, 4);
  const m = decode(Buffer.concat([head, buf]), () => []);
  expect(m.body[0].ProcessID).toEqual(new Variant("u", 42));
  expect(m.body[0].Groups.value).toEqual([1, 2]);
  expect(m.body[0].Pair.value).toEqual(["a", 3]);
});

test("a top-level struct body goes through dbus-next both ways", () => {
  const { data } = encode({ type: METHOD_CALL, path: "/", member: "X", signature: "a(ss)u", body: [[["a", "b"], ["c", "d"]], 5] }, 3);
  const m = decode(data, () => []);
  expect(m.body).toEqual([[["a", "b"], ["c", "d"]], 5]);
  expect(m.serial).toBe(3);
  expect(parseSignature("a{sv}(ii)")).toEqual([{ t: "a", child: [{ t: "{", child: [{ t: "s" }, { t: "v" }] }] }, { t: "(", child: [{ t: "i" }, { t: "i" }] }]);
  expect(() => parseSignature("a{s")).toThrow();
});

test("header strings handed back from the decoder's slots are always the ones the bytes say", () => {
  // Names of one length that differ in one byte, the same name again, and non-ASCII
  // bytes (valid UTF-8, and a lone byte that decodes to U+FFFD): each message's fields
  // must come back as they were sent, whatever the one before left in its slot.
  const names = ["/a/b/c1", "/a/b/c2", "/a/b/c1", "/a/b/d1", "/a/é/c", "/a/b/c1"];
  const members = ["ping", "pong", "ping", "piňg", "ping", "p1ng"];
  for (let round = 0; round < 3; round++)
    names.forEach((path, i) => {
      const m = { type: METHOD_CALL, path, interface: `com.vendor.x${i % 2}`, member: members[i]!, sender: `:1.${i}`, signature: "s", body: [`{"n":${i}}`] };
      const got = decode(encode(m, i + 1).data, () => []);
      expect([got.path, got.interface, got.member, got.sender, got.body[0]]).toEqual([path, m.interface, m.member, m.sender, m.body[0]]);
    });
  // A string decoded from multi-byte UTF-8 ("é" is C3 A9) must never be handed back
  // for other bytes that equal its characters (E9, invalid UTF-8 alone): 2000 such
  // pairs, so that many of them meet in one slot.
  const latin = (k: number) => String.fromCharCode(0x80 + ((k * 37) % 128));
  for (let k = 0; k < 2000; k++) {
    const x = `${latin(k)}${String.fromCharCode(97 + (k % 26))}${latin(k * 7 + 3)}`.slice(0, 2 + (k % 2));
    const first = decode(encode({ type: METHOD_CALL, path: "/p", member: x, signature: "" }, 1).data, () => []);
    expect(first.member).toBe(x);
    const other = Buffer.from(x, "latin1"); // one byte per character: not x's UTF-8
    const m = Buffer.from(encode({ type: METHOD_CALL, path: "/p", member: "_".repeat(other.length), signature: "" }, 2).data);
    m.set(other, m.indexOf(Buffer.from("_".repeat(other.length))));
    expect(decode(m, () => []).member).toBe(other.toString("utf8"));
  }
});

test("strings are written as UTF-8 whether short, long, ASCII or not", () => {
  for (const s of ["", "a", "é", "aé", "a".repeat(127) + "é", "a".repeat(128), "a".repeat(129), "ü".repeat(200), "x".repeat(5000), "😀 ok", "a\u0000b"]) {
    const { data } = encode({ type: METHOD_RETURN, replySerial: 1, destination: ":1.7", signature: "ss", body: [s, "tail"] }, 3);
    const m = decode(data, () => []);
    expect(m.body).toEqual([s, "tail"]);
    // The length field counts UTF-8 bytes.
    const bodyAt = 16 + Math.ceil(data.readUInt32LE(12) / 8) * 8;
    expect(data.readUInt32LE(bodyAt)).toBe(Buffer.byteLength(s));
  }
});
