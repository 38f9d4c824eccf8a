// Shared pieces of the fake upstream: token arithmetic, SSE framing, ids, a tiny PNG, schema filling.
// Everything here is cheap and deterministic; constants are computed once at module load.
import { deflateSync, crc32 } from 'node:zlib';

/** Fixed prompt-token cost of one input image, whatever the protocol. */
export const IMAGE_TOKENS = 85;

/** ceil(chars / 4), never below 1. The fake's only tokenizer. */
export function tokensOf(chars: number): number {
  return chars <= 0 ? 1 : Math.ceil(chars / 4);
}

/** Same as tokensOf but 0 for empty text (used for optional sub-parts like thinking). */
export function tokensOrZero(chars: number): number {
  return chars <= 0 ? 0 : Math.ceil(chars / 4);
}

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** First 40 characters of a text, as used in every echo reply. */
export function head40(text: string): string {
  return Array.from(text).slice(0, 40).join('');
}

/** Split a reply into several stream deltas: each piece is leading whitespace + one word. */
export function splitDeltas(text: string): string[] {
  if (text === '') return [];
  const parts = text.match(/\s*\S+|\s+$/g);
  if (!parts || parts.join('') !== text) return [text];
  return parts;
}

/** Split a JSON argument string into a few fragments (for tool-call streaming). */
export function splitFragments(text: string, pieces = 3): string[] {
  if (text.length <= 2) return [text];
  const size = Math.ceil(text.length / pieces);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Fill an object from a JSON schema's required properties: strings "x", numbers 0, booleans false. */
export function fillFromSchema(schema: unknown, depth = 0): Json {
  if (!isObj(schema) || depth > 6) return {};
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  const t = typeof type === 'string' ? type.toLowerCase() : schema.properties ? 'object' : 'string';
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0] as Json;
  switch (t) {
    case 'object': {
      const out: { [k: string]: Json } = {};
      const props = isObj(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required) ? schema.required : [];
      for (const name of required) {
        if (typeof name === 'string') out[name] = fillFromSchema(props[name], depth + 1);
      }
      return out;
    }
    case 'array':
      return [];
    case 'integer':
    case 'number':
      return 0;
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return 'x';
  }
}

// ---------------------------------------------------------------- ids and clocks

/** Lowercase alphanumeric id body derived from a sequence number, fixed width. */
export function idBody(prefix: string, seq: number, width = 24): string {
  const s = seq.toString(36);
  return prefix + 'fake' + '0'.repeat(Math.max(0, width - 4 - s.length)) + s;
}

/** Obfuscation padding like OpenAI's: a deterministic string whose length varies per chunk. */
const OBF_ALPHABET = 'aB3dE5fG7hJ9kLmN2pQr4StUv6WxYz8';
export function obfuscation(i: number): string {
  const len = 2 + ((i * 7) % 14);
  return OBF_ALPHABET.slice(i % 10, (i % 10) + len);
}

// ---------------------------------------------------------------- SSE framing

export function sseData(json: string, sep = '\n\n'): string {
  return 'data: ' + json + sep;
}

export function sseEvent(event: string, json: string): string {
  return 'event: ' + event + '\ndata: ' + json + '\n\n';
}

export const SSE_DONE = 'data: [DONE]\n\n';

/** Google-style compact JSON: `": "` after keys, `,` without a space (as Gemini SSE prints). */
export function googleJson(v: unknown): string {
  if (Array.isArray(v)) return '[' + v.map((x) => googleJson(x === undefined ? null : x)).join(',') + ']';
  if (isObj(v)) {
    const parts: string[] = [];
    for (const k of Object.keys(v)) {
      const x = v[k];
      if (x === undefined) continue;
      parts.push(JSON.stringify(k) + ': ' + googleJson(x));
    }
    return '{' + parts.join(',') + '}';
  }
  return JSON.stringify(v) ?? 'null';
}

// ---------------------------------------------------------------- a tiny valid PNG

function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td) >>> 0);
  return Buffer.concat([len, td, crc]);
}

function makePng(r: number, g: number, b: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0); // width
  ihdr.writeUInt32BE(1, 4); // height
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  ihdr[10] = 0;
  ihdr[11] = 0;
  ihdr[12] = 0;
  const raw = Buffer.from([0, r, g, b]); // filter byte + one pixel
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** 1x1 PNG (orange pixel): the final image of every image answer. */
export const TINY_PNG = makePng(0xff, 0x88, 0x00);
export const TINY_PNG_B64 = TINY_PNG.toString('base64');
/** 1x1 PNG (grey pixel): partial/preview images. */
export const PARTIAL_PNG_B64 = makePng(0x80, 0x80, 0x80).toString('base64');

// ---------------------------------------------------------------- scenarios

/** Scenario names the fake understands (metadata.fake, or a `[fake:<name>]` / `[fake:<name>:<ms>]` marker in the body). */
export type Scenario =
  | 'none'
  | 'error-400'
  | 'error-401'
  | 'error-403'
  | 'error-404'
  | 'error-429'
  | 'error-500'
  | 'error-503'
  | 'error-529'
  | 'slow-first-byte'
  | 'slow-stream'
  | 'cut-stream'
  | 'mid-stream-error'
  | 'no-usage'
  | 'stall'
  | 'length';

export const SCENARIOS: readonly Scenario[] = [
  'error-400',
  'error-401',
  'error-403',
  'error-404',
  'error-429',
  'error-500',
  'error-503',
  'error-529',
  'slow-first-byte',
  'slow-stream',
  'cut-stream',
  'mid-stream-error',
  'no-usage',
  'stall',
  'length',
];
const SCENARIO_SET: ReadonlySet<string> = new Set(SCENARIOS);

export interface ScenarioInfo {
  name: Scenario;
  /** metadata.delay_ms or the `:<ms>` suffix of a marker; meaning depends on the scenario. */
  delayMs: number | undefined;
}

const MARKER = Buffer.from('[fake:');

/** Find the scenario of a request. Cheap: one indexOf on the raw body, one property read. */
export function detectScenario(raw: Buffer, json: unknown): ScenarioInfo {
  if (isObj(json) && isObj(json.metadata)) {
    const m = json.metadata;
    if (typeof m.fake === 'string' && SCENARIO_SET.has(m.fake)) {
      const d = Number(m.delay_ms);
      return { name: m.fake as Scenario, delayMs: Number.isFinite(d) ? d : undefined };
    }
  }
  const at = raw.indexOf(MARKER);
  if (at >= 0) {
    const end = raw.indexOf(0x5d /* ] */, at);
    if (end > at) {
      const spec = raw.subarray(at + MARKER.length, end).toString('utf8');
      const [name, ms] = spec.split(':');
      if (name && SCENARIO_SET.has(name)) {
        const d = Number(ms);
        return { name: name as Scenario, delayMs: ms !== undefined && Number.isFinite(d) ? d : undefined };
      }
    }
  }
  return { name: 'none', delayMs: undefined };
}

export function errorStatus(s: Scenario): number | undefined {
  if (s.startsWith('error-')) return Number(s.slice(6));
  return undefined;
}

// ---------------------------------------------------------------- the plan a protocol handler returns

export type HeaderList = [string, string][];

/** What to send for one request. The server applies delays, cuts and stalls on top of it. */
export interface Plan {
  status: number;
  headers: HeaderList;
  /** Complete non-streamed body. */
  body?: string | Buffer;
  /** Complete SSE frames, in order. */
  events?: string[];
  /** For cut-stream / mid-stream-error: how many events go out before the cut. */
  cutAfter?: number;
  /** For mid-stream-error: the protocol's in-stream error frame. */
  errorFrame?: string;
}

export interface HandlerCtx {
  /** The request path (no query), e.g. /v1/chat/completions. */
  path: string;
  query: URLSearchParams;
  raw: Buffer;
  json: unknown;
  contentType: string;
  scenario: ScenarioInfo;
  /** Monotonic per-server sequence number of this request. */
  seq: number;
  /** Unix seconds. */
  now: number;
  /** Base URL of the fake, e.g. http://127.0.0.1:8081 */
  baseUrl: string;
  /** Per-server state (e.g. the Anthropic prompt cache). */
  state: FakeState;
}

export interface FakeState {
  /** Anthropic cache prefixes already written (model + prefix text). */
  anthropicCache: Set<string>;
}
