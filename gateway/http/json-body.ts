// JSON request bodies: parsed once, raw bytes kept, and a body naming `model` or `stream` twice refused (docs/contract.md, pass-through).
import { GatewayError } from '../errors.ts';

export interface JsonBody {
  raw: Buffer;
  value: Record<string, unknown>;
}

let observer: ((raw: Buffer, value: Record<string, unknown>) => void) | undefined;

/** Telemetry (tracing on) reads request parameters from the parsed body instead of parsing it again. */
export function observeJsonBodies(fn: (raw: Buffer, value: Record<string, unknown>) => void): void {
  observer = fn;
}

export function parseJsonObject(raw: Buffer): JsonBody {
  let value: unknown;
  const text = raw.toString('utf8');
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new GatewayError('invalid_request', `We could not parse the JSON body of your request: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new GatewayError('invalid_request', 'The request body must be a JSON object.');
  // Keys that route or bill must be unambiguous: the upstream's parser may take the other copy. Cheap pre-check:
  // the precise scan runs only when the key appears as a key more than once anywhere.
  for (const key of ROUTING_KEYS) {
    if (countKeys(text, key) > 1 && topLevelKeyCount(text, key) > 1) {
      throw new GatewayError('invalid_request', `The request body names "${key}" more than once.`, { param: key });
    }
  }
  observer?.(raw, value as Record<string, unknown>);
  return { raw, value: value as Record<string, unknown> };
}

const ROUTING_KEYS = ['model', 'stream'] as const;

/** Occurrences of `"key"` followed by a colon, anywhere in the text, counted up to 2. */
function countKeys(text: string, key: string): number {
  const quoted = `"${key}"`;
  let n = 0;
  for (let i = text.indexOf(quoted); i !== -1 && n < 2; i = text.indexOf(quoted, i + quoted.length)) {
    let j = i + quoted.length;
    while (j < text.length && (text[j] === ' ' || text[j] === '\n' || text[j] === '\r' || text[j] === '\t')) j++;
    if (text[j] === ':') n++;
  }
  return n;
}

/** Counts how often `key` occurs as a key of the top-level object, honouring strings, escapes and nesting. */
export function topLevelKeyCount(text: string, key: string): number {
  let depth = 0;
  let count = 0;
  let i = 0;
  let expectKey = false;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      const start = i + 1;
      i++;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) {
        const name = JSON.parse(text.slice(start - 1, i + 1)) as string;
        if (name === key) count++;
        expectKey = false;
      }
      i++;
      continue;
    }
    if (c === '{') {
      depth++;
      if (depth === 1) expectKey = true;
    } else if (c === '}') depth--;
    else if (c === '[') depth++;
    else if (c === ']') depth--;
    else if (c === ',' && depth === 1) expectKey = true;
    i++;
  }
  return count;
}
