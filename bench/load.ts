// Load against one target: autocannon at saturation (closed loop), an open-loop pacer at a fixed rate,
// and SSE stream clients. Latencies are kept at microsecond resolution (autocannon's own histogram is whole ms).
import autocannon from 'autocannon';
import { Pool } from 'undici';
import type { Dispatcher } from 'undici';
import { backendCpuSpent } from './databases.ts';
import type { BackendCpu } from './databases.ts';
import { cpuSecondsFine, ProcWindow } from './proc.ts';
import { Samples } from './stats.ts';
import type { LatencySummary } from './stats.ts';

/** Something that serves OpenAI chat: the upstream itself, a proxy, or a gateway. */
export interface Target {
  name: string;
  origin: string;
  chatPath: string;
  headers: Record<string, string>;
  /** The server process whose CPU and memory are measured. */
  pid: number;
  /** Anthropic messages path, when the target serves it. */
  messagesPath?: string;
  messagesHeaders?: Record<string, string>;
  /** Postgres targets: the database backends' CPU (see bench/databases.ts), counted with the target's own. */
  backendCpu?: () => Promise<BackendCpu>;
}

export interface RunResult {
  target: string;
  ok: number;
  failed: number;
  seconds: number;
  rps: number;
  latency: LatencySummary;
  /** CPU seconds of the target process per successful request. */
  cpuPerRequest: number;
  /** Postgres targets: CPU seconds per request of the database backends serving the target, same interval. */
  dbCpuPerRequest?: number;
  /** Target process peak RSS during the run, bytes. */
  peakRss: number;
  /** CPU seconds per request of the upstream process, to show it is not the bottleneck. */
  upstreamCpuPerRequest?: number;
  /** For paced runs: worst lateness of a send against its schedule, ms. */
  maxLagMs?: number;
}

const MODEL = 'gpt-4o-mini';

/** An OpenAI chat body. `words` one-letter words make `words + 1` content deltas; `paceMs` spaces the upstream's SSE events. */
export function chatBody(opts: { stream?: boolean; words?: number; paceMs?: number } = {}): string {
  const words = opts.words ?? 4;
  const text = Array.from({ length: words }, (_, i) => String.fromCharCode(97 + (i % 26))).join(' ');
  const messages: { role: string; content: string }[] = [];
  // The fake upstream reads a scenario marker anywhere in the body; a system message keeps it out of the echoed text.
  if (opts.paceMs) messages.push({ role: 'system', content: `[fake:slow-stream:${opts.paceMs}]` });
  messages.push({ role: 'user', content: text });
  const body: Record<string, unknown> = { model: MODEL, messages };
  if (opts.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return JSON.stringify(body);
}

/** Anthropic messages body (streamed). */
export function messagesBody(opts: { paceMs?: number; words?: number } = {}): string {
  const words = opts.words ?? 4;
  const text = Array.from({ length: words }, (_, i) => String.fromCharCode(97 + (i % 26))).join(' ');
  return JSON.stringify({
    model: 'claude-bench',
    max_tokens: 256,
    stream: true,
    ...(opts.paceMs ? { system: `[fake:slow-stream:${opts.paceMs}]` } : {}),
    messages: [{ role: 'user', content: text }],
  });
}

/** SSE events expected for a chat stream of `words` words: role, words + 1 deltas, finish, usage, [DONE]. */
export function chatStreamEvents(words: number): number {
  return words + 5;
}

interface Measured {
  cpuPerRequest: number;
  dbCpuPerRequest?: number;
  peakRss: number;
  upstreamCpuPerRequest?: number;
}

/** Idle: under 2 % of one core over a probe (the target's process tree, and its database backends on Postgres). */
const IDLE_CPU_SECONDS = 0.004;
const IDLE_PROBE_MS = 200;
const SETTLE_LIMIT_MS = 30_000;

/**
 * Waits until the target is idle, at most 30 s. A gateway's ledger may still be writing a phase's rows after the
 * last answer (the embedded store's writer runs at low priority and falls behind at saturation): waiting before a
 * window keeps that backlog out of the next phase (its CPU and its latency tail), and waiting before a window ends
 * counts it in the phase whose requests made it.
 */
export async function settle(t: Target): Promise<void> {
  const deadline = performance.now() + SETTLE_LIMIT_MS;
  while (performance.now() < deadline) {
    const c0 = cpuSecondsFine(t.pid);
    const d0 = await t.backendCpu?.();
    await new Promise((r) => setTimeout(r, IDLE_PROBE_MS));
    const d1 = await t.backendCpu?.();
    const spent = cpuSecondsFine(t.pid) - c0 + (d0 && d1 ? backendCpuSpent(d0, d1) : 0);
    if (spent < IDLE_CPU_SECONDS) return;
  }
}

async function measured<T extends { ok: number }>(t: Target, upstreamPid: number | undefined, fn: () => Promise<T>): Promise<T & Measured> {
  await settle(t);
  const db0 = await t.backendCpu?.();
  const w = new ProcWindow(t.pid);
  const uw = upstreamPid !== undefined && upstreamPid !== t.pid ? new ProcWindow(upstreamPid) : undefined;
  const r = await fn();
  const um = uw?.end();
  // The rows this phase's requests left to the ledger are this phase's cost (~0.2 s of idle probe, a few ms, with them).
  await settle(t);
  const m = w.end();
  const db1 = await t.backendCpu?.();
  const n = Math.max(1, r.ok);
  return { ...r, cpuPerRequest: m.cpuSeconds / n, dbCpuPerRequest: db0 && db1 ? backendCpuSpent(db0, db1) / n : undefined, peakRss: m.peakRss, upstreamCpuPerRequest: um ? um.cpuSeconds / n : undefined };
}

/** Closed loop at saturation: `connections` clients sending back to back for `seconds`. */
export async function saturate(t: Target, body: string, opts: { connections: number; seconds: number; upstreamPid?: number; path?: string; headers?: Record<string, string> }): Promise<RunResult> {
  const r = await measured(t, opts.upstreamPid, async () => {
    const samples = new Samples();
    let ok = 0;
    let failed = 0;
    const t0 = performance.now();
    let instance: autocannon.Instance | undefined;
    const done = new Promise<autocannon.Result>((resolve, reject) => {
      instance = autocannon(
        {
          url: t.origin + (opts.path ?? t.chatPath),
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(opts.headers ?? t.headers) },
          body,
          connections: opts.connections,
          pipelining: 1,
          duration: opts.seconds,
          timeout: 30,
        },
        (err, result) => (err ? reject(err) : resolve(result)),
      );
    });
    instance!.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status < 300) {
        ok++;
        samples.add(ms);
      } else failed++;
    });
    instance!.on('reqError', () => failed++);
    const res = await done;
    failed += res.timeouts;
    const seconds = (performance.now() - t0) / 1000;
    return { ok, failed, seconds, latency: samples.summary() };
  });
  return { target: t.name, ok: r.ok, failed: r.failed, seconds: r.seconds, rps: r.ok / r.seconds, latency: r.latency, cpuPerRequest: r.cpuPerRequest, dbCpuPerRequest: r.dbCpuPerRequest, peakRss: r.peakRss, upstreamCpuPerRequest: r.upstreamCpuPerRequest };
}

/** Open loop at a fixed rate: requests leave on a schedule whatever the answers do; latency from send to last byte. */
export async function paced(t: Target, body: string, opts: { rate: number; seconds: number; upstreamPid?: number }): Promise<RunResult> {
  const pool = new Pool(t.origin, { connections: 512, pipelining: 1, keepAliveTimeout: 30_000 });
  const headers = { 'content-type': 'application/json', ...t.headers };
  try {
    const r = await measured(t, opts.upstreamPid, async () => {
      const samples = new Samples();
      const total = Math.round(opts.rate * opts.seconds);
      let ok = 0;
      let failed = 0;
      let sent = 0;
      let maxLag = 0;
      const inflight = new Set<Promise<void>>();
      const t0 = performance.now();
      const fire = (scheduled: number) => {
        const start = performance.now();
        maxLag = Math.max(maxLag, start - scheduled);
        const p = pool
          .request({ path: t.chatPath, method: 'POST', headers, body })
          .then(async (res) => {
            await res.body.arrayBuffer();
            if (res.statusCode === 200) {
              ok++;
              samples.add(performance.now() - start);
            } else failed++;
          })
          .catch(() => {
            failed++;
          })
          .finally(() => inflight.delete(p));
        inflight.add(p);
      };
      await new Promise<void>((resolve) => {
        const tick = () => {
          const due = Math.min(total, Math.floor(((performance.now() - t0) * opts.rate) / 1000) + 1);
          while (sent < due) fire(t0 + (sent++ * 1000) / opts.rate);
          if (sent >= total) resolve();
          else setTimeout(tick, 1);
        };
        tick();
      });
      await Promise.all(inflight);
      return { ok, failed, seconds: (performance.now() - t0) / 1000, latency: samples.summary(), maxLag };
    });
    return { target: t.name, ok: r.ok, failed: r.failed, seconds: r.seconds, rps: r.ok / r.seconds, latency: r.latency, cpuPerRequest: r.cpuPerRequest, dbCpuPerRequest: r.dbCpuPerRequest, peakRss: r.peakRss, upstreamCpuPerRequest: r.upstreamCpuPerRequest, maxLagMs: r.maxLag };
  } finally {
    await pool.close();
  }
}

export interface StreamOutcome {
  ok: boolean;
  /** Request sent to first body byte, ms. */
  ttfb: number;
  total: number;
  events: number;
  error?: string;
}

/** One SSE request read to its end: counts `\n\n`-terminated events and checks the stream finished. */
export async function streamOnce(d: Dispatcher, path: string, headers: Record<string, string>, body: string, expectEvents?: number, onFirstByte?: () => void): Promise<StreamOutcome> {
  const start = performance.now();
  let ttfb = NaN;
  let events = 0;
  let prevNl = false;
  let tail = '';
  try {
    const res = await d.request({ path, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      if (Number.isNaN(ttfb)) {
        ttfb = performance.now() - start;
        onFirstByte?.();
      }
      for (let i = 0; i < chunk.length; i++) {
        const nl = chunk[i] === 10;
        if (nl && prevNl) events++;
        prevNl = nl;
      }
      tail = (tail + chunk.subarray(Math.max(0, chunk.length - 64)).toString('latin1')).slice(-64);
    }
    const total = performance.now() - start;
    if (res.statusCode !== 200) return { ok: false, ttfb, total, events, error: `status ${res.statusCode}` };
    const finished = tail.includes('[DONE]') || tail.includes('message_stop');
    const ok = finished && (expectEvents === undefined || events === expectEvents);
    return { ok, ttfb, total, events, error: ok ? undefined : `finished=${finished} events=${events} expected=${expectEvents}` };
  } catch (err) {
    return { ok: false, ttfb, total: performance.now() - start, events, error: (err as Error).message };
  }
}

export interface TtfbResult {
  target: string;
  ok: number;
  failed: number;
  ttfb: LatencySummary;
  total: LatencySummary;
}

/** Sequential streams, one at a time: time to first byte without queueing. */
export async function ttfbRun(t: Target, body: string, opts: { count: number; expectEvents?: number; path?: string; headers?: Record<string, string> }): Promise<TtfbResult> {
  const pool = new Pool(t.origin, { connections: 1, pipelining: 1 });
  const ttfb = new Samples();
  const total = new Samples();
  let ok = 0;
  let failed = 0;
  try {
    for (let i = 0; i < opts.count; i++) {
      const r = await streamOnce(pool, opts.path ?? t.chatPath, opts.headers ?? t.headers, body, opts.expectEvents);
      if (r.ok) {
        ok++;
        ttfb.add(r.ttfb);
        total.add(r.total);
      } else failed++;
    }
  } finally {
    await pool.close();
  }
  return { target: t.name, ok, failed, ttfb: ttfb.summary(), total: total.summary() };
}

export interface StreamLoadResult {
  target: string;
  ok: number;
  failed: number;
  events: number;
  seconds: number;
  cpuPerStream: number;
  cpuPerEvent: number;
  peakRss: number;
  firstError?: string;
}

/** Closed loop of `concurrency` streams for `seconds`: CPU per stream and per SSE event. */
export async function streamLoad(t: Target, body: string, opts: { concurrency: number; seconds: number; expectEvents: number; path?: string; headers?: Record<string, string> }): Promise<StreamLoadResult> {
  const pool = new Pool(t.origin, { connections: opts.concurrency, pipelining: 1 });
  try {
    await settle(t);
    const w = new ProcWindow(t.pid);
    let ok = 0;
    let failed = 0;
    let events = 0;
    let firstError: string | undefined;
    const t0 = performance.now();
    const deadline = t0 + opts.seconds * 1000;
    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        while (performance.now() < deadline) {
          const r = await streamOnce(pool, opts.path ?? t.chatPath, opts.headers ?? t.headers, body, opts.expectEvents);
          if (r.ok) {
            ok++;
            events += r.events;
          } else {
            failed++;
            firstError ??= r.error;
          }
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    await settle(t);
    const m = w.end();
    return { target: t.name, ok, failed, events, seconds, cpuPerStream: m.cpuSeconds / Math.max(1, ok), cpuPerEvent: m.cpuSeconds / Math.max(1, events), peakRss: m.peakRss, firstError };
  } finally {
    await pool.close();
  }
}

export interface ConcurrentStreamsResult {
  target: string;
  requested: number;
  ok: number;
  failed: number;
  /** Most streams open at once (first byte seen, end not yet), as the client saw them. */
  maxOpen: number;
  peakRss: number;
  /** RSS before the streams started, bytes. */
  baseRss: number;
  maxFds: number;
  seconds: number;
  firstError?: string;
}

/** `count` slow streams opened over `rampMs` and held open together; none may be dropped. */
export async function concurrentStreams(t: Target, body: string, opts: { count: number; rampMs: number; expectEvents: number; baseRss: number }): Promise<ConcurrentStreamsResult> {
  const pool = new Pool(t.origin, { connections: opts.count, pipelining: 1, headersTimeout: 120_000, bodyTimeout: 120_000, connect: { timeout: 60_000 } });
  try {
    const w = new ProcWindow(t.pid);
    let open = 0;
    let maxOpen = 0;
    let ok = 0;
    let failed = 0;
    let firstError: string | undefined;
    const t0 = performance.now();
    const all: Promise<void>[] = [];
    for (let i = 0; i < opts.count; i++) {
      const at = (i * opts.rampMs) / opts.count;
      const wait = at - (performance.now() - t0);
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      let opened = false;
      all.push(
        streamOnce(pool, t.chatPath, t.headers, body, opts.expectEvents, () => {
          opened = true;
          open++;
          if (open > maxOpen) maxOpen = open;
        }).then((r) => {
          if (opened) open--;
          if (r.ok) ok++;
          else {
            failed++;
            firstError ??= r.error;
          }
        }),
      );
    }
    await Promise.all(all);
    const m = w.end();
    return { target: t.name, requested: opts.count, ok, failed, maxOpen, peakRss: m.peakRss, baseRss: opts.baseRss, maxFds: m.maxFds, seconds: (performance.now() - t0) / 1000, firstError };
  } finally {
    await pool.close();
  }
}

/**
 * Exactly `n` chat requests, `concurrency` at a time, each answer read whole; how many were not 200. A caller that
 * runs many short segments passes its own `pool` (kept open): no connection setup inside a measured segment.
 */
export async function closedLoop(t: Target, body: string, n: number, concurrency: number, own?: Pool): Promise<number> {
  const pool = own ?? new Pool(t.origin, { connections: concurrency, pipelining: 1 });
  const headers = { 'content-type': 'application/json', ...t.headers };
  let sent = 0;
  let failed = 0;
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (sent < n) {
          sent++;
          const res = await pool.request({ path: t.chatPath, method: 'POST', headers, body });
          await res.body.dump();
          if (res.statusCode !== 200) failed++;
        }
      }),
    );
  } finally {
    if (own === undefined) await pool.close();
  }
  return failed;
}
