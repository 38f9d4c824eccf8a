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
  /**
   * How long a pod stays counted after its last heartbeat (default 15 s; it beats every third of that). A dead pod's
   * concurrency slots come back this long after its last beat, and the pod shares are counted over it.
   */
  podTtlMs?: number;
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
// A pod silent this long no longer counts in the others' shares, and its concurrency slots are freed.
const POD_TTL_MS = 15_000;

/** A rules list's Redis names and spec strings, built once per rules list and period (see `prebuilt`). */
interface Prebuilt {
  keys: string[];
  /** The rules' kinds and numbers (redis-scripts.ts): the tail of the batch's G operation. */
  specs: string;
  /** Whether a settlement touches anything (tpm, concurrency, budget): rpm-only lists settle nothing. */
  settles: boolean;
  /** This pod's slots held in Redis per concurrency rule of the list (shared by name with other lists); undefined if none. */
  slots: Held[] | undefined;
  /** Parallel to the rules: a budget's counter in the local view (kept following Redis), undefined for others. */
  spend: (SpendCell | undefined)[];
}

/** How many requests this pod holds a slot of one concurrency rule for in Redis (counted under its incarnation). */
interface Held {
  key: string;
  n: number;
}

type Op =
  | { kind: 'I' }
  | { kind: 'A'; a: AdmitInput; p: Prebuilt; resolve: (v: Verdict) => void }
  | { kind: 'S'; s: SettleInput }
  | { kind: 'T'; r: Replay }
  | { kind: 'P'; rules: readonly Rule[]; spendKeys: readonly (string | undefined)[]; now: number; resolve: (v: Verdict) => void };

/** A settlement whose call failed, with where Redis keeps that call's number: sent again, it counts once. */
interface Replay {
  s: SettleInput;
  done: string;
  seq: number;
}

/**
 * One script call being gathered. A rules list's keys and specs go in once per call (its G operation), however many
 * of its requests the call carries; each admission or settlement then adds one short argument naming it.
 */
class Batch {
  /** The pod incarnation its concurrency operations count under (fixed when the batch is opened). */
  readonly inc: number;
  /** Its number: Redis keeps the last one run per incarnation, so a failed call's settlements are sent again only if it never ran. */
  readonly seq: number;
  /** Whether its I operation is in (before the first operation on a list with a concurrency rule). */
  introduced = false;
  readonly keys: string[] = [];
  readonly argv: string[] = [];
  readonly ops: Op[] = [];
  /** Each rules list in this call and its number (1, 2, ..) in the script. */
  readonly lists = new Map<Prebuilt, number>();
  admissions = 0;

  constructor(inc: number, seq: number) {
    this.inc = inc;
    this.seq = seq;
  }

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
  private readonly podTtlMs: number;
  /**
   * The pod's incarnation for concurrency slots (redis-scripts.ts, BATCH): a new one after every failed call and
   * whenever Redis says the current one was reaped. `registered` once a call under it was answered.
   */
  private inc = 1;
  private registered = false;
  /** Slots this pod holds in Redis per concurrency rule, adopted by each new incarnation. */
  private readonly held = new Map<string, Held>();
  /** Spend accrued while degraded, per counter (with its ttl), added to Redis on recovery. */
  private readonly pending = new Map<string, { units: bigint; ttl: number }>();
  private replays: Replay[] = [];
  private calls = 0;
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
    this.podTtlMs = opts.podTtlMs ?? POD_TTL_MS;
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
    this.podsTimer = setInterval(() => void this.countPods(), Math.max(1, Math.floor(this.podTtlMs / 3)));
    this.podsTimer.unref();
  }

  /**
   * Says this pod and its incarnation are alive and learns how many pods are (the share each takes of a limit if
   * Redis goes away); reaps incarnations silent past the ttl, freeing their slots.
   */
  async countPods(leaving = false): Promise<void> {
    if (this.client.status !== 'ready') return;
    const inc = this.inc;
    const member = this.registered ? this.member(inc) : '';
    try {
      const [pods, present] = (await this.run(S_PODS, [this.prefix + 'pods', this.prefix + 'alive'], [this.podId, String(this.podTtlMs), member, leaving ? '1' : '0'])) as [number, number];
      this.share.setPods(Number(pods));
      // Reaped (silent too long, e.g. a stalled event loop): what it held was freed, so a new incarnation adopts it.
      if (!leaving && member !== '' && Number(present) === 0 && inc === this.inc) this.newIncarnation();
    } catch {
      // Unreachable: the count from the last answer stands, which is the one an outage needs.
    }
  }

  /** The name an incarnation of this pod counts under in Redis. */
  private member(inc: number): string {
    return `${this.podId}.${inc}`;
  }

  /**
   * Starts counting slots under a new incarnation. The batch being gathered goes out under the old one first, so
   * every batch counts under one; what the old one counted is reaped once it stops beating (a call may have run in
   * Redis without its answer coming back), and the new one adopts the slots the pod still holds.
   */
  private newIncarnation(): void {
    this.flushNow();
    this.inc++;
    this.registered = false;
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
    let slots: Held[] | undefined;
    let kinds = '';
    const numbers: string[] = [];
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i];
      if (r.kind === 'budget') {
        keys.push(this.prefix + spendKeys[i]!);
        const [w, f] = split(r.units!);
        kinds += 'b';
        numbers.push(w, f, String(spendTtl(r)));
      } else if (r.kind === 'concurrency') {
        // A hash of counts (redis-scripts.ts), not the sorted set of leases earlier versions kept under the rule's id.
        const key = `${this.prefix}${r.id}|n`;
        keys.push(key);
        let h = this.held.get(key);
        if (h === undefined) this.held.set(key, (h = { key, n: 0 }));
        (slots ??= []).push(h);
        kinds += 'c';
        numbers.push(String(r.limit));
      } else {
        keys.push(this.prefix + r.id);
        kinds += r.kind === 'rpm' ? 'r' : 't';
        numbers.push(String(r.limit));
      }
    }
    return { keys, specs: `${kinds} ${numbers.join(' ')}`, settles: rules.some((r) => r.kind !== 'rpm'), slots, spend: spendKeys.map((k) => (k === undefined ? undefined : this.local.spend.cell(k))) };
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
    const b = (this.open ??= new Batch(this.inc, ++this.calls));
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

  /**
   * A rules list's number in the batch; before the first settlement and the first operation on a list with a
   * concurrency rule, the batch says its incarnation and number.
   */
  private group(b: Batch, p: Prebuilt, settling: boolean): number {
    if ((settling || p.slots !== undefined) && !b.introduced) {
      b.introduced = true;
      let op = `I ${this.prefix}alive ${this.member(b.inc)} ${this.registered ? 0 : 1} ${b.seq}`;
      // Registering: the slots held now are adopted. Counted from here on, since each later settlement comes after
      // this in Redis' order (only the call that registers adopts: a member already there was adopted already).
      if (!this.registered) for (const h of this.held.values()) if (h.n > 0) op += ` ${h.key} ${h.n}`;
      b.argv.push(op);
      b.ops.push({ kind: 'I' });
    }
    return b.list(p);
  }

  private async send(b: Batch): Promise<void> {
    let res: Buffer[];
    try {
      if (this.client.status !== 'ready') throw new Error('not connected');
      // The answers as Redis sent them (bytes): ioredis would decode them as UTF-8.
      res = (await this.run(S_BATCH, b.keys, b.argv)) as Buffer[];
    } catch (err) {
      if (b.admissions > 0) this.log?.warn({ err: (err as Error).message }, 'redis admission failed; served from the local view');
      this.setDegraded(true, 'command failed');
      // Every failed call retires its incarnation: Redis may have run it (a registration, slots) without the answer
      // coming back, and only an incarnation that stops beating gives that back. A call of an older one retired it.
      if (b.inc === this.inc) this.newIncarnation();
      for (const op of b.ops) this.failed(op, b);
      return;
    }
    // A timed-out command marks the pod degraded without a reconnect; the next answer ends that.
    if (this.degraded) {
      this.setDegraded(false, 'answered');
      void this.flushPending();
    }
    // One answer per incarnation, admission and read, in order; settlements answer nothing.
    const current = b.inc === this.inc;
    let reaped = false;
    let at = 0;
    for (let i = 0; i < b.ops.length; i++) {
      const op = b.ops[i];
      // Latin-1: the answers are ASCII, and it is the cheapest decoding (one string per answer, read in place).
      if (op.kind === 'A') {
        const v = verdict(op.a, op.p, CURSOR.reset(res[at++].toString('latin1')));
        // Slots count as held (and are freed by the settlement) only under the current incarnation: an older one's
        // are reaped with it. A reaped incarnation's call counted none: they are held, and adopted by the next.
        if (v.ok && op.p.slots !== undefined && current) {
          op.a.counted = true;
          for (let j = 0; j < op.p.slots.length; j++) op.p.slots[j].n++;
        }
        op.resolve(v);
      } else if (op.kind === 'P') op.resolve(peekVerdict(op.rules, CURSOR.reset(res[at++].toString('latin1'))));
      else if (op.kind === 'I') {
        if (res[at++].toString('latin1') === '1') {
          if (current) this.registered = true;
        } else reaped = true;
      }
    }
    if (reaped && current) this.newIncarnation();
  }

  /** What an operation does when its batch could not be sent. */
  private failed(op: Op, b: Batch): void {
    if (op.kind === 'A') op.resolve(this.admitLocally(op.a));
    else if (op.kind === 'S') {
      // Sent again on recovery: Redis may have run the call (the connection dropped after), and then it keeps its number.
      this.replays.push({ s: op.s, done: `${this.prefix}alive|${this.member(b.inc)}|d`, seq: b.seq });
    } else if (op.kind === 'T') this.replays.push(op.r);
    else if (op.kind === 'P') void this.local.peek(op.rules, op.spendKeys, op.now).then(op.resolve);
  }

  admit(a: AdmitInput): Verdict | Promise<Verdict> {
    if (this.client.status !== 'ready') return this.admitLocally(a);
    const p = this.prebuilt(a.rules, a.spendKeys);
    const b = this.batch(true);
    const [rw, rf] = a.reserve === 0n ? ZERO : split(a.reserve);
    b.argv.push(`A ${this.group(b, p, false)} ${a.now} ${a.tokens} ${rw} ${rf}`);
    b.admissions++;
    return new Promise<Verdict>((resolve) => b.ops.push({ kind: 'A', a, p, resolve }));
  }

  private admitLocally(a: AdmitInput): Verdict {
    if (this.ratesWhenDown === 'refuse' && a.rules.some((r) => r.kind !== 'budget')) {
      const i = a.rules.findIndex((r) => r.kind !== 'budget');
      return { ok: false, refused: i, retryAfterMs: 1000, remaining: [], spent: [], resetMs: [] };
    }
    const rules = this.share.of(a.rules, a.spendKeys, (k) => this.local.spent(k));
    const v = this.local.admit(rules === a.rules ? a : { rules, spendKeys: a.spendKeys, now: a.now, lease: a.lease, tokens: a.tokens, reserve: a.reserve, counted: false });
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
    // Their slots, if any, were adopted by the incarnation after the failure, or not held: a replay frees none.
    for (const r of replays) {
      const b = this.batch(false);
      const [dw, df] = r.s.spendDelta === 0n ? ZERO : split(r.s.spendDelta);
      b.argv.push(`T ${b.list(this.prebuilt(r.s.rules, r.s.spendKeys))} ${r.s.now} ${r.s.tokensDelta} ${dw} ${df} ${r.done} ${r.seq}`);
      // Its own call failing, it is sent again under the same number.
      b.ops.push({ kind: 'T', r });
    }
  }

  settle(s: SettleInput): void {
    const local = this.localLeases.get(s.lease);
    if (local !== undefined) {
      this.localLeases.delete(s.lease);
      this.local.settle(local === s.rules ? s : { rules: local, spendKeys: s.spendKeys, now: s.now, lease: s.lease, tokensDelta: s.tokensDelta, spendDelta: s.spendDelta, counted: false });
      this.addPending(s.rules, s.spendKeys, s.spendDelta);
      return;
    }
    // The local view keeps the exact spend too (concurrency and tokens there belong to local admissions only).
    const p = this.prebuilt(s.rules, s.spendKeys);
    if (s.spendDelta !== 0n) for (let i = 0; i < p.spend.length; i++) if (p.spend[i] !== undefined) p.spend[i]!.v += s.spendDelta;
    if (!p.settles) return;
    // No longer held, whatever happens to the settlement: a new incarnation does not adopt it.
    const free = s.counted && p.slots !== undefined ? 1 : 0;
    if (free === 1) {
      s.counted = false;
      for (let j = 0; j < p.slots!.length; j++) p.slots![j].n--;
    }
    if (this.client.status !== 'ready') {
      // Never sent: the spend is added on recovery (the slot is reaped with the incarnation that counted it).
      this.addPending(s.rules, s.spendKeys, s.spendDelta);
      return;
    }
    const b = this.batch(false);
    const [dw, df] = s.spendDelta === 0n ? ZERO : split(s.spendDelta);
    b.argv.push(`S ${this.group(b, p, true)} ${s.now} ${s.tokensDelta} ${dw} ${df} ${free}`);
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
    // Gone at once from the others' count, and its slots freed, rather than after the pod ttl.
    await this.countPods(true);
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
