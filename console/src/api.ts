// The admin API client. The admin token lives only in this module's memory: never in the URL, storage or a cookie,
// so a reload signs out and no other site's request can carry it (the browser attaches no credential by itself).
import type { ApiErrorBody, Page, Session } from './types.ts';

let token: string | undefined;

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

let onUnauthorized: (() => void) | undefined;

export function signOut(): void {
  token = undefined;
}

/** Called when the kept token stops being accepted (removed from the gateway's tokens): the page signs out. */
export function whenUnauthorized(fn: () => void): void {
  onUnauthorized = fn;
}

export function signedIn(): boolean {
  return token !== undefined;
}

type Query = Record<string, string | number | undefined>;

function url(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

// Every wait bounded: an admin call that hangs this long is reported, not waited on forever.
const TIMEOUT_MS = 20_000;

async function call<T>(method: string, path: string, opts: { query?: Query; body?: unknown; bearer?: string } = {}): Promise<T> {
  const bearer = opts.bearer ?? token;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url(path, opts.query), {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: 'omit',
      cache: 'no-store',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err) {
    throw new ApiError(0, 'network', `The gateway did not answer: ${(err as Error).message}`);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const e = (json as ApiErrorBody | undefined)?.error;
    if (res.status === 401 && opts.bearer === undefined && token !== undefined) {
      token = undefined;
      onUnauthorized?.();
    }
    throw new ApiError(res.status, e?.code ?? 'http_error', e?.message ?? `HTTP ${res.status}`);
  }
  return json as T;
}

/** Checks a token and, when it is good, keeps it for every later call. */
export async function signIn(candidate: string): Promise<Session> {
  const session = await call<Session>('GET', '/admin/v1/session', { bearer: candidate });
  token = candidate;
  return session;
}

export const get = <T>(path: string, query?: Query): Promise<T> => call<T>('GET', path, { query });
export const list = <T>(path: string, query?: Query): Promise<Page<T>> => call<Page<T>>('GET', path, { query });
// A POST without a body (revoke) sends none: the admin API refuses a body where the call takes none.
export const post = <T>(path: string, body?: unknown): Promise<T> => call<T>('POST', path, { body });
export const patch = <T>(path: string, body: unknown): Promise<T> => call<T>('PATCH', path, { body });
