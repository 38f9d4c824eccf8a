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
import { EPSILON_MS, WINDOW_MS } from './backend.ts';
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
  /** Operations after which a turn's batch is sent and another started (default 256): one Lua run stays bounded. */
  maxOps?: number;
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
  /** The rate rules' indices in order, with each one's limit, ms per unit and whether it counts tokens (tpm). */
  rates: number[];
  /** Per rate or budget rule in rule order (the order of an admission's state): its place among the rates, or ~ its place among the budgets. */
  state: number[];
  limits: number[];
  perUnit: number[];
  tpm: boolean[];
  /** The budget rules' indices in order. */
  budgets: number[];
}

/** How many requests this pod holds a slot of one concurrency rule for in Redis (counted under its incarnation). */
interface Held {
  key: string;
  n: number;
}

type Op = { kind: 'I' } | { kind: 'T'; r: Replay };

/** A read (GET /customer/limits): one P operation, after the call's admissions. */
interface Read {
  op: string;
  done: boolean;
  rules: readonly Rule[];
  spendKeys: readonly (string | undefined)[];
  now: number;
  resolve: (v: Verdict) => void;
}

/** A settlement whose call failed, with where Redis keeps that call's number: sent again, it counts once. */
interface Replay {
  s: SettleInput;
  done: string;
  seq: number;
}

/** An admission waiting for its call's answer. */
interface Admission {
  a: AdmitInput;
  resolve: (v: Verdict) => void;
  /** Resolved (an answer that cannot be read leaves the rest to the local view). */
  done: boolean;
}

/** A call's admissions on one rules list: one A operation, written when the call is sent. */
interface Admissions {
  g: number;
  p: Prebuilt;
  list: Admission[];
  /** The clock the script admits them at: the latest of theirs, set when the call is sent. */
  now: number;
}

/** A call's settlements on one rules list, summed: one S operation. */
interface Settlements {
  g: number;
  /** One of them, for the rules and spend keys (the same for all). */
  first: SettleInput;
  now: number;
  tokens: number;
  spend: bigint;
  frees: number;
}

/**
 * One script call being gathered. A rules list's keys and specs go in once per call (its G operation), however many
 * of its requests the call carries, and so do its admissions (one A operation) and its settlements (one S).
 */
class Batch {
  /** The pod incarnation its concurrency operations count under (the pod's current one until it is sent). */
  inc: number;
  /** Its number: Redis keeps the last one run per incarnation, so a failed call's settlements are sent again only if it never ran. */
  readonly seq: number;
  /** Where its I operation is in argv (before the first operation on a list with a concurrency rule), -1 if none. */
  iAt = -1;
  readonly keys: string[] = [];
  /** The G, I and T operations, in the order issued; the S, A and P operations follow when it is sent. */
  readonly argv: string[] = [];
  readonly ops: Op[] = [];
  readonly reads: Read[] = [];
  /** Each rules list in this call and its number (1, 2, ..) in the script. */
  readonly lists = new Map<Prebuilt, number>();
  readonly admitted = new Map<Prebuilt, Admissions>();
  readonly settled = new Map<Prebuilt, Settlements>();
  admissions = 0;
  /** Operations and requests in it (a call's Lua run stays bounded). */
  size = 0;

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
  private readonly maxOps: number;
  /**
   * The pod's incarnation for concurrency slots (redis-scripts.ts, BATCH): a new one after every failed call and
   * whenever Redis says the current one was reaped. `registered` once a call under it was answered.
   */
  private inc = 1;
  private registered = false;
  /**
   * The incarnation whose registration (the I operation adopting the slots held then) has been built, sent or not:
   * from then on a held slot is counted under it, so a settlement frees it there (see settle).
   */
  private adoptedInc = 0;
  /** Set by close(): a heartbeat answered after it registers nothing (the pod has left). */
  private closing = false;
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
  /** A batch is ready but waits for the call in flight. */
  private waiting = false;
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  /** Resolves every drain() waiting once no call is in flight. */
  private idle: (() => void)[] = [];

  constructor(opts: RedisBackendOptions) {
    this.prefix = opts.prefix ?? 'tollgate:';
    this.settleDelayMs = opts.settleDelayMs ?? 10;
    this.ratesWhenDown = opts.ratesWhenDown ?? 'local';
    this.log = opts.log;
    this.onDegraded = opts.onDegraded;
    this.onBatch = opts.onBatch;
    this.podTtlMs = opts.podTtlMs ?? POD_TTL_MS;
    this.maxOps = opts.maxOps ?? MAX_OPS;
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
    this.client.on('close', () => {
      this.setDegraded(true, 'connection closed');
      // Settlements while disconnected free nothing in Redis: the incarnation that counted their slots must stop
      // beating and be reaped (within the pod ttl), and a new one adopts the slots still held.
      this.newIncarnation();
    });
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
      // A new incarnation registers (adopting the slots held) with its first call that needs it. While the pod holds
      // slots and sends nothing else, the heartbeat sends that call, before the old one that counted them is reaped.
      if (!leaving && !this.closing && !this.registered && this.holdsSlots()) this.register();
    } catch {
      // Unreachable: the count from the last answer stands, which is the one an outage needs.
    }
  }

  private holdsSlots(): boolean {
    for (const h of this.held.values()) if (h.n > 0) return true;
    return false;
  }

  /** Puts the current incarnation's registration in the batch being gathered (sent with it, a few ms later). */
  private register(): void {
    this.introduce(this.batch(false));
  }

  /** The name an incarnation of this pod counts under in Redis. */
  private member(inc: number): string {
    return `${this.podId}.${inc}`;
  }

  /**
   * Starts counting slots under a new incarnation. What the old one counted is reaped once it stops beating (a call
   * may have run in Redis without its answer coming back), and the new one adopts the slots the pod still holds.
   * Every batch counts under one incarnation: the one being gathered moves to the new one.
   */
  private newIncarnation(): void {
    this.inc++;
    this.registered = false;
    // The batch being gathered goes under the new one (not the old: a reaped incarnation counts no slot). It
    // registers it and adopts what the pod holds now; its settlements free nothing, since the slots they would free
    // were counted under the old incarnation only (no longer held, so not adopted) and go when it is reaped.
    const b = this.open;
    if (b === undefined) return;
    b.inc = this.inc;
    for (const t of b.settled.values()) t.frees = 0;
    if (b.iAt >= 0) b.argv[b.iAt] = this.introduction(b);
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
    const rates: number[] = [];
    const budgets: number[] = [];
    const state: number[] = [];
    rules.forEach((r, i) => {
      if (r.kind === 'budget') state.push(~(budgets.push(i) - 1));
      else if (r.kind !== 'concurrency') state.push(rates.push(i) - 1);
    });
    return {
      keys,
      specs: `${kinds} ${numbers.join(' ')}`,
      settles: rules.some((r) => r.kind !== 'rpm'),
      slots,
      spend: spendKeys.map((k) => (k === undefined ? undefined : this.local.spend.cell(k))),
      rates,
      state,
      limits: rates.map((i) => rules[i].limit),
      perUnit: rates.map((i) => WINDOW_MS / rules[i].limit),
      tpm: rates.map((i) => rules[i].kind === 'tpm'),
      budgets,
    };
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

  /**
   * The batch being gathered. An admission or a read sends it at the end of the turn, a settlement a little later;
   * while a call is in flight it waits for that call's answer and goes right after it, with whatever came meanwhile.
   */
  private batch(urgent: boolean): Batch {
    // A turn with very many requests is split, so one call (and one Lua run) stays bounded.
    if (this.open !== undefined && this.open.size >= this.maxOps) this.flushNow();
    const b = (this.open ??= new Batch(this.inc, ++this.calls));
    if (urgent && !this.immediate) {
      this.immediate = true;
      setImmediate(this.flushTurn);
    } else if (!urgent && this.timer === undefined && !this.immediate) {
      this.timer = setTimeout(this.flushTurn, this.settleDelayMs);
      this.timer.unref?.();
    }
    return b;
  }

  /**
   * Sends the batch, unless a call is in flight: then it goes when that call is answered (if that call fails, it is
   * served from the local view with it, see send). Under load a call so carries everything that came during the
   * previous round trip: fewer, larger calls, less CPU in the pod and in Redis per request.
   */
  private readonly flushTurn = (): void => {
    if (this.inFlight === 0) return this.flushNow();
    // No turn's flush is pending any more (the next admission schedules one): if the call in flight fails, what
    // gathered behind it is served locally and not sent, and the batch after must not wait for a flush that never comes.
    this.immediate = false;
    this.waiting = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  };

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
      this.inFlight--;
      if (this.waiting && this.inFlight === 0) {
        this.waiting = false;
        this.flushNow();
      }
      if (this.inFlight === 0 && this.idle.length > 0) for (const done of this.idle.splice(0)) done();
    });
  };

  /**
   * A rules list's number in the batch; before the first settlement and the first operation on a list with a
   * concurrency rule, the batch says its incarnation and number.
   */
  private group(b: Batch, p: Prebuilt, settling: boolean): number {
    if (settling || p.slots !== undefined) this.introduce(b);
    return b.list(p);
  }

  /** The batch's I operation, unless it has one. */
  private introduce(b: Batch): void {
    if (b.iAt >= 0) return;
    b.iAt = b.argv.length;
    b.argv.push(this.introduction(b));
    b.ops.push({ kind: 'I' });
  }

  /** A batch's I operation: its incarnation and number, and when registering, the slots the pod holds now. */
  private introduction(b: Batch): string {
    if (!this.registered) this.adoptedInc = b.inc;
    let op = `I ${this.prefix}alive ${this.member(b.inc)} ${this.registered ? 0 : 1} ${b.seq}`;
    // Registering: the slots held now are adopted. Counted from here on, since each later settlement comes after
    // this in Redis' order (only the call that registers adopts: a member already there was adopted already).
    if (!this.registered) for (const h of this.held.values()) if (h.n > 0) op += ` ${h.key} ${h.n}`;
    return op;
  }

  private async send(b: Batch): Promise<void> {
    // Settlements first: they were admitted in earlier calls, and what they free or give back is there for these.
    for (const t of b.settled.values()) {
      const [dw, df] = t.spend === 0n ? ZERO : split(t.spend);
      b.argv.push(`S ${t.g} ${t.now} ${t.tokens} ${dw} ${df} ${t.frees}`);
    }
    for (const x of b.admitted.values()) b.argv.push(admitOp(x));
    for (const r of b.reads) b.argv.push(r.op);
    let res: Buffer[];
    try {
      if (this.client.status !== 'ready') throw new Error('not connected');
      // The answers as Redis sent them (bytes): ioredis would decode them as UTF-8.
      res = (await this.run(S_BATCH, b.keys, b.argv)) as Buffer[];
    } catch (err) {
      // What gathered behind this call is not sent either: Redis has just failed to answer, and a request waits for
      // at most one call (the one ahead of it), not for that one's timeout and then its own.
      const behind = this.open;
      if (behind !== undefined) {
        this.open = undefined;
        this.waiting = false;
        if (this.timer !== undefined) clearTimeout(this.timer);
        this.timer = undefined;
      }
      this.failed(b, err as Error);
      if (behind !== undefined) this.failed(behind, err as Error);
      return;
    }
    // A timed-out command marks the pod degraded without a reconnect; the next answer ends that.
    if (this.degraded) {
      this.setDegraded(false, 'answered');
      void this.flushPending();
    }
    try {
      this.read(b, res);
    } catch (err) {
      // Never a request left waiting on an answer that cannot be read (a bug, or not this script's answer): what was
      // not read is served from the local view. Redis ran the call and may have counted it, so, as after a failed
      // call, a new incarnation (its slots come back when the old one is reaped); its reservations are counted again
      // here, on the safe side (a budget is reached early, never overrun).
      this.log?.error({ err: (err as Error).message }, 'redis: an answer was not understood; served from the local view');
      for (const x of b.admitted.values()) for (const m of x.list) if (!m.done) m.resolve(this.admitLocallyOwn(m.a));
      for (const r of b.reads) if (!r.done) void this.local.peek(r.rules, r.spendKeys, r.now).then(r.resolve);
      if (b.inc === this.inc) this.newIncarnation();
    }
  }

  /** A call's answers: one per incarnation, then one per rules list admitted on, then one per read. */
  private read(b: Batch, res: Buffer[]): void {
    const current = b.inc === this.inc;
    let reaped = false;
    let at = 0;
    for (let i = 0; i < b.ops.length; i++) {
      if (b.ops[i].kind !== 'I') continue;
      // Latin-1: the answers are ASCII, and it is the cheapest decoding (one string per answer, read in place).
      if (res[at++].toString('latin1') === '1') {
        if (current) this.registered = true;
      } else reaped = true;
    }
    let slotted = false;
    for (const x of b.admitted.values()) {
      const text = res[at++].toString('latin1');
      const now = x.now;
      if (!current && x.p.slots !== undefined && text.includes('+')) slotted = true;
      // One state for the whole group, or each request's answer (joined by ",", or one refusal).
      if (text.charCodeAt(0) === PLUS && text.indexOf(',') < 0) admitted(x.list, 0, x.list.length, x.p, now, CURSOR.reset(text));
      else {
        // Some did not fit: each request's own answer, in order.
        const each = text.split(',');
        for (let j = 0; j < x.list.length; j++) {
          const m = x.list[j];
          if (each[j].charCodeAt(0) === PLUS) admitted(x.list, j, j + 1, x.p, now, CURSOR.reset(each[j]));
          else {
            const v = refused(m.a, x.p, now, CURSOR.reset(each[j]));
            m.done = true;
            m.resolve(v);
          }
        }
      }
    }
    for (const r of b.reads) {
      const v = peekVerdict(r.rules, CURSOR.reset(res[at++].toString('latin1')));
      r.done = true;
      r.resolve(v);
    }
    // Reaped: this call counted no slot (its admissions are held above, so the next incarnation adopts them).
    if (reaped && current) this.newIncarnation();
    // An older incarnation's call (the pod moved on while it was out): what it counted goes when that one is reaped, so
    // its admissions are held above for the current one to adopt; if that one's adoption was already built, a new one.
    else if (!current && slotted && this.adoptedInc === this.inc) this.newIncarnation();
  }

  /** A batch whose call failed or was not sent: served from the local view, its settlements kept to send again. */
  private failed(b: Batch, err: Error): void {
    if (b.admissions > 0) this.log?.warn({ err: err.message }, 'redis admission failed; served from the local view');
    this.setDegraded(true, 'command failed');
    // Every failed call retires its incarnation: Redis may have run it (a registration, slots) without the answer
    // coming back, and only an incarnation that stops beating gives that back. A call of an older one retired it.
    if (b.inc === this.inc) this.newIncarnation();
    for (const op of b.ops) if (op.kind === 'T') this.replays.push(op.r);
    // Sent again on recovery: Redis may have run the call (the connection dropped after), and then it keeps its number.
    const done = `${this.prefix}alive|${this.member(b.inc)}|d`;
    for (const t of b.settled.values()) {
      const s = t.first;
      this.replays.push({ s: { rules: s.rules, spendKeys: s.spendKeys, now: t.now, lease: s.lease, counted: false, tokensDelta: t.tokens, spendDelta: t.spend }, done, seq: b.seq });
    }
    for (const x of b.admitted.values()) for (const m of x.list) m.resolve(this.admitLocallyOwn(m.a));
    for (const r of b.reads) void this.local.peek(r.rules, r.spendKeys, r.now).then(r.resolve);
  }

  admit(a: AdmitInput): Verdict | Promise<Verdict> {
    if (this.client.status !== 'ready') return this.admitLocally(a);
    const p = this.prebuilt(a.rules, a.spendKeys);
    const b = this.batch(true);
    let x = b.admitted.get(p);
    if (x === undefined) b.admitted.set(p, (x = { g: this.group(b, p, false), p, list: [], now: 0 }));
    b.admissions++;
    b.size++;
    const list = x.list;
    return new Promise<Verdict>((resolve) => list.push({ a, resolve, done: false }));
  }

  /**
   * admitLocally for one of several requests answered in one go: the local counters hand out one verdict object, read
   * before their next admission, and these are read later (each by its own promise's reaction), so each gets a copy.
   */
  private admitLocallyOwn(a: AdmitInput): Verdict {
    const v = this.admitLocally(a);
    return { ok: v.ok, refused: v.refused, retryAfterMs: v.retryAfterMs, remaining: v.remaining.slice(), spent: v.spent.slice(), resetMs: v.resetMs.slice() };
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
    // One failed call's settlements go in one call, never split by the bound on a batch: the script decides once per
    // failed call whether they count, and keeps its number once they did.
    let b: Batch | undefined;
    for (let i = 0; i < replays.length; i++) {
      const r = replays[i];
      if (i === 0 || r.done !== replays[i - 1].done || r.seq !== replays[i - 1].seq) b = this.batch(false);
      const [dw, df] = r.s.spendDelta === 0n ? ZERO : split(r.s.spendDelta);
      b!.argv.push(`T ${b!.list(this.prebuilt(r.s.rules, r.s.spendKeys))} ${r.s.now} ${r.s.tokensDelta} ${dw} ${df} ${r.done} ${r.seq}`);
      // Its own call failing, it is sent again under the same number.
      b!.ops.push({ kind: 'T', r });
      b!.size++;
    }
  }

  settle(s: SettleInput): void {
    // Most of the time nothing was admitted locally: no lease name is made to look for.
    const local = this.localLeases.size === 0 ? undefined : this.localLeases.get(s.lease);
    if (local !== undefined) {
      this.localLeases.delete(s.lease);
      this.local.settle(local === s.rules ? s : { rules: local, spendKeys: s.spendKeys, now: s.now, lease: s.lease, tokensDelta: s.tokensDelta, spendDelta: s.spendDelta, counted: false });
      this.addPending(s.rules, s.spendKeys, s.spendDelta);
      // Admitted locally, settled once Redis is back: its charge goes there now, not at the end of the next outage.
      if (s.spendDelta !== 0n && this.retry === undefined && !this.degraded && this.client.status === 'ready') {
        this.retry = setTimeout(() => void this.flushPending(), this.settleDelayMs);
        this.retry.unref?.();
      }
      return;
    }
    // The local view keeps the exact spend too (concurrency and tokens there belong to local admissions only).
    const p = this.prebuilt(s.rules, s.spendKeys);
    if (s.spendDelta !== 0n) for (let i = 0; i < p.spend.length; i++) if (p.spend[i] !== undefined) p.spend[i]!.v += s.spendDelta;
    if (!p.settles) return;
    // No longer held, whatever happens to the settlement: a new incarnation does not adopt it.
    const held = s.counted && p.slots !== undefined;
    if (held) {
      s.counted = false;
      for (let j = 0; j < p.slots!.length; j++) p.slots![j].n--;
    }
    // Freed in Redis only where the current incarnation counts it (admitted under it, or adopted by it). A slot of an
    // incarnation retired before its successor adopted anything is counted only under the old one, and comes back
    // when that one is reaped.
    const free = held && (this.registered || this.adoptedInc === this.inc) ? 1 : 0;
    if (this.client.status !== 'ready') {
      // Never sent: the spend is added on recovery (the slot is reaped with the incarnation that counted it).
      this.addPending(s.rules, s.spendKeys, s.spendDelta);
      return;
    }
    const b = this.batch(false);
    let t = b.settled.get(p);
    if (t === undefined) b.settled.set(p, (t = { g: this.group(b, p, true), first: s, now: s.now, tokens: 0, spend: 0n, frees: 0 }));
    if (s.now > t.now) t.now = s.now;
    t.tokens += s.tokensDelta;
    if (s.spendDelta !== 0n) t.spend += s.spendDelta;
    t.frees += free;
    b.size++;
  }

  peek(rules: readonly Rule[], spendKeys: readonly (string | undefined)[], now: number): Promise<Verdict> {
    // A key without limits (GET /customer/limits): nothing to read, and an empty rules list is not one the script takes.
    if (rules.length === 0 || this.client.status !== 'ready') return this.local.peek(rules, spendKeys, now);
    // Not cached: a read is rare, and its spend-key list is built for it.
    const p = this.build(rules, spendKeys);
    const b = this.batch(true);
    const op = `P ${b.list(p)} ${now}`;
    b.size++;
    return new Promise<Verdict>((resolve) => b.reads.push({ op, done: false, rules, spendKeys, now, resolve }));
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
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  async close(): Promise<void> {
    this.closing = true;
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

const PLUS = 43;

/** A rules list's A operation: each request's tokens and reservation, in order, at the latest of their clocks. */
function admitOp(x: Admissions): string {
  x.now = groupNow(x.list);
  let op = `A ${x.g} ${x.now}`;
  for (let j = 0; j < x.list.length; j++) {
    const a = x.list[j].a;
    const [rw, rf] = a.reserve === 0n ? ZERO : split(a.reserve);
    op += ` ${a.tokens} ${rw} ${rf}`;
  }
  return op;
}

function groupNow(list: Admission[]): number {
  let now = list[0].a.now;
  for (let j = 1; j < list.length; j++) if (list[j].a.now > now) now = list[j].a.now;
  return now;
}

// Each rate rule's arrival time while a group's verdicts are derived (one group at a time).
const TAT: number[] = [];

/**
 * The verdicts of admitted requests list[from..to), from the state Redis answered for the first of them (redis-scripts.ts,
 * A): each one's rate rules as Redis left them after it (what is left, when the bucket is full again, the same
 * arithmetic as the script's) and each budget's spend with its reservation. Its slots are held by the pod: counted
 * under the current incarnation, or, for a call of an older or reaped one (which counted them there only until it is
 * reaped, or not at all), adopted by the next registration (see read). The local view's budget counters follow Redis.
 */
function admitted(list: Admission[], from: number, to: number, p: Prebuilt, now: number, res: ReplyCursor): void {
  res.field();
  const nr = p.rates.length;
  const spent: bigint[] | undefined = p.budgets.length > 0 ? new Array<bigint>(p.budgets.length) : undefined;
  for (let j = 0; j < p.state.length; j++) {
    const k = p.state[j];
    if (k >= 0) TAT[k] = res.number();
    else spent![~k] = res.spend();
  }
  for (let j = from; j < to; j++) {
    const m = list[j];
    const a = m.a;
    const n = a.rules.length;
    const v: Verdict = { ok: true, refused: -1, retryAfterMs: 0, remaining: new Array(n), spent: new Array(n), resetMs: new Array(n) };
    for (let k = 0; k < nr; k++) {
      // One request after the other, as the script (and the in-process counters) add them: the same doubles.
      const t = p.perUnit[k];
      TAT[k] = TAT[k] + (p.tpm[k] ? Math.max(1, Math.min(a.tokens, p.limits[k])) : 1) * t;
      const ahead = TAT[k] - now;
      v.remaining[p.rates[k]] = Math.floor((WINDOW_MS - ahead + EPSILON_MS) / t);
      // From the request's own clock, which the headers add it to (the group's is the latest of its requests').
      v.resetMs[p.rates[k]] = TAT[k] - a.now;
    }
    if (spent !== undefined) {
      for (let k = 0; k < spent.length; k++) {
        const i = p.budgets[k];
        spent[k] += a.reserve;
        v.spent[i] = spent[k];
        p.spend[i]!.v = spent[k];
      }
    }
    if (p.slots !== undefined) {
      a.counted = true;
      for (let k = 0; k < p.slots.length; k++) p.slots[k].n++;
    }
    m.done = true;
    m.resolve(v);
  }
}

/**
 * A refused request's verdict: the refusing rule, the wait, and what is left of each rate rule as it stands (the
 * refused request took nothing), the same arithmetic as the in-process counters' refusal.
 */
function refused(a: AdmitInput, p: Prebuilt, now: number, res: ReplyCursor): Verdict {
  if (res.field() !== '0') throw new Error('not an admission answer');
  const n = a.rules.length;
  const v: Verdict = { ok: false, refused: -1, retryAfterMs: 0, remaining: new Array(n), spent: new Array(n), resetMs: new Array(n) };
  v.refused = res.number();
  v.retryAfterMs = res.number();
  for (let k = 0; k < p.rates.length; k++) {
    const tat = res.number();
    // A settlement of more tokens than estimated may have taken the bucket past a full window: nothing is left.
    v.remaining[p.rates[k]] = Math.max(0, Math.floor((WINDOW_MS - (tat - now) + EPSILON_MS) / p.perUnit[k]));
    v.resetMs[p.rates[k]] = tat - a.now;
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
