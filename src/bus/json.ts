// JSON on the wire (docs/bus.md): what the platform reads from callers is bounded
// before it is parsed, and what it writes is valid for every D-Bus library.

import { withoutFTL } from "../core/engine";

/** Limits on a request payload, checked before JSON.parse (docs/decisions.md). */
export const PAYLOAD_LIMITS = {
  /** Bytes of UTF-8 (measured as UTF-16 code units x 3 at most). */
  maxBytes: 1024 * 1024,
  /** Nesting depth of arrays and objects. */
  maxDepth: 64,
};

export type PayloadProblem = { kind: "limits" | "json"; message: string };

/**
 * Nesting depth of a JSON text, in one pass that skips strings; stops early past
 * `limit`. Linear in the text and tiny per byte, so a hostile payload costs no more
 * than reading it.
 */
export function jsonDepth(text: string, limit = Infinity): number {
  let depth = 0, max = 0, inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > max && (max = depth) > limit) return max;
    } else if (c === 125 || c === 93) depth--;
  }
  return max;
}

/**
 * Whether a JSON text nests deeper than `limit`. Its depth is at most the number of
 * `{` and `[` in it, which the runtime counts (indexOf) in a few calls for most
 * payloads; only a text with more of them than the limit is scanned by jsonDepth
 * (a loop over every character, which in the first calls after start runs in the
 * interpreter).
 */
export function nestsDeeper(text: string, limit: number): boolean {
  let opens = 0;
  for (const open of ["{", "["]) {
    for (let i = text.indexOf(open); i >= 0; i = text.indexOf(open, i + 1)) {
      if (++opens > limit) return jsonDepth(text, limit) > limit;
    }
  }
  return false;
}

/** Parses a request payload within the limits; "" is {}. */
export function parsePayload(text: string, limits = PAYLOAD_LIMITS): { value: unknown } | { problem: PayloadProblem } {
  if (text.length > limits.maxBytes && Buffer.byteLength(text, "utf8") > limits.maxBytes) {
    return { problem: { kind: "limits", message: `payload is larger than ${limits.maxBytes} bytes` } };
  }
  if (nestsDeeper(text, limits.maxDepth)) {
    return { problem: { kind: "limits", message: `payload nests deeper than ${limits.maxDepth} levels` } };
  }
  if (text.trim() === "") return { value: {} };
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { problem: { kind: "json", message: (e as Error).message } };
  }
}

// Unicode noncharacters: U+FDD0..U+FDEF, and U+xFFFE/U+xFFFF in every plane.
const NONCHARACTERS = /[\uFDD0-\uFDEF\uFFFE\uFFFF]|[\uD83F\uD87F\uD8BF\uD8FF\uD93F\uD97F\uD9BF\uD9FF\uDA3F\uDA7F\uDABF\uDAFF\uDB3F\uDB7F\uDBBF\uDBFF][\uDFFE\uDFFF]/g;
const HAS_NONCHARACTER = new RegExp(NONCHARACTERS.source);
const escapeUnits = (s: string) => Array.from({ length: s.length }, (_, i) => "\\u" + s.charCodeAt(i).toString(16).padStart(4, "0")).join("");

/**
 * JSON.stringify, with Unicode noncharacters written as \u escapes: sd-bus (busctl)
 * refuses a message whose strings contain them. Lone surrogates are escaped by
 * JSON.stringify itself.
 */
export function stringifyJson(value: unknown): string {
  const s = JSON.stringify(value);
  return HAS_NONCHARACTER.test(s) ? s.replace(NONCHARACTERS, escapeUnits) : s;
}

/** Parses JSON we received in a reply or push (from a service: no limits). */
export function parseJson(text: string): any {
  return JSON.parse(text);
}

// The per-call path stops at the DFG tier (core/engine.ts, withoutFTL).
withoutFTL(parsePayload, nestsDeeper, jsonDepth, stringifyJson);
