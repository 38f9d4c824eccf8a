// The watching and queueing half of the operator: informers feed one level-triggered, idempotent pass that
// compiles the namespace, writes what changed, issues key Secrets, keeps the revocation finalizer, and brings
// every status up to date; the decisions themselves are in reconcile.ts. A pass looks at the ApiKeys the
// informers reported changed, not all 50,000; a full pass (start, a takeover, a relist of the ApiKeys or Secrets,
// after an error) looks at everything. Every replica keeps its informers warm; passes and writes happen only
// while `isLeader()` says so, and a new leadership term starts with `takeover()`.
import type { V1Lease } from '@kubernetes/client-node';
import { generateApiKey } from '../gateway/auth/api-key.ts';
import { GATEWAY_REPORT_LABEL, SNAPSHOT_LABEL } from '../gateway/snapshot/kube-format.ts';
import type { Compiled, World } from './compile.ts';
import { Compiler } from './compile.ts';
import type { Logger } from '../kube/informer.ts';
import { Informer, quietLogger } from '../kube/informer.ts';
import type { ChangeType } from '../kube/informer.ts';
import type { ApiKeySpec, Condition, Kind, Resource, SecretObject } from './kinds.ts';
import { API_KEY_LABEL, API_VERSION, KIND_NAMES, keySecretName, refOf } from './kinds.ts';
import type { KubeClient } from './kube.ts';
import { statusOf } from './kube.ts';
import type { WriteResult, WriterOptions } from './snapshot-writer.ts';
import { SnapshotWriter } from './snapshot-writer.ts';
import { SpendStatus, spendFromLeases } from './spend.ts';
import { stableStringify } from '../gateway/snapshot/runtime.ts';
import { WorkQueue } from './work-queue.ts';
import { desiredStatus, livePods, sameStatus, statusKey } from './status.ts';
import { aggregateEjections, appliedAtGeneration, expiryDelay, finalizersToAdd, finalizersToRelease, holdCondition, invalidCounts, isMistake, statusExtra, statusInputs, upstreamsCondition } from './reconcile.ts';
import type { Ejection } from './reconcile.ts';
import type { OperatorMetrics } from './metrics.ts';

export interface ControllerOptions {
  client: KubeClient;
  /**
   * Where the snapshot Secrets are written and the gateways' report Leases read (default: `client`'s namespace).
   * A namespace of their own lets the gateways' Role reach nothing else (ADR 0017).
   */
  snapshotClient?: KubeClient;
  log?: Logger;
  isLeader?: () => boolean;
  writer?: WriterOptions;
  /** A pass this often even without events (default 30 s): lease expiry, clock-driven expiry. */
  resyncMs?: number;
  /** Informer tuning (tests shorten these). */
  informer?: { relistMs?: number; lastSeenLimitMs?: number; backoffBaseMs?: number; backoffMaxMs?: number };
  statusConcurrency?: number;
  /** Reconcile, snapshot and invalid-resource metrics (docs/observability.md). */
  metrics?: OperatorMetrics;
  /** Coalesces bursts of events into one pass. */
  debounceMs?: number;
  /** Condition UpstreamsHealthy changes at most this often per Provider / Model (default 30 s). */
  upstreamsConditionEveryMs?: number;
  /** Spend on Organization/ApiKey status is rewritten at most this often per object (default 60 s). */
  spendStatusEveryMs?: number;
}

export interface ControllerStats {
  reconciles: number;
  snapshotWrites: number;
  statusWrites: number;
  statusWritesByKind: Partial<Record<Kind, number>>;
  keysIssued: number;
  events: number;
  lastWrite: WriteResult | undefined;
  lastReconcileMs: number;
  lastError: string | undefined;
}

export class Controller {
  private readonly client: KubeClient;
  private readonly snapshotClient: KubeClient;
  /** The snapshot Secrets when they live in another namespace than the watched one. */
  readonly snapshotSecrets: Informer<SecretObject> | undefined;
  private readonly log: Logger;
  private readonly isLeader: () => boolean;
  writer: SnapshotWriter;
  private compiler = new Compiler();
  /** What changed since the last pass: ApiKeys by name (the resource or its key Secret), any resource by ref. */
  private dirty = { full: true, keys: new Set<string>(), refs: new Set<string>() };
  /** Resources whose Applied condition still depends on which pods serve what. */
  private readonly podDependent = new Set<string>();
  private lastPodsKey = '';
  /** What the pods reported ejected at the last pass, and when each object's UpstreamsHealthy last changed. */
  private lastEjectKey = '';
  private readonly upstreamsChangedAt = new Map<string, number>();
  private holdTimer: NodeJS.Timeout | undefined;
  private holdUntil = 0;
  private lastSpendKey = '';
  private readonly spendStatus: SpendStatus;
  readonly informers: Record<Kind, Informer<Resource>>;
  readonly secrets: Informer<SecretObject>;
  readonly leases: Informer<V1Lease>;
  private readonly o: ControllerOptions;
  private timer: NodeJS.Timeout | undefined;
  private resync: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private started = false;
  /** Every informer's first list is in: before that a pass would see, say, ApiKeys without their key Secrets. */
  private synced = false;
  private recovered = false;
  /** Status patches, latest per resource wins. */
  private readonly statuses: WorkQueue;
  /** Key Secrets to create and finalizers to add, each once at a time. */
  private readonly writes: WorkQueue;
  private readonly sentStatus = new Map<string, string>();
  private readonly settled = new Map<string, string>();
  private readonly eventsSent = new Set<string>();
  private idleWaiters: (() => void)[] = [];
  last: Compiled | undefined;
  readonly stats: ControllerStats = { reconciles: 0, snapshotWrites: 0, statusWrites: 0, statusWritesByKind: {}, keysIssued: 0, events: 0, lastWrite: undefined, lastReconcileMs: 0, lastError: undefined };

  constructor(o: ControllerOptions) {
    this.o = o;
    this.spendStatus = new SpendStatus(o.spendStatusEveryMs);
    this.client = o.client;
    this.snapshotClient = o.snapshotClient ?? o.client;
    this.log = o.log ?? quietLogger;
    this.isLeader = o.isLeader ?? (() => true);
    this.writer = new SnapshotWriter(this.snapshotClient, o.writer);
    this.statuses = new WorkQueue(o.statusConcurrency ?? 16, () => this.checkIdle());
    this.writes = new WorkQueue(o.statusConcurrency ?? 16, () => this.checkIdle());
    const common = { kc: o.client.kc, log: this.log, ...o.informer };
    const onChange = (kind: Kind) => (type: ChangeType, obj: Resource | undefined, old: Resource | undefined) => {
      const name = obj?.metadata.name ?? old?.metadata.name;
      // A relist of the ApiKeys brings a full pass: the level-triggered safety net for the keys (every pass
      // compiles the other kinds whole anyway).
      if (type === 'sync' || name === undefined) this.dirty.full ||= kind === 'ApiKey';
      else {
        this.dirty.refs.add(refOf(kind, name));
        if (kind === 'ApiKey') this.dirty.keys.add(name);
      }
      this.schedule();
    };
    this.informers = Object.fromEntries(
      KIND_NAMES.map((kind) => [kind, new Informer<Resource>({ ...common, name: kind, path: o.client.crPath(kind), list: () => o.client.listResources(kind), trim: trimResource, onChange: onChange(kind) })]),
    ) as Record<Kind, Informer<Resource>>;
    this.secrets = new Informer<SecretObject>({
      ...common,
      name: 'Secret',
      path: `/api/v1/namespaces/${o.client.namespace}/secrets`,
      list: () => o.client.listSecrets(),
      trim: trimSecret,
      // Our own snapshot writes come back as events; they need no reconcile.
      onChange: (type, obj, old) => {
        if (type === 'sync') this.dirty.full = true;
        else if (obj?.metadata.labels?.[SNAPSHOT_LABEL] ?? old?.metadata.labels?.[SNAPSHOT_LABEL]) return;
        else {
          // A key Secret: its ApiKey is compiled again. Any other Secret may be a Provider's credential, and
          // every pass compiles the Providers.
          const name = obj?.metadata.name ?? old?.metadata.name ?? '';
          if (name.endsWith('-key')) this.dirty.keys.add(name.slice(0, -'-key'.length));
          const owner = obj?.metadata.labels?.[API_KEY_LABEL] ?? old?.metadata.labels?.[API_KEY_LABEL];
          if (owner) this.dirty.keys.add(owner);
        }
        this.schedule();
      },
    });
    this.leases = new Informer<V1Lease>({
      ...common,
      name: 'Lease',
      path: `/apis/coordination.k8s.io/v1/namespaces/${this.snapshotClient.namespace}/leases`,
      labelSelector: `${GATEWAY_REPORT_LABEL}=true`,
      list: () => this.snapshotClient.listLeases(`${GATEWAY_REPORT_LABEL}=true`),
      onChange: () => this.schedule(),
    });
    if (this.snapshotClient.namespace !== o.client.namespace) {
      this.snapshotSecrets = new Informer<SecretObject>({
        ...common,
        name: 'SnapshotSecret',
        path: `/api/v1/namespaces/${this.snapshotClient.namespace}/secrets`,
        labelSelector: SNAPSHOT_LABEL,
        list: () => this.snapshotClient.listSecrets(SNAPSHOT_LABEL),
        // Only read when a term starts (writer.recover); our own writes need no pass.
        onChange: () => {},
      });
    }
  }

  async start(): Promise<void> {
    this.started = true;
    await Promise.all([...Object.values(this.informers).map((i) => i.start()), this.secrets.start(), this.leases.start(), this.snapshotSecrets?.start()]);
    if (!this.started) return;
    this.synced = true;
    this.dirty.full = true;
    // Not a full pass: what changes with the clock alone is the gateway pods' leases running out (statuses) and
    // keys expiring (the compiler tracks those). Each informer's periodic relist brings a full pass.
    this.resync = setInterval(() => this.schedule(), this.o.resyncMs ?? 30_000);
    this.resync.unref();
    this.schedule(0);
  }

  /**
   * A new leadership term: the informers are warm already, so only the term's own state starts afresh (the last
   * leader, maybe another replica, wrote since): the writer recovers from the snapshot Secrets, caches of what was
   * sent are dropped, and a full pass runs at once.
   */
  takeover(): void {
    this.writer = new SnapshotWriter(this.snapshotClient, this.o.writer);
    this.compiler = new Compiler();
    this.recovered = false;
    this.sentStatus.clear();
    this.settled.clear();
    this.podDependent.clear();
    this.lastPodsKey = '';
    this.lastEjectKey = '';
    this.upstreamsChangedAt.clear();
    this.lastSpendKey = '';
    this.dirty = { full: true, keys: new Set(), refs: new Set() };
    this.schedule(0);
  }

  /** Leadership lost: drop queued writes (each also checks isLeader() before it runs). */
  standDown(): void {
    this.statuses.clear();
    this.writes.clear();
    clearTimeout(this.expiryTimer);
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
  }

  async stop(): Promise<void> {
    this.started = false;
    this.synced = false;
    this.statuses.clear();
    this.writes.clear();
    clearTimeout(this.timer);
    clearInterval(this.resync);
    clearTimeout(this.expiryTimer);
    clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    for (const i of Object.values(this.informers)) i.stop();
    this.secrets.stop();
    this.leases.stop();
    this.snapshotSecrets?.stop();
    await this.running;
  }

  /** Resolves when no reconcile is pending or running and the status queue is empty (tests). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return !this.timer && !this.running && this.statuses.idle && this.writes.idle;
  }

  private checkIdle(): void {
    if (this.isIdle()) for (const w of this.idleWaiters.splice(0)) w();
  }

  schedule(delay = this.o.debounceMs ?? 5): void {
    if (!this.started || !this.synced) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.reconcile().finally(() => {
        this.running = undefined;
        if (this.again) {
          this.again = false;
          this.schedule();
        } else this.checkIdle();
      });
    }, delay);
  }

  private world(): World {
    const list = <S>(k: Kind) => this.informers[k].list() as Resource<S>[];
    return {
      providers: list('Provider'),
      pricingGroups: list('PricingGroup'),
      models: list('Model'),
      organizations: list('Organization'),
      apiKeys: () => this.informers.ApiKey.list() as Resource<ApiKeySpec>[],
      apiKey: (name) => this.informers.ApiKey.get(name) as Resource<ApiKeySpec> | undefined,
      secret: (name) => this.secrets.get(name),
    };
  }

  private async reconcile(): Promise<void> {
    if (!this.isLeader() || !this.started) return;
    const t0 = performance.now();
    this.stats.reconciles++;
    const d = this.dirty;
    this.dirty = { full: false, keys: new Set(), refs: new Set() };
    try {
      const now = Date.now();
      const c = this.compiler.compile(this.world(), now, d.full ? undefined : d.keys);
      const compileMs = performance.now() - t0;
      this.last = c;
      this.countInvalid(c);
      for (const r of c.needsKeySecret) this.issueKey(r);
      const apiKeys = d.full ? this.informers.ApiKey.list() : [...d.keys].map((n) => this.informers.ApiKey.get(n)).filter((r) => r !== undefined);
      for (const [r, finalizers] of finalizersToAdd(apiKeys)) this.setFinalizers(r, finalizers);
      if (!this.recovered) {
        this.writer.recover((this.snapshotSecrets ?? this.secrets).list().filter((s) => s.metadata.labels?.[SNAPSHOT_LABEL]));
        this.recovered = true;
      }
      if (!this.isLeader()) return;
      const w = await this.writer.write(c);
      this.stats.lastWrite = w;
      if (w.shards.length > 0) this.o.metrics?.snapshotWritten(w.shards.reduce((n, sh) => n + sh.bytes, 0), w.shards.length, c.keys.size);
      if (w.written) {
        this.stats.snapshotWrites++;
        const ms = (n: number) => Math.round(n * 10) / 10;
        this.log.info({ generation: w.generation, version: w.version, shardsWritten: w.shardsWritten, shards: w.shards.length, keys: c.keys.size, full: d.full, compileMs: ms(compileMs), serializeMs: ms(w.serializeMs), putMs: ms(w.putMs) }, 'snapshot written');
      }
      if (w.rejectedKeys.size) {
        this.log.error({ rejected: Object.fromEntries(w.rejectedKeys) }, 'the snapshot schema rejected keys the compiler accepted; nothing written');
        this.dirty.full = true;
      } else {
        // The snapshot in the cluster no longer holds deleting keys: their finalizer may go.
        for (const [r, finalizers] of finalizersToRelease(c)) this.setFinalizers(r, finalizers);
      }
      this.updateStatuses(c, now, d.full || c.recompiled === undefined ? undefined : new Set([...c.recompiled, ...d.refs]));
      clearTimeout(this.expiryTimer);
      const delay = expiryDelay(c, Date.now());
      if (delay !== undefined) {
        this.expiryTimer = setTimeout(() => this.schedule(0), delay);
        this.expiryTimer.unref();
      }
      this.stats.lastError = undefined;
    } catch (err) {
      this.stats.lastError = (err as Error).message;
      // What this pass had to do is not known to be done: the next one looks at everything.
      this.dirty.full = true;
      this.log.error({ err: (err as Error).message, status: statusOf(err) }, 'reconcile failed; retrying');
      setTimeout(() => this.schedule(), 500).unref();
    } finally {
      this.stats.lastReconcileMs = performance.now() - t0;
      this.o.metrics?.reconciled('Snapshot', this.stats.lastError === undefined ? 'success' : 'error', this.stats.lastReconcileMs / 1000);
    }
  }

  private countInvalid(c: Compiled): void {
    const m = this.o.metrics;
    if (!m) return;
    for (const [kind, n] of invalidCounts(c)) m.invalidResources(kind, n);
  }

  /** Brings the statuses of `refs` (of every resource when undefined) up to date. */
  private updateStatuses(c: Compiled, now: number, refs: Set<string> | undefined): void {
    const leases = this.leases.list();
    const pods = livePods(leases, now);
    const podsKey = pods.map((p) => `${p.name}=${p.generation}`).sort().join(',');
    if (refs && podsKey !== this.lastPodsKey) for (const ref of this.podDependent) refs.add(ref);
    this.lastPodsKey = podsKey;
    // Ejected targets the pods report: a change looks at every Provider and Model (a few hundred at most).
    const ejections = aggregateEjections(pods);
    const ejectKey = `${pods.length > 0}|${ejections.length > 0 ? pods.length : ''}|${JSON.stringify(ejections)}`;
    if (refs && ejectKey !== this.lastEjectKey) for (const kind of ['Provider', 'Model'] as const) for (const r of this.informers[kind].list()) refs.add(refOf(kind, r.metadata.name));
    this.lastEjectKey = ejectKey;
    // Spend so far (Organization, ApiKey) from the pods' reports: new figures, or figures held back by the rate limit.
    const spend = spendFromLeases(leases);
    const spendKey = stableStringify([...spend]);
    if (refs) {
      if (spendKey !== this.lastSpendKey) for (const ref of spend.keys()) refs.add(ref);
      for (const ref of this.spendStatus.behind) refs.add(ref);
    }
    this.lastSpendKey = spendKey;
    if (this.settled.size > 2 * KIND_NAMES.reduce((n, k) => n + this.informers[k].size, 0) + 1000) this.settled.clear();
    const stamp = new Date(now).toISOString().replace(/\.\d+Z$/, 'Z');
    const todo: [Kind, Resource][] = [];
    if (!refs) for (const kind of KIND_NAMES) for (const r of this.informers[kind].list()) todo.push([kind, r]);
    else {
      for (const ref of refs) {
        const i = ref.indexOf('/');
        const kind = ref.slice(0, i) as Kind;
        const r = this.informers[kind].get(ref.slice(i + 1));
        if (r) todo.push([kind, r]);
        else {
          this.settled.delete(ref);
          this.sentStatus.delete(ref);
          this.podDependent.delete(ref);
          this.upstreamsChangedAt.delete(ref);
          this.spendStatus.forget(ref);
        }
      }
    }
    for (const [kind, r] of todo) {
      if (r.metadata.deletionTimestamp) continue;
      const ref = refOf(kind, r.metadata.name);
      const v = c.verdicts.get(ref);
      if (isMistake(v)) this.warn(kind, r, v.reason, v.message);
      // Nothing that decides this status changed since it was last found current: skip the work (50,000 keys).
      // Applied=True at this generation stays as it is (desiredStatus): then which pods serve what does not count,
      // so a gateway pod reporting a new generation does not send all 50,000 keys through desiredStatus.
      const applied = appliedAtGeneration(r, v);
      if (applied) this.podDependent.delete(ref);
      else this.podDependent.add(ref);
      const keySecret = kind === 'ApiKey' ? this.secrets.get(keySecretName(r.metadata.name)) : undefined;
      const upstreams = kind === 'Provider' || kind === 'Model' ? this.upstreamsHealthy(kind, r, ref, ejections, pods, now) : undefined;
      const shownSpend = kind === 'Organization' || kind === 'ApiKey' ? this.spendStatus.pick(ref, spend.get(ref), (r.status as { spend?: unknown } | undefined)?.spend, now) : undefined;
      const inputs = statusInputs(r, v, applied, this.writer.includedSince.get(ref), podsKey, keySecret, shownSpend) + (upstreams ? `|${upstreams.condition.status}|${upstreams.condition.message}` : '');
      if (this.settled.get(ref) === inputs) continue;
      const desired = desiredStatus(r, v, this.writer.includedSince.get(ref), pods, statusExtra(kind, r, v, keySecret, shownSpend), stamp, upstreams ? [upstreams.condition] : []);
      if (sameStatus(r.status, desired)) {
        this.sentStatus.delete(ref);
        this.settled.set(ref, inputs);
        continue;
      }
      this.settled.delete(ref);
      // Written already and its echo not seen yet: do not write it again.
      const key = statusKey(desired);
      if (this.sentStatus.get(ref) === key) continue;
      this.sentStatus.set(ref, key);
      if (upstreams?.changed) this.upstreamsChangedAt.set(ref, now);
      this.queueStatus(kind, r.metadata.name, desired);
    }
  }

  /**
   * UpstreamsHealthy for a Provider or Model, rate-limited per object: a change held back brings a pass (for that
   * object) once its interval is over.
   */
  private upstreamsHealthy(kind: 'Provider' | 'Model', r: Resource, ref: string, ejections: Ejection[], pods: ReturnType<typeof livePods>, now: number): { condition: Omit<Condition, 'lastTransitionTime'>; changed: boolean } {
    const current = r.status?.conditions?.find((c) => c.type === 'UpstreamsHealthy');
    const held = holdCondition(upstreamsCondition(kind, r, ejections, pods), current, this.upstreamsChangedAt.get(ref), now, this.o.upstreamsConditionEveryMs ?? 30_000);
    if (held.retryInMs !== undefined) {
      this.dirty.refs.add(ref);
      const at = now + held.retryInMs + 5;
      if (!this.holdTimer || at < this.holdUntil) {
        clearTimeout(this.holdTimer);
        this.holdUntil = at;
        this.holdTimer = setTimeout(() => {
          this.holdTimer = undefined;
          this.schedule(0);
        }, held.retryInMs + 5);
        this.holdTimer.unref();
      }
    }
    return held;
  }

  private queueStatus(kind: Kind, name: string, status: Record<string, unknown>): void {
    const ref = refOf(kind, name);
    this.statuses.set(ref, async () => {
      if (!this.isLeader() || !this.started) return;
      try {
        await this.client.patchStatus(kind, name, status);
        this.stats.statusWrites++;
        this.stats.statusWritesByKind[kind] = (this.stats.statusWritesByKind[kind] ?? 0) + 1;
      } catch (err) {
        this.sentStatus.delete(ref);
        this.dirty.refs.add(ref);
        if (statusOf(err) !== 404) {
          this.log.warn({ resource: ref, err: (err as Error).message }, 'status update failed; the next pass retries');
          setTimeout(() => this.schedule(), 500).unref();
        }
      }
    });
  }

  private warn(kind: Kind, r: Resource, reason: string, message: string): void {
    const key = `${r.metadata.uid}|${r.metadata.generation}|${reason}|${message}`;
    if (this.eventsSent.has(key)) return;
    if (this.eventsSent.size > 10_000) this.eventsSent.clear();
    this.eventsSent.add(key);
    this.stats.events++;
    this.client.event(kind, r, 'Warning', reason, message).catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'event not recorded'));
  }

  private track(key: string, work: () => Promise<void>): void {
    this.writes.add(key, work);
  }

  /** Generates the key once, into a Secret the ApiKey owns (deleting the ApiKey deletes it). */
  private issueKey(r: Resource<ApiKeySpec>): void {
    const name = keySecretName(r.metadata.name);
    this.track(`issue:${name}`, async () => {
      if (!this.isLeader() || !this.started) return;
      const g = generateApiKey();
      try {
        await this.client.createSecret({
          metadata: {
            name,
            labels: { [API_KEY_LABEL]: r.metadata.name, 'app.kubernetes.io/part-of': 'tollgate', 'app.kubernetes.io/managed-by': 'tollgate-operator' },
            annotations: { 'tollgate.dev/prefix': g.prefix },
            ownerReferences: [{ apiVersion: API_VERSION, kind: 'ApiKey', name: r.metadata.name, uid: r.metadata.uid!, controller: true, blockOwnerDeletion: true }],
          },
          type: 'Opaque',
          stringData: { key: g.key },
        });
        this.stats.keysIssued++;
      } catch (err) {
        // 409: it exists already (our cache lags); never overwrite a key.
        if (statusOf(err) !== 409) this.log.warn({ secret: name, err: (err as Error).message }, 'key Secret not created; the next pass retries');
      }
    });
  }

  private setFinalizers(r: Resource<unknown>, finalizers: string[]): void {
    this.track(`finalizer:${r.metadata.name}:${r.metadata.resourceVersion}`, async () => {
      if (!this.isLeader() || !this.started) return;
      try {
        await this.client.setFinalizers('ApiKey', r.metadata.name, r.metadata.resourceVersion!, finalizers);
      } catch (err) {
        // 422 (the resourceVersion test failed) or 404: a newer event is on its way and brings another pass.
        if (![404, 409, 422].includes(statusOf(err))) this.log.warn({ apiKey: r.metadata.name, err: (err as Error).message }, 'finalizer update failed');
      }
    });
  }
}

/**
 * What the caches keep of each object is what a pass reads; at 50,000 ApiKeys and their Secrets every field left
 * out is 50,000 copies fewer. Kind, apiVersion and namespace are known from the informer; a Secret's uid, creation
 * time and type are never read, nor an owner reference's apiVersion and flags (only its kind, name and uid).
 * New objects rather than deletions: V8 keeps an object that lost properties in a slower, larger form.
 */
function trimResource(r: Resource): Resource {
  const m = r.metadata;
  const meta: Resource['metadata'] = { name: m.name, uid: m.uid, resourceVersion: m.resourceVersion, generation: m.generation, creationTimestamp: m.creationTimestamp };
  if (m.deletionTimestamp) meta.deletionTimestamp = m.deletionTimestamp;
  if (m.finalizers) meta.finalizers = m.finalizers.map((f) => intern(f));
  if (m.labels) meta.labels = m.labels;
  if (m.annotations) meta.annotations = { ...m.annotations };
  const out: Resource = { metadata: meta, spec: r.spec };
  if (r.status) out.status = r.status.conditions ? { ...r.status, conditions: r.status.conditions.map(internCondition) } : r.status;
  return out;
}

/**
 * Condition fields repeat across 50,000 ApiKeys ("Ready", "True", "Served", "2/2 pods serve generation 7", one
 * transition time), yet JSON.parse gives every object its own copies: one shared string each halves what a
 * condition costs. Unique texts (a key's Ready message) are shared with nothing and kept as they are.
 */
const pool = new Map<string, string>();
function intern(s: string): string;
function intern(s: string | undefined): string | undefined;
function intern(s: string | undefined): string | undefined {
  if (s === undefined || s.length > 64) return s;
  const v = pool.get(s);
  if (v !== undefined) return v;
  // Bounded: the set of texts that repeat is small; a pool that fills up with one-offs starts again.
  if (pool.size >= 4096) pool.clear();
  pool.set(s, s);
  return s;
}

function internCondition(c: Condition): Condition {
  const out: Condition = { type: intern(c.type), status: intern(c.status) as Condition['status'], reason: intern(c.reason), message: intern(c.message) };
  if (c.observedGeneration !== undefined) out.observedGeneration = c.observedGeneration;
  if (c.lastTransitionTime !== undefined) out.lastTransitionTime = intern(c.lastTransitionTime);
  return out;
}

function trimSecret(s: SecretObject): SecretObject {
  const m = s.metadata;
  const meta: SecretObject['metadata'] = { name: m.name, resourceVersion: m.resourceVersion };
  if (m.deletionTimestamp) meta.deletionTimestamp = m.deletionTimestamp;
  if (m.labels) meta.labels = m.labels;
  if (m.annotations) meta.annotations = { ...m.annotations };
  if (m.ownerReferences) meta.ownerReferences = m.ownerReferences.map((ref) => ({ kind: intern(ref.kind), name: ref.name, uid: ref.uid }) as typeof ref);
  return { metadata: meta, data: s.data };
}
