// The client's parsed JSON body, found again by its raw bytes, so spans can carry the GenAI request parameters
// without parsing the body twice. Filled only while a tracer exists; entries go with the request's Buffer.
import { observeJsonBodies } from '../http/json-body.ts';

const bodies = new WeakMap<Buffer, Record<string, unknown>>();
let observing = false;

export function rememberParsedBodies(): void {
  if (observing) return;
  observing = true;
  observeJsonBodies((raw, value) => bodies.set(raw, value));
}

export function parsedBodyOf(raw: unknown): Record<string, unknown> | undefined {
  return Buffer.isBuffer(raw) ? bodies.get(raw) : undefined;
}
