// A list+watch cache with a supervisor, on client-node's Watch. client-node's own ListWatch stops for good on
// any error other than 410, never asks for bookmarks, and has no watchdog (node-practice §2.1), so this one:
// restarts with exponential backoff and jitter (capped at 2 s, so a returning API server is back in use within
// 2 s), relists after 410 Gone, relists periodically (level-triggered
// safety net), and restarts a watch that has been silent (no event, no bookmark) for too long.
import { ApiException, Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';

/** The HTTP status of a failed API call (0 when the server could not be reached). */
export function statusOf(err: unknown): number {
  if (err instanceof ApiException) return err.code;
  const e = err as { statusCode?: number; code?: unknown };
  if (typeof e?.statusCode === 'number') return e.statusCode;
  if (typeof e?.code === 'number') return e.code;
  return 0;
}

/**
 * client-node 2.x builds a new undici Agent (a new TCP/TLS connection) for every call when the cluster has TLS
 * options; reuse the first one so thousands of writes share keep-alive connections.
 */
export function shareConnections(kc: KubeConfig): KubeConfig {
  const original = kc.applySecurityAuthentication.bind(kc);
  let shared: unknown;
  kc.applySecurityAuthentication = async (ctx) => {
    await original(ctx);
    const d = ctx.getDispatcher();
    if (d === undefined) return;
    if (shared === undefined) shared = d;
    else if (d !== shared) {
      ctx.setDispatcher(shared as typeof d);
      void (d as { close?: () => Promise<void> }).close?.();
    }
  };
  return kc;
}

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const quietLogger: Logger = { info() {}, warn() {}, error() {} };

export type ChangeType = 'add' | 'update' | 'delete' | 'sync';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Drops what no reader of the cache uses but every object may carry: managedFields (server-side apply's field
 * ownership, often larger than the spec) and kubectl's last-applied copy of the whole object. At 50,000 ApiKeys and
 * their Secrets that is most of a cached object's size.
 */
export function slim<T>(obj: T): T {
  const m = (obj as { metadata?: { managedFields?: unknown; annotations?: Record<string, string> } }).metadata;
  if (m) {
    delete m.managedFields;
    if (m.annotations && LAST_APPLIED in m.annotations) {
      delete m.annotations[LAST_APPLIED];
      if (Object.keys(m.annotations).length === 0) delete m.annotations;
    }
  }
  return obj;
}

export interface InformerOptions<T> {
  name: string;
  kc: KubeConfig;
  path: string;
  list: () => Promise<{ items: T[]; metadata?: { resourceVersion?: string } }>;
  labelSelector?: string;
  onChange: (type: ChangeType, obj: T | undefined, old: T | undefined) => void;
  /**
   * Keeps, on arrival and after `slim`, only the fields this cache's readers use (memory at 50,000 objects): it
   * returns a new object rather than deleting, since V8 stores an object that lost properties in a larger form.
   */
  trim?: (obj: T) => T;
  log?: Logger;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Full relist this often even when all is well (default 10 min). */
  relistMs?: number;
  /** Restart a watch that delivered nothing, not even a bookmark, for this long (default 3 min). */
  lastSeenLimitMs?: number;
  /** Asks the server to end each watch after this long (default 5 min); the informer re-watches from its resourceVersion. */
  watchTimeoutSeconds?: number;
}

export interface InformerStats {
  lists: number;
  watches: number;
  errors: number;
  gone: number;
  watchdogRestarts: number;
}

interface Named {
  metadata?: { name?: string; resourceVersion?: string };
}

export class Informer<T extends Named> {
  private cache = new Map<string, T>();
  private rv = '';
  private stopped = true;
  private failures = 0;
  private controller: AbortController | undefined;
  private abortReason: 'relist' | 'watchdog' | 'stop' | undefined;
  private timers: NodeJS.Timeout[] = [];
  private wake: (() => void) | undefined;
  private syncedWaiters: (() => void)[] = [];
  private readonly o: Required<Omit<InformerOptions<T>, 'labelSelector' | 'trim'>> & { labelSelector?: string; trim?: (obj: T) => T };
  synced = false;
  /** True while a watch is open and the last list or watch call succeeded. */
  connected = false;
  /** When the watch last stopped being open (since start() until the first watch opens); undefined while open. */
  brokenSince: number | undefined;
  lastSeen = 0;
  readonly stats: InformerStats = { lists: 0, watches: 0, errors: 0, gone: 0, watchdogRestarts: 0 };

  constructor(opts: InformerOptions<T>) {
    this.o = {
      ...opts,
      log: opts.log ?? quietLogger,
      backoffBaseMs: opts.backoffBaseMs ?? 250,
      // A failed attempt is one cheap request: retrying every ≤ 2 s bounds how stale a pod is after the API returns.
      backoffMaxMs: opts.backoffMaxMs ?? 2000,
      relistMs: opts.relistMs ?? 600_000,
      lastSeenLimitMs: opts.lastSeenLimitMs ?? 180_000,
      watchTimeoutSeconds: opts.watchTimeoutSeconds ?? 300,
    };
  }

  list(): T[] {
    return [...this.cache.values()];
  }

  get(name: string): T | undefined {
    return this.cache.get(name);
  }

  get size(): number {
    return this.cache.size;
  }

  /** Starts the loop; resolves once the first list has landed. */
  start(): Promise<void> {
    if (this.stopped) {
      this.stopped = false;
      this.brokenSince = Date.now();
      this.timers.push(setInterval(() => this.interrupt('relist'), this.o.relistMs));
      this.timers.push(
        setInterval(() => {
          if (this.controller && Date.now() - this.lastSeen > this.o.lastSeenLimitMs) {
            this.stats.watchdogRestarts++;
            this.o.log.warn({ informer: this.o.name, silentMs: Date.now() - this.lastSeen }, 'watch silent for too long; restarting it with a relist');
            this.interrupt('watchdog');
          }
        }, Math.max(50, Math.min(10_000, this.o.lastSeenLimitMs / 4))),
      );
      for (const t of this.timers) t.unref();
      void this.loop();
    }
    return this.synced ? Promise.resolve() : new Promise((resolve) => this.syncedWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.interrupt('stop');
    this.wake?.();
  }

  /** Forces a relist now (tests, and the operator's periodic resync). */
  relist(): void {
    this.interrupt('relist');
  }

  private interrupt(reason: 'relist' | 'watchdog' | 'stop'): void {
    if (reason !== 'stop') this.rv = '';
    if (this.controller) {
      this.abortReason = reason;
      this.controller.abort();
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        if (!this.rv) await this.relistNow();
        if (this.stopped) break;
        await this.watchOnce();
        this.failures = 0;
      } catch (err) {
        if (this.stopped) break;
        this.disconnected();
        this.stats.errors++;
        this.failures++;
        // Jitter below the cap, never above it: the cap is the promise of how soon a returning server is used.
        const delay = Math.min(this.o.backoffMaxMs, this.o.backoffBaseMs * 2 ** (this.failures - 1)) * (0.5 + Math.random() / 2);
        this.o.log.warn({ informer: this.o.name, err: (err as Error).message, status: statusOf(err), retryInMs: Math.round(delay) }, 'list/watch failed; retrying');
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, delay);
          this.wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.wake = undefined;
      }
    }
    this.disconnected();
  }

  private disconnected(): void {
    this.connected = false;
    this.brokenSince ??= Date.now();
  }

  private async relistNow(): Promise<void> {
    const res = await this.o.list();
    this.stats.lists++;
    const next = new Map<string, T>();
    const trim = this.o.trim;
    for (const item of res.items) next.set(item.metadata?.name ?? '', trim ? trim(slim(item)) : slim(item));
    const old = this.cache;
    this.cache = next;
    this.rv = res.metadata?.resourceVersion ?? '';
    this.lastSeen = Date.now();
    for (const [name, o] of old) if (!next.has(name)) this.o.onChange('delete', o, o);
    for (const [name, n] of next) {
      const o = old.get(name);
      if (!o) this.o.onChange('add', n, undefined);
      else if (o.metadata?.resourceVersion !== n.metadata?.resourceVersion) this.o.onChange('update', n, o);
    }
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncedWaiters.splice(0)) w();
    }
    this.o.onChange('sync', undefined, undefined);
  }

  private watchOnce(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const watch = new Watch(this.o.kc);
      // client-node's own inactivity timeout: longer than ours, so the watchdog above decides.
      (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = this.o.lastSeenLimitMs * 2;
      this.abortReason = undefined;
      let gone = false;
      let finished = false;
      const onEvent = (type: string, obj: T & { code?: number }) => {
        this.lastSeen = Date.now();
        if (type === 'ERROR') {
          if (obj.code === 410) gone = true;
          return;
        }
        slim(obj);
        if (this.o.trim && type !== 'BOOKMARK') obj = this.o.trim(obj);
        const name = obj.metadata?.name;
        if (type === 'BOOKMARK') {
          this.rv = obj.metadata?.resourceVersion ?? this.rv;
          return;
        }
        if (!name) return;
        const old = this.cache.get(name);
        if (type === 'DELETED') {
          this.cache.delete(name);
          this.o.onChange('delete', obj, old);
        } else {
          this.cache.set(name, obj);
          this.o.onChange(old ? 'update' : 'add', obj, old);
        }
        this.rv = obj.metadata?.resourceVersion ?? this.rv;
      };
      const done = (err: unknown) => {
        finished = true;
        this.controller = undefined;
        this.disconnected();
        const reason = this.abortReason;
        this.abortReason = undefined;
        if (reason) return resolve(); // we ended it on purpose (relist, watchdog, stop)
        if (gone || statusOf(err) === 410) {
          this.stats.gone++;
          this.rv = '';
          this.o.log.info({ informer: this.o.name }, 'resourceVersion expired (410 Gone); relisting');
          return resolve();
        }
        if (err) return reject(err instanceof Error ? err : new Error(String(err)));
        resolve(); // the server ended the watch (timeoutSeconds): continue from our resourceVersion
      };
      this.stats.watches++;
      watch
        .watch(this.o.path, { resourceVersion: this.rv, allowWatchBookmarks: true, labelSelector: this.o.labelSelector, timeoutSeconds: this.o.watchTimeoutSeconds }, onEvent, done)
        .then((ctl) => {
          if (finished) return;
          this.controller = ctl;
          this.connected = true;
          this.brokenSince = undefined;
          this.lastSeen = Date.now();
          if (this.abortReason === undefined && this.stopped) {
            this.abortReason = 'stop';
            ctl.abort();
          }
        }, reject);
    });
  }
}
