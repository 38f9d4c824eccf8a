// A batch of ledger rows as Postgres' binary COPY format, in usage_events' column order (the writer's COLUMNS). Postgres
// and PGlite load it with less work a row than COPY text: no line and field scanning, and timestamptz, bigint, numeric,
// boolean and integer values arrive ready-made instead of each through its text parser.
// Only what converts exactly is written here; anything else answers undefined and the batch goes as COPY text, whose
// parsers then accept or refuse it as before.
import { sameRoute } from './row.ts';
import type { LedgerRow } from './row.ts';

/** The batch holds text Postgres refuses (a NUL, a lone surrogate, also escaped in detail's JSON): make it storable first. */
export const NOT_STORABLE = Symbol('not storable');

const SIGNATURE = [0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00];
const FIELDS = 26;
// Postgres' timestamps count microseconds from 2000-01-01 UTC.
const PG_EPOCH_MS = 946_684_800_000;
const TWO_32 = 4_294_967_296;
// Milliseconds from PG_EPOCH_MS whose microseconds are still a safe integer (~285 years either way).
const SAFE_MS = Math.floor(Number.MAX_SAFE_INTEGER / 1000);

class Out {
  buf: Buffer;
  view: DataView;
  pos = 0;
  constructor(size: number) {
    this.buf = Buffer.allocUnsafeSlow(size);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
  }
  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
    this.view = new DataView(next.buffer, next.byteOffset, next.length);
  }
  i16(v: number): void {
    this.ensure(2);
    this.view.setInt16(this.pos, v);
    this.pos += 2;
  }
  i32(v: number): void {
    this.ensure(4);
    this.view.setInt32(this.pos, v);
    this.pos += 4;
  }
  /** A bigint field from a safe integer, as two 32-bit halves (no BigInt a value). */
  int8(v: number): void {
    this.ensure(12);
    const hi = Math.floor(v / TWO_32);
    this.view.setInt32(this.pos, 8);
    this.view.setInt32(this.pos + 4, hi);
    this.view.setUint32(this.pos + 8, v - hi * TWO_32);
    this.pos += 12;
  }
  /** A timestamptz field from epoch ms, truncated as Date truncates them. */
  timestamp(ms: number): void {
    const d = Math.trunc(ms) - PG_EPOCH_MS;
    if (d >= -SAFE_MS && d <= SAFE_MS) return this.int8(d * 1000);
    // Centuries away: microseconds beyond 2^53.
    this.ensure(12);
    this.view.setInt32(this.pos, 8);
    this.view.setBigInt64(this.pos + 4, BigInt(d) * 1000n);
    this.pos += 12;
  }
  bool(v: boolean): void {
    this.ensure(5);
    this.view.setInt32(this.pos, 1);
    this.buf[this.pos + 4] = v ? 1 : 0;
    this.pos += 5;
  }
  null(): void {
    this.i32(-1);
  }
  /** A text field, UTF-8 (the caller has checked it is well formed); `prefix` bytes before it (jsonb's version). */
  text(s: string, prefix?: number): void {
    this.ensure(5 + s.length * 3);
    const at = this.pos;
    this.pos += 4;
    if (prefix !== undefined) this.buf[this.pos++] = prefix;
    this.pos += this.buf.write(s, this.pos, 'utf8');
    this.view.setInt32(at, this.pos - at - 4);
  }
  /** Bytes already written at [start, end), again. */
  within(start: number, end: number): void {
    this.ensure(end - start);
    this.buf.copyWithin(this.pos, start, end);
    this.pos += end - start;
  }
  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }
}

/** Text Postgres stores as given: no NUL and no lone surrogate. */
const storableText = (s: unknown): s is string => typeof s === 'string' && !s.includes('\u0000') && s.isWellFormed();

const groups = new Int16Array(260);
const digit = (text: string, i: number): number => text.charCodeAt(i) - 48;

/**
 * A numeric field from a plain decimal (an optional minus, digits, an optional point and digits; up to 1,000
 * characters): base-10000 digit groups aligned on the decimal point, the weight of the first, and the scale as
 * written (what numeric_in keeps). false for anything else.
 */
function numeric(out: Out, text: string): boolean {
  const n = text.length;
  if (n === 0 || n > 1000) return false;
  const neg = text.charCodeAt(0) === 45;
  let i = neg ? 1 : 0;
  const intStart = i;
  while (i < n && digit(text, i) >>> 0 < 10) i++;
  const intEnd = i;
  if (intEnd === intStart) return false;
  let fracStart = n;
  if (i < n) {
    if (text.charCodeAt(i) !== 46) return false;
    fracStart = ++i;
    while (i < n && digit(text, i) >>> 0 < 10) i++;
    if (i !== n || fracStart === n) return false;
  }
  const fracLen = n - fracStart;
  // The integer part padded on the left, the fraction on the right, to whole groups of 4 digits.
  const intGroups = Math.ceil((intEnd - intStart) / 4);
  const total = intGroups + Math.ceil(fracLen / 4);
  for (let g = 0; g < total; g++) {
    let v = 0;
    const from = g < intGroups ? intEnd - (intGroups - g) * 4 : fracStart + (g - intGroups) * 4;
    for (let k = from; k < from + 4; k++) {
      const inside = g < intGroups ? k >= intStart : k < n;
      v = v * 10 + (inside ? digit(text, k) : 0);
    }
    groups[g] = v;
  }
  // Leading and trailing zero groups are not stored (Postgres strips them as well).
  let first = 0;
  while (first < total && groups[first] === 0) first++;
  let last = total;
  while (last > first && groups[last - 1] === 0) last--;
  const count = last - first;
  out.ensure(12 + 2 * count);
  out.i32(8 + 2 * count);
  out.i16(count);
  out.i16(count === 0 ? 0 : intGroups - 1 - first);
  out.i16(neg && count > 0 ? 0x4000 : 0);
  out.i16(fracLen);
  for (let g = first; g < last; g++) out.i16(groups[g]);
  return true;
}

const isInt = (v: unknown, min: number, max: number): v is number => Number.isInteger(v) && (v as number) >= min && (v as number) <= max;
const isBigint = (v: unknown): v is number => Number.isSafeInteger(v);

/**
 * The rows as binary COPY data; NOT_STORABLE when a text value must be made storable first; undefined when a value
 * does not convert exactly (the batch then goes as COPY text). `occurredAt` must be in years 0001-9999.
 */
export function copyBinary(rows: readonly LedgerRow[]): Buffer | typeof NOT_STORABLE | undefined {
  const out = new Out(64 + rows.length * 512);
  out.bytes(Uint8Array.from(SIGNATURE));
  out.i32(0); // flags
  out.i32(0); // header extension length
  // The columns from organization to stream: encoded once while they repeat (sameRoute), then copied from where they
  // were last written in this buffer (no buffer of their own: an allocation a route change cost ~2 µs a row).
  let prev: LedgerRow | undefined;
  let sameStart = 0;
  let sameEnd = 0;
  for (const r of rows) {
    const { requestId, detail: d, keyPrefix, status, latencyMs } = r;
    const attempts = r.attempts ?? 1;
    if (typeof requestId !== 'string') return undefined;
    if (!storableText(requestId)) return NOT_STORABLE;
    if (keyPrefix !== undefined) {
      if (typeof keyPrefix !== 'string') return undefined;
      if (!storableText(keyPrefix)) return NOT_STORABLE;
    }
    if (
      !isBigint(r.input) || !isBigint(r.output) || !isBigint(r.cacheRead) || !isBigint(r.cacheWrite) || !isBigint(r.reasoning) ||
      !isBigint(r.artifacts) || typeof r.estimated !== 'boolean' || !isInt(attempts, -32768, 32767) ||
      (status != null && !isInt(status, -32768, 32767)) || (latencyMs != null && !isInt(latencyMs, -2147483648, 2147483647))
    ) {
      return undefined;
    }
    let detail: string | undefined;
    if (d != null) {
      detail = JSON.stringify(d);
      if (typeof detail !== 'string') return undefined;
      // JSON.stringify escapes a NUL and a lone surrogate; jsonb refuses both.
      if (detail.includes('\\') && (detail.includes('\\u0000') || detail.includes('\\ud'))) return NOT_STORABLE;
    }
    out.i16(FIELDS);
    out.text(requestId);
    out.timestamp(r.occurredAt);
    if (sameRoute(r, prev)) out.within(sameStart, sameEnd);
    else {
      prev = r;
      const { organization, project, apiKeyId, clientModel, modelId, provider, upstreamModel, endpoint, stream } = r;
      if (
        typeof organization !== 'string' || typeof project !== 'string' || typeof apiKeyId !== 'string' || typeof clientModel !== 'string' ||
        typeof modelId !== 'string' || typeof provider !== 'string' || typeof upstreamModel !== 'string' || typeof endpoint !== 'string' ||
        typeof stream !== 'boolean'
      ) {
        return undefined;
      }
      if (
        !storableText(organization) || !storableText(project) || !storableText(apiKeyId) || !storableText(clientModel) ||
        !storableText(modelId) || !storableText(provider) || !storableText(upstreamModel) || !storableText(endpoint)
      ) {
        return NOT_STORABLE;
      }
      sameStart = out.pos;
      out.text(organization);
      out.text(project);
      out.text(apiKeyId);
      out.text(clientModel);
      out.text(modelId);
      out.text(provider);
      out.text(upstreamModel);
      out.text(endpoint);
      out.bool(stream);
      sameEnd = out.pos;
    }
    out.int8(r.input);
    out.int8(r.output);
    out.int8(r.cacheRead);
    out.int8(r.cacheWrite);
    out.int8(r.reasoning);
    out.int8(r.artifacts);
    out.int8(r.explicitCache ? r.cacheRead : 0);
    out.bool(r.estimated);
    const cost = out.pos;
    if (!numeric(out, r.costPoints)) return undefined;
    // Usually the same text (no discount): the same bytes.
    if (r.originalCost === r.costPoints) out.within(cost, out.pos);
    else if (!numeric(out, r.originalCost)) return undefined;
    if (detail === undefined) out.null();
    else out.text(detail, 1);
    out.i32(2);
    out.i16(attempts);
    if (status == null) out.null();
    else {
      out.i32(2);
      out.i16(status);
    }
    if (latencyMs == null) out.null();
    else {
      out.i32(4);
      out.i32(latencyMs);
    }
    if (keyPrefix === undefined) out.null();
    else out.text(keyPrefix);
  }
  out.i16(-1);
  // A view: Postgres' socket takes it as it is; PGlite's store sends exactly these bytes to its worker.
  return out.buf.subarray(0, out.pos);
}
