// Counters shared by every pod in Redis/Valkey (REDIS_URL): one script call per request at admission and one after
// the answer, auto-pipelined. While Redis cannot be reached the pod keeps serving from its local view (memory
// backend): rates fail open on a local limiter or fail closed, as configured; budgets stay enforced from the spend
// this pod last saw plus what it spent since, and that spend is added to Redis when it comes back.
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { AdmitInput, CounterBackend, SettleInput, Verdict } from './backend.ts';
import { MemoryBackend } from './memory-backend.ts';
import { spendTtl } from './periods.ts';
import { ADD_SPEND, ADMIT, PEEK, RAISE, SETTLE } from './redis-scripts.ts';
import type { Rule } from './rules.ts';
import { join, split } from './spend-units.ts';

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
  /** Called on every change of degraded state (metrics). */
  onDegraded?: (degraded: boolean) => void;
}

interface Script {
  text: string;
  sha: string;
}

function script(text: string): Script {
  return { text, sha: createHash('sha1').update(text).digest('hex') };
}

const S_ADMIT = script(ADMIT);
const S_SETTLE = script(SETTLE);
const S_PEEK = script(PEEK);
const S_RAISE = script(RAISE);
const S_ADD = script(ADD_SPEND);

export class RedisBackend implements CounterBackend {
  readonly kind = 'redis';
  readonly client: Redis;
  readonly local = new MemoryBackend();
  private readonly prefix: string;
  private readonly ratesWhenDown: RatesWhenDown;
  private readonly log: Logger | undefined;
  private readonly onDegraded: ((d: boolean) => void) | undefined;
  private readonly localLeases = new Set<string>();
  /** Spend accrued while degraded, per counter (with its ttl), added to Redis on recovery. */
  private readonly pending = new Map<string, { units: bigint; ttl: number }>();
  degraded = false;

  constructor(opts: RedisBackendOptions) {
    this.prefix = opts.prefix ?? 'tollgate:';
    this.ratesWhenDown = opts.ratesWhenDown ?? 'local';
    this.log = opts.log;
    this.onDegraded = opts.onDegraded;
    this.client = new Redis(opts.url, {
      enableAutoPipelining: true,
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
    });
  }

  private setDegraded(d: boolean, why: string): void {
    if (this.degraded === d) return;
    this.degraded = d;
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

  private args(rules: readonly Rule[], spendKeys: readonly (string | undefined)[], keys: string[], argv: (string | number)[]): void {
    for (let i = 0; i < rules.length; i++) {
      const r = rules[i];
      if (r.kind === 'budget') {
        keys.push(this.prefix + spendKeys[i]!);
        const [w, f] = split(r.units!);
        argv.push('b', w, f, spendTtl(r));
      } else {
        keys.push(this.prefix + r.id);
        argv.push(r.kind === 'rpm' ? 'r' : r.kind === 'tpm' ? 't' : 'c', r.limit, 0, 0);
      }
    }
  }

  private async run(s: Script, keys: string[], argv: (string | number)[]): Promise<unknown> {
    try {
      return await this.client.evalsha(s.sha, keys.length, ...keys, ...argv);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      return await this.client.eval(s.text, keys.length, ...keys, ...argv);
    }
  }

  async admit(a: AdmitInput): Promise<Verdict> {
    if (this.client.status !== 'ready') return this.admitLocally(a);
    const keys: string[] = [];
    const [rw, rf] = split(a.reserve);
    const argv: (string | number)[] = [a.now, a.lease, a.leaseMs, a.tokens, rw];
    this.args(a.rules, a.spendKeys, keys, argv);
    argv.push(rf);
    let res: (number | string)[];
    try {
      res = (await this.run(S_ADMIT, keys, argv)) as (number | string)[];
    } catch (err) {
      this.log?.warn({ err: (err as Error).message }, 'redis admission failed; served from the local view');
      this.setDegraded(true, 'command failed');
      return this.admitLocally(a);
    }
    // A timed-out command marks the pod degraded without a reconnect; the next answer ends that.
    if (this.degraded) {
      this.setDegraded(false, 'answered');
      void this.flushPending();
    }
    const n = a.rules.length;
    const v: Verdict = { ok: res[0] === 1, refused: -1, retryAfterMs: 0, remaining: new Array(n), resetMs: new Array(n) };
    if (!v.ok) {
      v.refused = Number(res[1]);
      v.retryAfterMs = Number(res[2]);
      return v;
    }
    for (let i = 0; i < n; i++) {
      const x = res[2 * i + 1];
      const y = res[2 * i + 2];
      if (a.rules[i].kind === 'budget') {
        const spent = join(x, y);
        v.remaining[i] = a.rules[i].units! - spent - a.reserve;
        v.resetMs[i] = 0;
        // The local view follows Redis, so a later outage starts from what all pods had spent.
        this.local.spend.set(a.spendKeys[i]!, spent + a.reserve);
      } else {
        v.remaining[i] = Number(x);
        v.resetMs[i] = Number(y);
      }
    }
    return v;
  }

  private admitLocally(a: AdmitInput): Verdict {
    if (this.ratesWhenDown === 'refuse' && a.rules.some((r) => r.kind !== 'budget')) {
      const i = a.rules.findIndex((r) => r.kind !== 'budget');
      return { ok: false, refused: i, retryAfterMs: 1000, remaining: [], resetMs: [] };
    }
    const v = this.local.admit(a);
    if (v.ok) {
      this.localLeases.add(a.lease);
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
    const entries = [...this.pending];
    this.pending.clear();
    for (const [key, p] of entries) {
      const [w, f] = split(p.units);
      try {
        await this.run(S_ADD, [this.prefix + key], [w, f, p.ttl]);
      } catch (err) {
        const again = this.pending.get(key);
        if (again) again.units += p.units;
        else this.pending.set(key, p);
        this.log?.warn({ err: (err as Error).message }, 'redis: spend from the degraded period not added yet');
        return;
      }
    }
  }

  async settle(s: SettleInput): Promise<void> {
    if (this.localLeases.delete(s.lease)) {
      this.local.settle(s);
      this.addPending(s.rules, s.spendKeys, s.spendDelta);
      return;
    }
    // The local view keeps the exact spend too (concurrency and tokens there belong to local admissions only).
    for (let i = 0; i < s.rules.length; i++) if (s.rules[i].kind === 'budget' && s.spendDelta !== 0n) this.local.spend.set(s.spendKeys[i]!, this.local.spent(s.spendKeys[i]!) + s.spendDelta);
    const keys: string[] = [];
    const [dw, df] = split(s.spendDelta);
    const argv: (string | number)[] = [s.now, s.lease, s.tokensDelta, dw, df];
    this.args(s.rules, s.spendKeys, keys, argv);
    try {
      if (this.client.status !== 'ready') throw new Error('not connected');
      await this.run(S_SETTLE, keys, argv);
    } catch (err) {
      // The slot expires with its lease; the spend goes to Redis when it is back (and the ledger has it anyway).
      this.addPending(s.rules, s.spendKeys, s.spendDelta);
      this.log?.warn({ err: (err as Error).message }, 'redis settlement failed; spend kept locally');
    }
  }

  async peek(rules: readonly Rule[], spendKeys: readonly (string | undefined)[], now: number): Promise<Verdict> {
    if (this.client.status !== 'ready') return this.local.peek(rules, spendKeys, now);
    const keys: string[] = [];
    const argv: (string | number)[] = [now, 0, 0, 0, 0];
    this.args(rules, spendKeys, keys, argv);
    const res = (await this.run(S_PEEK, keys, argv)) as string[];
    const v: Verdict = { ok: true, refused: -1, retryAfterMs: 0, remaining: [], resetMs: [] };
    rules.forEach((r, i) => {
      if (r.kind === 'budget') {
        v.remaining.push(r.units! - join(res[2 * i], res[2 * i + 1]));
        v.resetMs.push(0);
      } else {
        v.remaining.push(Number(res[2 * i]));
        v.resetMs.push(Number(res[2 * i + 1]));
      }
    });
    return v;
  }

  async raiseSpend(spendKey: string, units: bigint, ttlMs: number): Promise<void> {
    await this.local.raiseSpend(spendKey, units);
    if (this.client.status !== 'ready') return;
    const [w, f] = split(units);
    await this.run(S_RAISE, [this.prefix + spendKey], [w, f, ttlMs]);
  }

  async close(): Promise<void> {
    this.client.removeAllListeners('close');
    this.client.disconnect();
  }
}
