// JSON request bodies: parsed once, raw bytes kept, and a body naming `model` twice refused (docs/contract.md, pass-through).
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
  // Cheap pre-check: the precise scan runs only when "model" appears as a key more than once anywhere.
  if (countModelKeys(text) > 1 && topLevelKeyCount(text, 'model') > 1) {
    throw new GatewayError('invalid_request', 'The request body names "model" more than once.', { param: 'model' });
  }
  observer?.(raw, value as Record<string, unknown>);
  return { raw, value: value as Record<string, unknown> };
}

function countModelKeys(text: string): number {
  let n = 0;
  for (let i = text.indexOf('"model"'); i !== -1 && n < 2; i = text.indexOf('"model"', i + 7)) {
    let j = i + 7;
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
