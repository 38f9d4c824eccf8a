// Byte-level walks over the members of a JSON object's top level, so the hot path can read or rewrite one member
// without parsing (or re-serialising) the whole body. Both answer undefined whenever the bytes are not what valid JSON
// would hold there: callers then fall back to a full parse. Strings are skipped by searching for their closing quote
// (memchr-fast); a quote preceded by an odd run of backslashes is part of the string, an even run (or none) ends it.
// UTF-8 continuation bytes are never `"` or `\`, so byte offsets are safe with any text.

export interface Span {
  /** First byte of the value. */
  start: number;
  /** One past its last byte. */
  end: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_OBJ = 0x7b;
const CLOSE_OBJ = 0x7d;
const OPEN_ARR = 0x5b;
const CLOSE_ARR = 0x5d;

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** True when the quote at `q` is escaped (an odd number of backslashes right before it). */
function escapedAt(buf: Buffer, q: number): boolean {
  let n = 0;
  for (let i = q - 1; i >= 0 && buf[i] === BACKSLASH; i--) n++;
  return (n & 1) === 1;
}

/** Index of the quote closing the string opened at `open`, or -1. */
function stringEnd(buf: Buffer, open: number): number {
  let q = open;
  do q = buf.indexOf(QUOTE, q + 1);
  while (q !== -1 && escapedAt(buf, q));
  return q;
}

/** Index of the quote opening the string closed at `close`, or -1. A plain loop: strings near an answer's end are short. */
function stringStart(buf: Buffer, close: number): number {
  for (let q = close - 1; q >= 0; q--) if (buf[q] === QUOTE && !escapedAt(buf, q)) return q;
  return -1;
}

function skipWs(buf: Buffer, i: number): number {
  while (i < buf.length && isWs(buf[i])) i++;
  return i;
}

function skipWsBack(buf: Buffer, i: number): number {
  while (i >= 0 && isWs(buf[i])) i--;
  return i;
}

/** Whether the key string between the quotes at `open` and `close` is `key` (decoding escapes when it has any). */
function keyIs(buf: Buffer, open: number, close: number, key: string): boolean {
  // Byte for byte as latin1 text (what comparing a latin1 decoding would do), without a view or a string per key.
  let plain = true;
  for (let i = open + 1; i < close; i++) {
    if (buf[i] === BACKSLASH) {
      plain = false;
      break;
    }
  }
  if (plain) {
    if (close - open - 1 !== key.length) return false;
    for (let i = 0; i < key.length; i++) if (buf[open + 1 + i] !== key.charCodeAt(i)) return false;
    return true;
  }
  try {
    return JSON.parse(buf.toString('utf8', open, close + 1)) === key;
  } catch {
    return false;
  }
}

/** One past the end of the value starting at `i`, or -1. */
function valueEnd(buf: Buffer, i: number): number {
  const c = buf[i];
  if (c === QUOTE) {
    const e = stringEnd(buf, i);
    return e === -1 ? -1 : e + 1;
  }
  if (c === OPEN_OBJ || c === OPEN_ARR) {
    let depth = 0;
    for (let j = i; j < buf.length; j++) {
      const d = buf[j];
      if (d === QUOTE) {
        j = stringEnd(buf, j);
        if (j === -1) return -1;
      } else if (d === OPEN_OBJ || d === OPEN_ARR) depth++;
      else if (d === CLOSE_OBJ || d === CLOSE_ARR) {
        if (--depth === 0) return j + 1;
      }
    }
    return -1;
  }
  // A number or literal runs to the next delimiter.
  let j = i;
  while (j < buf.length && !isWs(buf[j]) && buf[j] !== COMMA && buf[j] !== CLOSE_OBJ && buf[j] !== CLOSE_ARR) j++;
  return j === i ? -1 : j;
}

/** Index of the first byte of the value ending at `i` (inclusive), or -1. */
function valueStartBack(buf: Buffer, i: number): number {
  const c = buf[i];
  if (c === QUOTE) return escapedAt(buf, i) ? -1 : stringStart(buf, i);
  if (c === CLOSE_OBJ || c === CLOSE_ARR) {
    let depth = 0;
    for (let j = i; j >= 0; j--) {
      const d = buf[j];
      if (d === QUOTE) {
        if (escapedAt(buf, j)) return -1;
        j = stringStart(buf, j);
        if (j === -1) return -1;
      } else if (d === CLOSE_OBJ || d === CLOSE_ARR) depth++;
      else if (d === OPEN_OBJ || d === OPEN_ARR) {
        if (--depth === 0) return j;
      }
    }
    return -1;
  }
  let j = i;
  while (j >= 0 && !isWs(buf[j]) && buf[j] !== COLON && buf[j] !== COMMA && buf[j] !== OPEN_OBJ && buf[j] !== OPEN_ARR) j--;
  return j === i ? -1 : j + 1;
}

/**
 * The value of the one top-level member named `key`, walking the whole top level from the start. Undefined when the
 * key is absent, when it occurs twice (in any spelling: `"mod\u0065l"` is `model` too), or when the bytes are not a
 * well-formed object.
 */
export function topLevelValue(buf: Buffer, key: string): Span | undefined {
  let i = skipWs(buf, 0);
  if (buf[i] !== OPEN_OBJ) return undefined;
  let found: Span | undefined;
  i = skipWs(buf, i + 1);
  if (buf[i] === CLOSE_OBJ) return undefined;
  for (;;) {
    if (buf[i] !== QUOTE) return undefined;
    const close = stringEnd(buf, i);
    if (close === -1) return undefined;
    const match = keyIs(buf, i, close, key);
    i = skipWs(buf, close + 1);
    if (buf[i] !== COLON) return undefined;
    const start = skipWs(buf, i + 1);
    const end = valueEnd(buf, start);
    if (end === -1) return undefined;
    if (match) {
      if (found) return undefined;
      found = { start, end };
    }
    i = skipWs(buf, end);
    if (buf[i] === CLOSE_OBJ) return skipWs(buf, i + 1) === buf.length ? found : undefined;
    if (buf[i] !== COMMA) return undefined;
    i = skipWs(buf, i + 1);
  }
}

/**
 * The value of the last top-level member named `key`, walking back from the end over at most `maxMembers` members
 * (JSON.parse keeps the last of duplicate keys too). Upstream answers put `usage` among their last few members.
 */
export function topLevelValueFromEnd(buf: Buffer, key: string, maxMembers = 8): Span | undefined {
  let j = skipWsBack(buf, buf.length - 1);
  if (j < 0 || buf[j] !== CLOSE_OBJ) return undefined;
  j--;
  for (let m = 0; m < maxMembers; m++) {
    j = skipWsBack(buf, j);
    if (j < 0) return undefined;
    const end = j + 1;
    const start = valueStartBack(buf, j);
    if (start <= 0) return undefined;
    j = skipWsBack(buf, start - 1);
    if (j < 0 || buf[j] !== COLON) return undefined;
    j = skipWsBack(buf, j - 1);
    if (j < 0 || buf[j] !== QUOTE || escapedAt(buf, j)) return undefined;
    const open = stringStart(buf, j);
    if (open === -1) return undefined;
    if (keyIs(buf, open, j, key)) return { start, end };
    j = skipWsBack(buf, open - 1);
    if (j < 0 || buf[j] !== COMMA) return undefined;
    j--;
  }
  return undefined;
}

/** `buf` with the string value at `span` replaced by `value` (JSON-encoded): the other bytes stay as they were. */
export function spliceString(buf: Buffer, span: Span, value: string): Buffer {
  const enc = JSON.stringify(value);
  const out = Buffer.allocUnsafe(buf.length - (span.end - span.start) + Buffer.byteLength(enc));
  buf.copy(out, 0, 0, span.start);
  buf.copy(out, span.start + out.write(enc, span.start, 'utf8'), span.end);
  return out;
}
