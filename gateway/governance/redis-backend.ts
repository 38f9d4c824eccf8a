// Counters shared by every pod in Redis/Valkey (REDIS_URL). Everything a pod asks in one event-loop turn goes in one
// script call (BATCH): the admissions of that turn, which are on the requests' path (one round trip, shared), and the
// settlements queued since the last call, which ride along (or go on their own after `settleDelayMs` when no
// admission comes). So under load a request costs a fraction of one call, and never more than one round trip.
// While Redis cannot be reached the pod keeps serving from its local view (memory backend): rates fail open on a
// local limiter or fail closed, as configured; budgets stay enforced from the spend this pod last saw plus what it
// spent since, and that spend is added to Redis when it comes back.
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { AdmitInput, CounterBackend, SettleInput, Verdict } from './backend.ts';
import { MemoryBackend } from './memory-backend.ts';
import type { SpendCell } from './memory-backend.ts';
import { spendTtl } from './periods.ts';
import { PodShare } from './pod-share.ts';
import { ADD_SPEND, BATCH, PODS, RAISE } from './redis-scripts.ts';
import type { Rule } from './rules.ts';
import { ReplyCursor } from './redis-reply.ts';
import { split } from './spend-units.ts';

export type RatesWhenDown = 'local' | 'refuse';

export interface RedisBackendOptions {
  url: string;
  /** Every key starts with it (default "tollgate:"); tests use their own. */
  prefix?: string;
  /** What rate and concurrency limits do while Redis is unreachable (default local: a per-pod limiter). */
  ratesWhenDown?: RatesWhenDown;
  /** Longest wait for one Redis answer before the request is served in degraded mode. */
  commandTimeoutMs?: number;
  log?: Logger;
  /** How long a settlement may wait for an admission to ride along with (default 10 ms). */
  settleDelayMs?: number;
  /** Called per script call sent with its admissions (metrics: calls per request). */
  onBatch?: (admissions: number) => void;
  /** Called on every change of degraded state (metrics). */
  onDegraded?: (degraded: boolean) => void;
}

/** The script commands with lists as arguments and answers as bytes (ioredis' *Buffer variants). */
interface RawScripts {
  evalshaBuffer(sha: string, keys: string, ...args: string[][]): Promise<unknown>;
  evalBuffer(text: string, keys: string, ...args: string[][]): Promise<unknown>;
}

interface Script {
  text: string;
  sha: string;
}

function script(text: string): Script {
  return { text, sha: createHash('sha1').update(text).digest('hex') };
}

const S_BATCH = script(BATCH);
const S_RAISE = script(RAISE);
const S_ADD = script(ADD_SPEND);
const S_PODS = script(PODS);
// A pod says it is alive this often; one silent for PODS_TTL_MS no longer counts in the others' shares.
const PODS_EVERY_MS = 5000;
const PODS_TTL_MS = 15_000;

/** A rules list's Redis names and spec strings, built once per rules list and period (see `prebuilt`). */
interface Prebuilt {
  keys: string[];
  /** The rules' kinds and numbers (redis-scripts.ts): the tail of the batch's G operation. */
  specs: string;
  /** Whether a settlement touches anything (tpm, concurrency, budget): rpm-only lists settle nothing. */
  settles: boolean;
  /** Parallel to the rules: a budget's counter in the local view (kept following Redis), undefined for others. */
  spend: (SpendCell | undefined)[];
}

type Op =
  | { kind: 'A'; a: AdmitInput; p: Prebuilt; resolve: (v: Verdict) => void }
  | { kind: 'S'; s: SettleInput }
  | { kind: 'P'; rules: readonly Rule[]; spendKeys: readonly (string | undefined)[]; now: number; resolve: (v: Verdict) => void };

/**
 * One script call being gathered. A rules list's keys and specs go in once per call (its G operation), however many
 * of its requests the call carries; each admission or settlement then adds one short argument naming it.
 */
class Batch {
  readonly keys: string[] = [];
  readonly argv: string[] = [];
  readonly ops: Op[] = [];
  /** Each rules list in this call and its number (1, 2, ..) in the script. */
  readonly lists = new Map<Prebuilt, number>();
  admissions = 0;

  /** The number of a rules list in this call, sending its keys and specs with its first use. */
  list(p: Prebuilt): number {
    let g = this.lists.get(p);
    if (g === undefined) {
      g = this.lists.size + 1;
      this.lists.set(p, g);
      this.argv.push(`G ${this.keys.length} ${p.specs}`);
      for (let i = 0; i < p.keys.length; i++) this.keys.push(p.keys[i]);
    }
    return g;
  }
}

export class RedisBackend implements CounterBackend {
  readonly kind = 'redis';
  readonly client: Redis;
  readonly local = new MemoryBackend();
  private readonly prefix: string;
  private readonly ratesWhenDown: RatesWhenDown;
  private readonly log: Logger | undefined;
  private readonly onDegraded: ((d: boolean) => void) | undefined;
  private readonly onBatch: ((admissions: number) => void) | undefined;
  /** Admissions served from the local view, with the shared rules they were counted on (settled on the same). */
  private readonly localLeases = new Map<string, readonly Rule[]>();
  /** This pod's share of every limit while degraded (how many pods were alive, what was left). */
  readonly share = new PodShare();
  private readonly podId = randomUUID();
  private readonly podsTimer: NodeJS.Timeout;
  /** Spend accrued while degraded, per counter (with its ttl), added to Redis on recovery. */
  private readonly pending = new Map<string, { units: bigint; ttl: number }>();
  /** Settlements whose call failed: Redis may or may not have run them, so they are sent again (they count once). */
  private replays: SettleInput[] = [];
  private retry: NodeJS.Timeout | undefined;
  degraded = false;
  private readonly settleDelayMs: number;
  private readonly built = new WeakMap<readonly (string | undefined)[], Prebuilt>();
  private open: Batch | undefined;
  private immediate = false;
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private idle: (() => void) | undefined;

  constructor(opts: RedisBackendOptions) {
    this.prefix = opts.prefix ?? 'tollgate:';
    this.settleDelayMs = opts.settleDelayMs ?? 10;
    this.ratesWhenDown = opts.ratesWhenDown ?? 'local';
    this.log = opts.log;
    this.onDegraded = opts.onDegraded;
    this.onBatch = opts.onBatch;
    this.client = new Redis(opts.url, {
      // The backend gathers a turn's work into one script call itself (Batch).
      enableAutoPipelining: false,
      // Never queue while disconnected: a request served now from the local view beats one waiting for Redis.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 250,
      lazyConnect: false,
      retryStrategy: (times) => Math.min(times * 100, 2000),
    });
    this.client.on('error', () => this.setDegraded(true, 'error'));
    this.client.on('close', () => this.setDegraded(true, 'connection closed'));
    this.client.on('ready', () => {
      this.setDegraded(false, 'ready');
      void this.flushPending();
      void this.countPods();
    });
    this.podsTimer = setInterval(() => void this.countPods(), PODS_EVERY_MS);
    this.podsTimer.unref();
  }

  /** Says this pod is alive and learns how many are: the share each takes of a limit if Redis goes away. */
  async countPods(): Promise<void> {
    if (this.client.status !== 'ready') return;
    try {
      this.share.setPods(Number(await this.run(S_PODS, [this.prefix + 'pods'], [this.podId, String(PODS_TTL_MS)])));
    } catch {
      // Unreachable: the count from the last answer stands, which is the one an outage needs.
    }
  }

  private setDegraded(d: boolean, why: string): void {
    if (this.degraded === d) return;
    this.degraded = d;
    if (!d) this.share.reset();
    if (d) this.log?.warn({ reason: why, ratesWhenDown: this.ratesWhenDown }, 'redis unreachable: limits degraded to the local view');
    else this.log?.info('redis reachable again: limits shared across pods');
    this.onDegraded?.(d);
  }

  /** Resolves once connected (or rejects after the timeout); start-up waits so the first requests are shared. */
  async ready(timeoutMs = 5000): Promise<void> {
    if (this.client.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => {
        this.client.off('ready', ok);
        reject(new Error('redis did not become ready'));
      }, timeoutMs);
      const ok = () => {
        clearTimeout(t);
        resolve();
      };
      this.client.once('ready', ok);
    });
  }

  /** Names and specs of a rules list; cached by the identity of its spend-key list (stable per rules list and period). */
  private prebuilt(rules: readonly Rule[], spendKeys: readonly (string | undefined)[]): Prebuilt {
    let p = this.built.get(spendKeys);
    if (p === undefined) this.built.set(spendKeys, (p = this.build(rules, spendKeys)));
    return p;
  }

  private build(rules: readonly Rule[], spendKeys: readonly (string | undefined)[]): Prebuilt {
    const keys: string[] = [];
    let kinds = '';
    const numbers: string[] = [];
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i];
      if (r.kind === 'budget') {
        keys.push(this.prefix + spendKeys[i]!);
        const [w, f] = split(r.units!);
        kinds += 'b';
        numbers.push(w, f, String(spendTtl(r)));
      } else {
        keys.push(this.prefix + r.id);
        kinds += r.kind === 'rpm' ? 'r' : r.kind === 'tpm' ? 't' : 'c';
        numbers.push(String(r.limit));
      }
    }
    return { keys, specs: `${kinds} ${numbers.join(' ')}`, settles: rules.some((r) => r.kind !== 'rpm'), spend: spendKeys.map((k) => (k === undefined ? undefined : this.local.spend.cell(k))) };
  }

  private run(s: Script, keys: string[], argv: string[]): Promise<unknown> {
    // ioredis flattens array arguments (documented): the lists go as they are, not spread into a call's arguments.
    const client = this.client as unknown as RawScripts;
    const n = String(keys.length);
    return client.evalshaBuffer(s.sha, n, keys, argv).catch((err: unknown) => {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      return client.evalBuffer(s.text, n, keys, argv);
    });
  }

  /** The batch of this turn; an admission or a read sends it at the end of the turn, a settlement a little later. */
  private batch(urgent: boolean): Batch {
    // A turn with very many requests is split, so one call (and one Lua run) stays bounded.
    if (this.open !== undefined && this.open.ops.length >= MAX_OPS) this.flushNow();
    const b = (this.open ??= new Batch());
    if (urgent && !this.immediate) {
      this.immediate = true;
      setImmediate(this.flushNow);
    } else if (!urgent && this.timer === undefined && !this.immediate) {
      this.timer = setTimeout(this.flushNow, this.settleDelayMs);
      this.timer.unref?.();
    }
    return b;
  }

  private readonly flushNow = (): void => {
    this.immediate = false;
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const b = this.open;
    if (b === undefined) return;
    this.open = undefined;
    this.onBatch?.(b.admissions);
    this.inFlight++;
    void this.send(b).finally(() => {
      if (--this.inFlight === 0 && this.idle) this.idle();
    });
  };

  private async send(b: Batch): Promise<void> {
    let res: Buffer[];
    try {
      if (this.client.status !== 'ready') throw new Error('not connected');
      // The answers as Redis sent them (bytes): ioredis would decode them as UTF-8.
      res = (await this.run(S_BATCH, b.keys, b.argv)) as Buffer[];
    } catch (err) {
      if (b.admissions > 0) this.log?.warn({ err: (err as Error).message }, 'redis admission failed; served from the local view');
      this.setDegraded(true, 'command failed');
      for (const op of b.ops) this.failed(op);
      return;
    }
    // A timed-out command marks the pod degraded without a reconnect; the next answer ends that.
    if (this.degraded) {
      this.setDegraded(false, 'answered');
      void this.flushPending();
    }
    // One answer per admission and read, in order; settlements answer nothing.
    let at = 0;
    for (let i = 0; i < b.ops.length; i++) {
      const op = b.ops[i];
      // Latin-1: the answers are ASCII, and it is the cheapest decoding (one string per answer, read in place).
      if (op.kind === 'A') op.resolve(verdict(op.a, op.p, CURSOR.reset(res[at++].toString('latin1'))));
      else if (op.kind === 'P') op.resolve(peekVerdict(op.rules, CURSOR.reset(res[at++].toString('latin1'))));
    }
  }

  /** What an operation does when its batch could not be sent. */
  private failed(op: Op): void {
    if (op.kind === 'A') op.resolve(this.admitLocally(op.a));
    else if (op.kind === 'S') {
      // Sent again on recovery: the connection may have dropped after Redis ran it, and its mark makes it count once.
      this.replays.push(op.s);
    } else void this.local.peek(op.rules, op.spendKeys, op.now).then(op.resolve);
  }

  admit(a: AdmitInput): Verdict | Promise<Verdict> {
    if (this.client.status !== 'ready') return this.admitLocally(a);
    const p = this.prebuilt(a.rules, a.spendKeys);
    const b = this.batch(true);
    const [rw, rf] = a.reserve === 0n ? ZERO : split(a.reserve);
    // Fields are space-separated: a lease is "pod:sequence" (governor.ts), never a space in it.
    b.argv.push(`A ${b.list(p)} ${a.now} ${a.lease} ${a.leaseMs} ${a.tokens} ${rw} ${rf}`);
    b.admissions++;
    return new Promise<Verdict>((resolve) => b.ops.push({ kind: 'A', a, p, resolve }));
  }

  private admitLocally(a: AdmitInput): Verdict {
    if (this.ratesWhenDown === 'refuse' && a.rules.some((r) => r.kind !== 'budget')) {
      const i = a.rules.findIndex((r) => r.kind !== 'budget');
      return { ok: false, refused: i, retryAfterMs: 1000, remaining: [], spent: [], resetMs: [] };
    }
    const rules = this.share.of(a.rules, a.spendKeys, (k) => this.local.spent(k));
    const v = this.local.admit(rules === a.rules ? a : { rules, spendKeys: a.spendKeys, now: a.now, lease: a.lease, leaseMs: a.leaseMs, tokens: a.tokens, reserve: a.reserve });
    if (v.ok) {
      this.localLeases.set(a.lease, rules);
      this.addPending(a.rules, a.spendKeys, a.reserve);
    }
    return v;
  }

  private addPending(rules: readonly Rule[], spendKeys: readonly (string | undefined)[], units: bigint): void {
    if (units === 0n) return;
    for (let i = 0; i < rules.length; i++) {
      if (rules[i].kind !== 'budget') continue;
      const p = this.pending.get(spendKeys[i]!);
      if (p) p.units += units;
      else this.pending.set(spendKeys[i]!, { units, ttl: spendTtl(rules[i]) });
    }
  }

  private async flushPending(): Promise<void> {
    if (this.retry !== undefined) {
      clearTimeout(this.retry);
      this.retry = undefined;
    }
    const entries = [...this.pending];
    this.pending.clear();
    for (let i = 0; i < entries.length; i++) {
      const [key, p] = entries[i];
      const [w, f] = split(p.units);
      try {
        await this.run(S_ADD, [this.prefix + key], [w, f, String(p.ttl)]);
      } catch (err) {
        // This one and every one after it stay pending, and are tried again shortly (or at the next reconnect).
        for (const [k, q] of entries.slice(i)) {
          const again = this.pending.get(k);
          if (again) again.units += q.units;
          else this.pending.set(k, q);
        }
        this.log?.warn({ err: (err as Error).message }, 'redis: spend from the degraded period not added yet');
        this.retry = setTimeout(() => void this.flushPending(), 1000);
        this.retry.unref?.();
        return;
      }
    }
    const replays = this.replays;
    this.replays = [];
    for (const s of replays) this.sendSettle(s, this.prebuilt(s.rules, s.spendKeys));
  }

  settle(s: SettleInput): void {
    const local = this.localLeases.get(s.lease);
    if (local !== undefined) {
      this.localLeases.delete(s.lease);
      this.local.settle(local === s.rules ? s : { rules: local, spendKeys: s.spendKeys, now: s.now, lease: s.lease, tokensDelta: s.tokensDelta, spendDelta: s.spendDelta });
      this.addPending(s.rules, s.spendKeys, s.spendDelta);
      return;
    }
    // The local view keeps the exact spend too (concurrency and tokens there belong to local admissions only).
    const p = this.prebuilt(s.rules, s.spendKeys);
    if (s.spendDelta !== 0n) for (let i = 0; i < p.spend.length; i++) if (p.spend[i] !== undefined) p.spend[i]!.v += s.spendDelta;
    if (!p.settles) return;
    if (this.client.status !== 'ready') {
      // Never sent: the spend is added on recovery (the slot expires with its lease).
      this.addPending(s.rules, s.spendKeys, s.spendDelta);
      return;
    }
    this.sendSettle(s, p);
  }

  private sendSettle(s: SettleInput, p: Prebuilt): void {
    const b = this.batch(false);
    const [dw, df] = s.spendDelta === 0n ? ZERO : split(s.spendDelta);
    b.argv.push(`S ${b.list(p)} ${s.now} ${s.lease} ${s.tokensDelta} ${dw} ${df}`);
    b.ops.push({ kind: 'S', s });
  }

  peek(rules: readonly Rule[], spendKeys: readonly (string | undefined)[], now: number): Promise<Verdict> {
    if (this.client.status !== 'ready') return this.local.peek(rules, spendKeys, now);
    // Not cached: a read is rare, and its spend-key list is built for it.
    const p = this.build(rules, spendKeys);
    const b = this.batch(true);
    b.argv.push(`P ${b.list(p)} ${now}`);
    return new Promise<Verdict>((resolve) => b.ops.push({ kind: 'P', rules, spendKeys, now, resolve }));
  }

  async raiseSpend(spendKey: string, units: bigint, ttlMs: number): Promise<void> {
    await this.local.raiseSpend(spendKey, units);
    if (this.degraded) this.share.rebase(spendKey, this.local.spent(spendKey));
    if (this.client.status !== 'ready') return;
    const [w, f] = split(units);
    await this.run(S_RAISE, [this.prefix + spendKey], [w, f, String(ttlMs)]);
  }

  /** Sends what is queued (settlements included) and waits for every call in flight, bounded by the command timeout. */
  async drain(): Promise<void> {
    this.flushNow();
    if (this.inFlight === 0) return;
    await new Promise<void>((resolve) => (this.idle = resolve));
    this.idle = undefined;
  }

  async close(): Promise<void> {
    if (this.retry !== undefined) clearTimeout(this.retry);
    clearInterval(this.podsTimer);
    await this.drain();
    // Gone at once from the others' count, rather than after PODS_TTL_MS.
    if (this.client.status === 'ready') await this.client.zrem(this.prefix + 'pods', this.podId).catch(() => undefined);
    this.client.removeAllListeners('close');
    this.client.disconnect();
  }
}

const ZERO: readonly [string, string] = ['0', '0'];
// Answers are read one at a time, synchronously: one cursor serves them all.
const CURSOR = new ReplyCursor();
const MAX_OPS = 256;

/**
 * An admission's verdict from its answer: the tightest rpm and tpm rule (what the rate-limit headers name) and every
 * budget's spend; the local view's budget counters follow what Redis answered.
 */
function verdict(a: AdmitInput, p: Prebuilt, res: ReplyCursor): Verdict {
  const n = a.rules.length;
  const v: Verdict = { ok: res.number() === 1, refused: -1, retryAfterMs: 0, remaining: new Array(n), spent: new Array(n), resetMs: new Array(n) };
  if (!v.ok) {
    v.refused = res.number();
    v.retryAfterMs = res.number();
    return v;
  }
  for (let j = 0; j < 2; j++) {
    const i = res.number();
    const left = res.number();
    const reset = res.number();
    if (i >= 0) {
      v.remaining[i] = left;
      v.resetMs[i] = reset;
    }
  }
  for (let i = 0; i < n; i++) {
    if (a.rules[i].kind !== 'budget') continue;
    v.spent[i] = res.spend() + a.reserve;
    // The local view follows Redis, so a later outage starts from what all pods had spent.
    p.spend[i]!.v = v.spent[i];
  }
  return v;
}

function peekVerdict(rules: readonly Rule[], res: ReplyCursor): Verdict {
  const v: Verdict = { ok: true, refused: -1, retryAfterMs: 0, remaining: [], spent: [], resetMs: [] };
  for (let i = 0; i < rules.length; i++) {
    if (rules[i].kind === 'budget') {
      v.spent[i] = res.spend();
      v.resetMs[i] = 0;
    } else {
      v.remaining[i] = res.number();
      v.resetMs[i] = res.number();
    }
  }
  return v;
}
