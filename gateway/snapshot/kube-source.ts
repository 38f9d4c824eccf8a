// Cluster mode: the snapshot comes from the operator's Secrets, read through the Kubernetes API with a watch.
// A new snapshot is assembled from the manifest and its key shards, every part's checksum verified, validated
// with parseSnapshot (a shard together with the base it refers to; across shards, no id or key twice) and only
// then switched to; anything less keeps the last good snapshot serving. The pod reports the snapshot generation
// it serves on its own Lease, which the operator counts (condition Applied). Staleness is bounded: once the watch
// has been broken (or the API silent) longer than `staleAfterMs`, the pod marks its snapshot stale, so /readyz
// fails and the Service stops sending it traffic (and, optionally, it refuses requests).
import { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { V1Lease } from '@kubernetes/client-node';
import { hostname } from 'node:os';
import type { Logger } from './file-source.ts';
import type { SnapshotHolder } from './holder.ts';
import { Informer, shareConnections, statusOf } from '../../kube/informer.ts';
import type { KeyShard, SnapshotManifest } from './kube-format.ts';
import { GATEWAY_REPORT_LABEL, gatewayLeaseName, gunzipBase64, MANIFEST_SECRET, SERVED_GENERATION_ANNOTATION, SERVED_VERSION_ANNOTATION, sha256, SNAPSHOT_LABEL, SPEND_ANNOTATION, STALE_AFTER_ANNOTATION, STALE_ANNOTATION } from './kube-format.ts';
import type { RuntimeBase, RuntimeKey } from './runtime.ts';
import type { Snapshot } from './schema.ts';
import { compileBase, compileKeys } from './runtime.ts';
import { parseSnapshot } from './validate.ts';
import type { EjectedTarget } from './kube-ejections.ts';
import { EJECTED_ANNOTATION, encodeEjected } from './kube-ejections.ts';
import { KeyIndex } from './key-index.ts';
import type { IndexedShard } from './key-index.ts';

export interface KubeSourceOptions {
  holder: SnapshotHolder;
  log: Logger;
  /** Defaults: in-cluster config when KUBERNETES_SERVICE_HOST is set, else KUBECONFIG / ~/.kube/config. */
  kubeConfig?: KubeConfig;
  /**
   * Where the snapshot Secrets are. Defaults: $TOLLGATE_SNAPSHOT_NAMESPACE, $TOLLGATE_NAMESPACE (the operator's
   * watched namespace, where it writes them unless told otherwise), $POD_NAMESPACE, the kubeconfig's, "default".
   */
  namespace?: string;
  /** Defaults: $POD_NAME, then the hostname. */
  podName?: string;
  /** The report Lease is renewed this often (default 5 s) and counts as gone after leaseDurationSeconds (15). */
  reportEveryMs?: number;
  leaseDurationSeconds?: number;
  /** Staleness bound (default $TOLLGATE_STALE_AFTER_SECONDS, else the lease duration). */
  staleAfterMs?: number;
  /** Refuse requests while stale (default $TOLLGATE_STALE_REFUSE === "true"). */
  refuseWhenStale?: boolean;
  informer?: { relistMs?: number; lastSeenLimitMs?: number; backoffBaseMs?: number; backoffMaxMs?: number };
  /**
   * The upstream targets this pod has ejected, reported on each Lease renewal (the operator shows them as a
   * condition on the Provider and Model). The gateway passes its health registry's.
   */
  ejected?: () => Iterable<EjectedTarget>;
  /** Spend per budget scope from the last ledger reconciliation, reported on the Lease for the operator to show. */
  spendReport?: () => string | undefined;
}

export interface KubeSource {
  namespace: string;
  podName: string;
  /** Resolves when the first snapshot is being served. */
  loaded: Promise<void>;
  /** True while the watch on the snapshot Secrets is open. */
  connected(): boolean;
  /** Why the snapshot may be stale, or undefined. */
  stale(): string | undefined;
  close(): Promise<void>;
}

interface SecretLike {
  metadata?: { name?: string; resourceVersion?: string };
  data?: Record<string, string>;
}

export function defaultKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}

export function startKubeSource(o: KubeSourceOptions): KubeSource {
  const kc = shareConnections(o.kubeConfig ?? defaultKubeConfig());
  const namespace = o.namespace || process.env.TOLLGATE_SNAPSHOT_NAMESPACE || process.env.TOLLGATE_NAMESPACE || process.env.POD_NAMESPACE || kc.getContextObject(kc.getCurrentContext())?.namespace || 'default';
  const podName = o.podName ?? process.env.POD_NAME ?? hostname();
  const core = kc.makeApiClient(CoreV1Api);
  const leases = kc.makeApiClient(CoordinationV1Api);
  let rejectedVersion = '';
  let waitingFor = '';
  let pending: NodeJS.Immediate | undefined;
  let markLoaded: () => void = () => {};
  const loaded = new Promise<void>((resolve) => (markLoaded = resolve));

  const informer = new Informer<SecretLike>({
    name: 'snapshot-secrets',
    kc,
    path: `/api/v1/namespaces/${namespace}/secrets`,
    labelSelector: SNAPSHOT_LABEL,
    list: () => core.listNamespacedSecret({ namespace, labelSelector: SNAPSHOT_LABEL }) as Promise<{ items: SecretLike[] }>,
    log: o.log,
    ...o.informer,
    onChange: () => {
      pending ??= setImmediate(() => {
        pending = undefined;
        assemble();
      });
    },
  });

  const text = (s: SecretLike | undefined, key: string) => (s?.data?.[key] === undefined ? undefined : Buffer.from(s.data[key], 'base64').toString('utf8'));

  function wait(why: string): void {
    if (waitingFor !== why) o.log.info({ namespace, reason: why }, 'snapshot incomplete; still serving the last good one');
    waitingFor = why;
  }

  // Parts already checked, by checksum: a change to one key rewrites one shard, and only that shard is
  // gunzipped, parsed, validated and compiled again. A shard's validity depends on the base only through its
  // organization ids, so a price change validates no shard again; it only re-links the keys to the new base.
  let base: { checksum: string; raw: Record<string, unknown>; orgs: string; runtime: RuntimeBase } | undefined;
  const shardCache = new Map<string, { orgs: string; keys: Snapshot['apiKeys']; runtime: RuntimeBase | undefined; pairs: [string, RuntimeKey][] }>();
  // The served key index, kept across snapshots while the base runtime is the same: a changed shard's keys leave it
  // and its new keys enter, so one key change costs one shard rather than 50,000 map entries.
  let index: KeyIndex | undefined;

  function assemble(): void {
    const t0 = performance.now();
    let parsedShards = 0;
    const manifestText = text(informer.get(MANIFEST_SECRET), 'manifest.json');
    const baseText = text(informer.get(MANIFEST_SECRET), 'base.json');
    if (!manifestText || !baseText) return wait(`Secret ${MANIFEST_SECRET} not found`);
    let manifest: SnapshotManifest;
    try {
      manifest = JSON.parse(manifestText) as SnapshotManifest;
    } catch {
      return wait(`Secret ${MANIFEST_SECRET} holds no valid manifest`);
    }
    if (o.holder.current?.version === manifest.version || manifest.version === rejectedVersion) return;
    if (sha256(baseText) !== manifest.baseChecksum) return wait(`base of ${manifest.version} does not match its checksum`);
    const reject = (err: string) => {
      rejectedVersion = manifest.version;
      o.log.error({ version: manifest.version, err }, 'snapshot rejected; still serving the last good snapshot');
    };
    if (sha256(`${manifest.baseChecksum}|${manifest.shards.map((s) => s.checksum).join(',')}`) !== manifest.version) return reject('the version is not the checksum of its parts');
    try {
      if (base?.checksum !== manifest.baseChecksum) {
        const raw = JSON.parse(baseText) as Record<string, unknown>;
        const parsed = parseSnapshot({ ...raw, apiKeys: [] }, `Secret ${namespace}/${MANIFEST_SECRET}`);
        const orgs = parsed.organizations.map((org) => org.id).sort().join(',');
        base = { checksum: manifest.baseChecksum, raw, orgs, runtime: compileBase(parsed, { warn: (m) => o.log.warn({ namespace }, m) }) };
      }
    } catch (err) {
      return reject((err as Error).message);
    }
    // Every shard of the manifest, checked (its checksum, the schema with the base) and compiled.
    const parts: IndexedShard[] = [];
    for (const sh of manifest.shards) {
      // A shard is checked together with the base it refers to (its keys' organizations).
      let shard = shardCache.get(sh.checksum);
      if (shard?.orgs !== base.orgs) {
        const data = informer.get(sh.name)?.data?.['keys.json.gz'];
        if (!data) return wait(`shard ${sh.name} of ${manifest.version} not there yet`);
        const json = gunzipBase64(data);
        // Shards are written before the manifest: a mismatch is a shard that is newer or older than it.
        if (sha256(json) !== sh.checksum) return wait(`shard ${sh.name} does not match manifest ${manifest.version} yet`);
        try {
          const parsed = parseSnapshot({ ...base.raw, apiKeys: (JSON.parse(json) as KeyShard).keys }, `Secret ${namespace}/${sh.name}`);
          shard = { orgs: base.orgs, keys: parsed.apiKeys, runtime: undefined, pairs: [] };
        } catch (err) {
          return reject((err as Error).message);
        }
        shardCache.set(sh.checksum, shard);
        parsedShards++;
      }
      if (shard.runtime !== base.runtime) {
        shard.pairs = compileKeys(shard.keys, base.runtime.organizations);
        shard.runtime = base.runtime;
      }
      parts.push({ id: `${sh.name}|${sh.checksum}`, pairs: shard.pairs });
    }
    // Same base: only the shards that changed move in the index. A new base (prices, organizations) re-links every
    // key to it, in a new index; the one served until now stays as it is if that fails.
    let why: string | undefined;
    if (index?.runtime === base.runtime) why = index.update(parts);
    else {
      const built = KeyIndex.build(parts, base.runtime);
      why = built.problem;
      if (!why) index = built;
    }
    if (why || !index) return reject(why ?? 'no key index');
    const used = new Set(manifest.shards.map((sh) => sh.checksum));
    for (const key of shardCache.keys()) if (!used.has(key)) shardCache.delete(key);
    const keysByHash = index.byHash;
    o.holder.set({ version: manifest.version, generation: manifest.generation, loadedAt: Date.now(), ...base.runtime, keysByHash });
    waitingFor = '';
    o.log.info({ version: manifest.version, generation: manifest.generation, keys: keysByHash.size, shardsParsed: parsedShards, assembleMs: Math.round((performance.now() - t0) * 10) / 10 }, 'snapshot loaded from the cluster');
    markLoaded();
    void report();
  }

  // The report Lease: renewed periodically, and at once when the served snapshot changes.
  const leaseName = gatewayLeaseName(podName);
  const duration = o.leaseDurationSeconds ?? 15;
  let lease: V1Lease | undefined;
  let reporting: Promise<void> | undefined;
  let reportAgain = false;
  let closed = false;
  async function reportOnce(): Promise<void> {
    const snap = o.holder.current;
    const annotations: Record<string, string> = {
      [SERVED_GENERATION_ANNOTATION]: String(snap?.generation ?? -1),
      [SERVED_VERSION_ANNOTATION]: snap?.version ?? '',
      [STALE_AFTER_ANNOTATION]: String(Math.ceil(staleAfterMs / 1000)),
      [STALE_ANNOTATION]: String(o.holder.stale !== undefined),
      // Rides on the renewal the Lease gets anyway: no write of its own, at most one renewal period late.
      [EJECTED_ANNOTATION]: o.ejected ? encodeEjected(o.ejected()) : '',
    };
    const spend = o.spendReport?.();
    if (spend !== undefined) annotations[SPEND_ANNOTATION] = spend;
    const spec = { holderIdentity: podName, leaseDurationSeconds: duration, renewTime: new Date() };
    const labels = { [GATEWAY_REPORT_LABEL]: 'true', 'app.kubernetes.io/part-of': 'tollgate' };
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        if (!lease) {
          try {
            lease = await leases.readNamespacedLease({ namespace, name: leaseName });
          } catch (err) {
            if (statusOf(err) !== 404) throw err;
            lease = await leases.createNamespacedLease({ namespace, body: { metadata: { name: leaseName, labels, annotations }, spec } });
            contacted = Date.now();
            return;
          }
        }
        lease = await leases.replaceNamespacedLease({ namespace, name: leaseName, body: { ...lease, metadata: { ...lease.metadata, labels: { ...lease.metadata?.labels, ...labels }, annotations: { ...lease.metadata?.annotations, ...annotations } }, spec: { ...lease.spec, ...spec } } });
        contacted = Date.now();
        return;
      } catch (err) {
        lease = undefined;
        if (statusOf(err) !== 409) throw err;
      }
    }
  }
  async function report(): Promise<void> {
    if (closed) return;
    if (reporting) {
      reportAgain = true;
      return reporting;
    }
    reporting = reportOnce()
      .catch((err: unknown) => o.log.warn({ err: (err as Error).message }, 'could not report the served snapshot'))
      .finally(() => {
        reporting = undefined;
        if (reportAgain) {
          reportAgain = false;
          void report();
        }
      });
    return reporting;
  }
  const renew = setInterval(() => void report(), o.reportEveryMs ?? 5000);
  renew.unref();

  // Bounded staleness. The watch may be closed (counted from when it broke) or silently dead (no event, no
  // bookmark and no successful Lease renewal: the API is unreachable); either, past the bound, makes the pod stale.
  const staleAfterMs = o.staleAfterMs ?? (Number(process.env.TOLLGATE_STALE_AFTER_SECONDS) > 0 ? Number(process.env.TOLLGATE_STALE_AFTER_SECONDS) * 1000 : duration * 1000);
  o.holder.refuseWhenStale = o.refuseWhenStale ?? process.env.TOLLGATE_STALE_REFUSE === 'true';
  let contacted = Date.now();
  function checkStale(): void {
    const now = Date.now();
    const broken = informer.brokenSince === undefined ? 0 : now - informer.brokenSince;
    const silent = now - Math.max(contacted, informer.lastSeen);
    const why =
      o.holder.current === undefined ? undefined
      : broken > staleAfterMs ? `snapshot watch broken for ${Math.round(broken / 1000)} s (bound ${staleAfterMs / 1000} s)`
      : silent > staleAfterMs ? `no contact with the Kubernetes API for ${Math.round(silent / 1000)} s (bound ${staleAfterMs / 1000} s)`
      : undefined;
    if ((why === undefined) === (o.holder.stale === undefined)) {
      if (why !== undefined) o.holder.stale = why;
      return;
    }
    o.holder.stale = why;
    if (why) o.log.error({ namespace, reason: why }, 'snapshot may be stale: not ready until the watch is back');
    else o.log.info({ namespace }, 'snapshot watch back: ready again');
    void report();
  }
  const staleTimer = setInterval(checkStale, Math.max(50, Math.min(1000, staleAfterMs / 10)));
  staleTimer.unref();

  void informer.start();
  return {
    namespace,
    podName,
    loaded,
    connected: () => informer.connected,
    stale: () => o.holder.stale,
    async close() {
      closed = true;
      clearInterval(renew);
      clearInterval(staleTimer);
      if (pending) clearImmediate(pending);
      informer.stop();
      await reporting;
      // A pod that leaves says so: the operator stops counting it at once instead of after its Lease and bound run out.
      await Promise.race([leases.deleteNamespacedLease({ namespace, name: leaseName }).catch(() => {}), new Promise((r) => setTimeout(r, 2000).unref())]);
    },
  };
}

