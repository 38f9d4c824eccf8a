// Fault modes for the fake upstream: each scripts the next answer(s) to a path the way a broken provider answers.
// Built on `nextResponse`, so any test can queue several in order (a 503 burst, then the fake's normal answer).
import type { FakeUpstream, ScriptedResponse } from './server.ts';

type Path = ScriptedResponse['path'];

/** `n` answers with `status` (a JSON error body unless `body` says otherwise), e.g. a 503 burst. */
export function failNext(up: FakeUpstream, n: number, status: number, opts: { path?: Path; headers?: Record<string, string>; body?: unknown } = {}): void {
  for (let i = 0; i < n; i++) {
    up.nextResponse({ path: opts.path, status, headers: opts.headers, body: opts.body ?? { error: { message: `fake upstream failure ${status}`, type: 'server_error', param: null, code: null } } });
  }
}

/**
 * `n` answers alternating failure and the fake's normal answer, starting with a failure: a target that fails half
 * its requests but never twice in a row (what only a failure-ratio detector catches).
 */
export function failEveryOther(up: FakeUpstream, n: number, status: number, opts: { path?: Path } = {}): void {
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) failNext(up, 1, status, opts);
    else up.nextResponse({ path: opts.path, pass: true });
  }
}

/** A 429 asking the client to come back after `seconds`. */
export function rateLimitOnce(up: FakeUpstream, seconds: number, path?: Path): void {
  failNext(up, 1, 429, { path, headers: { 'retry-after': String(seconds) }, body: { error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } } });
}

/** A 200 whose body is a proxy's HTML page, not the protocol's JSON. */
export function htmlSuccess(up: FakeUpstream, path?: Path): void {
  up.nextResponse({ path, status: 200, headers: { 'content-type': 'text/html' }, body: '<html><body>Service temporarily unavailable</body></html>' });
}

/** An error status with an empty body. */
export function emptyError(up: FakeUpstream, status: number, path?: Path): void {
  up.nextResponse({ path, status, headers: { 'content-type': 'application/json' }, body: '' });
}

/** A JSON answer of about `bytes` bytes, sent in 64 KiB chunks (valid JSON if it were read to the end). */
export function hugeJson(up: FakeUpstream, bytes: number, path?: Path): void {
  const piece = Buffer.alloc(64 * 1024, 0x61);
  const chunks: (string | Buffer)[] = ['{"id":"huge","object":"chat.completion","pad":"'];
  for (let sent = 0; sent < bytes; sent += piece.length) chunks.push(piece);
  chunks.push('","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}');
  up.nextResponse({ path, status: 200, headers: { 'content-type': 'application/json' }, chunks });
}

/** A stream of `frames` that ends cleanly without its terminal event. */
export function streamWithoutEnd(up: FakeUpstream, frames: string[], path?: Path): void {
  up.nextResponse({ path, status: 200, chunks: frames });
}

/** A stream that sends `frames` and then drops the connection. */
export function streamCut(up: FakeUpstream, frames: string[], path?: Path): void {
  up.nextResponse({ path, status: 200, chunks: frames, abort: true });
}
