// Counts the UTF-8 bytes of the content a stream delivered (text, tool-call arguments, thinking), straight from the
// event's JSON text without parsing it: a cut stream's output is estimated from these bytes (see estimate.ts).
// Allocates nothing and walks only the string values it counts.

/**
 * UTF-8 bytes of the string values of the named keys in `data`, as decoded (escapes count as the character they
 * stand for). One search for `":"` (a key followed by a string value) and a by-hand compare of the key before it: a
 * quote inside a value is escaped, so the text before it ends in a backslash and never matches a key. Only the
 * counted values are walked. A short pattern keeps `indexOf` on its simple path: a long one (`"content":`) sets up
 * skip tables on every call, which cost more than the whole scan.
 */
export function stringFieldBytes(data: string, keys: readonly string[]): number {
  let n = 0;
  for (let at = data.indexOf('":"'); at >= 0; at = data.indexOf('":"', at)) {
    if (isKey(data, at, keys)) {
      at = scanString(data, at + 3);
      n += scanned;
    } else at += 3;
  }
  return n;
}

/**
 * The same count over every key (`":`, whitespace allowed after the colon), also telling whether `member` holds an
 * object (read `memberWasObject` after the call): one pass answers both questions a chat chunk asks.
 */
export function chunkFieldBytes(data: string, keys: readonly string[], member: readonly string[]): number {
  let n = 0;
  memberWasObject = false;
  for (let at = data.indexOf('":'); at >= 0; at = data.indexOf('":', at)) {
    let v = at + 2;
    while (isSpace(data.charCodeAt(v))) v++;
    const c = data.charCodeAt(v);
    if (c === 0x22 && isKey(data, at, keys)) {
      at = scanString(data, v + 1);
      n += scanned;
      continue;
    }
    if (c === 0x7b && !memberWasObject && isKey(data, at, member)) memberWasObject = true;
    at = v;
  }
  return n;
}

/** Set by chunkFieldBytes (a module slot: no result object per chunk). */
export let memberWasObject = false;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** True when the key whose closing quote is at `end` is one of `keys` (compared by hand: `startsWith` is a slow call). */
function isKey(data: string, end: number, keys: readonly string[]): boolean {
  outer: for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const start = end - k.length;
    if (start < 1 || data.charCodeAt(start - 1) !== 0x22) continue;
    for (let j = 0; j < k.length; j++) if (data.charCodeAt(start + j) !== k.charCodeAt(j)) continue outer;
    return true;
  }
  return false;
}

/** UTF-8 bytes of a string as sent (for values already parsed). */
export function utf8Bytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) n += unitBytes(s.charCodeAt(i));
  return n;
}

// The byte count of the last scanString (a module slot rather than a returned pair: no allocation per value).
let scanned = 0;

/** Walks a JSON string body from just after its opening quote; returns the index after the closing quote. */
function scanString(data: string, at: number): number {
  let n = 0;
  while (at < data.length) {
    const c = data.charCodeAt(at);
    if (c === 0x22) {
      scanned = n;
      return at + 1;
    }
    if (c === 0x5c) {
      // \uXXXX stands for one UTF-16 unit; \n, \", \\ and the rest for one byte.
      if (data.charCodeAt(at + 1) === 0x75) {
        const unit = hex4(data, at + 2);
        n += unit < 0 ? 1 : unitBytes(unit);
        at += 6;
      } else {
        n += 1;
        at += 2;
      }
      continue;
    }
    n += unitBytes(c);
    at++;
  }
  // Unterminated (a malformed event): what was there still reached the client.
  scanned = n;
  return at;
}

/** UTF-8 bytes per UTF-16 unit: a surrogate is half of a 4-byte character. */
function unitBytes(c: number): number {
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdfff) return 2;
  return 3;
}

/** The 4 hex digits at `at` as a number, or -1. */
function hex4(data: string, at: number): number {
  let v = 0;
  for (let i = at; i < at + 4; i++) {
    const c = data.charCodeAt(i);
    const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}
