// Writes the compiled snapshot into Secrets (layout: gateway/snapshot/kube-format.ts). Key shards are chosen by
// a hash of the key name, so a change to one ApiKey rewrites one shard; unchanged shards are not touched.
// Every shard is validated with the gateway's snapshot schema (together with the base it refers to) first.
import type { KeyShard, SnapshotKey, SnapshotManifest } from '../gateway/snapshot/kube-format.ts';
import { CHECKSUM_ANNOTATION, encodeJson, gunzipBase64, gzipBase64, MANIFEST_SECRET, sha256, shardOf, shardSecretName, SNAPSHOT_LABEL } from '../gateway/snapshot/kube-format.ts';
import { snapshotSchema } from '../gateway/snapshot/schema.ts';
import { formatIssues } from '../gateway/snapshot/validate.ts';
import type { Compiled } from './compile.ts';
import type { SecretObject } from './kinds.ts';
import { refOf } from './kinds.ts';
import type { KubeClient } from './kube.ts';
import { statusOf } from './kube.ts';

export interface WriterOptions {
  /** Upper bound for one shard's data as stored (base64 of gzip), well under the 1 MiB object limit. */
  maxShardBytes?: number;
  /**
   * Uncompressed JSON per shard the shard count aims for (default 128 KiB, ~500 keys): what one key change costs
   * the operator (validate, gzip, write) and every gateway (gunzip, parse, validate) is one shard of this size;
   * the manifest, rewritten with every change, grows by ~110 bytes per shard (128 shards at 50,000 keys).
   */
  targetShardJsonBytes?: number;
  concurrency?: number;
}

export interface WriteResult {
  written: boolean;
  generation: number;
  version: string;
  shardsWritten: number;
  shards: { name: string; keys: number; bytes: number }[];
  /** A key whose shard the schema rejected (never expected: compile checks first). */
  rejectedKeys: Map<string, string>;
  /** CPU-bound part (partition, validate, JSON, gzip) and the API writes, in ms: the stages docs/kubernetes.md quotes. */
  serializeMs: number;
  putMs: number;
}

interface ShardState {
  members: Map<string, { entry: SnapshotKey; generation: number }>;
  checksum: string;
  bytes: number;
  data: string;
}

const LABELS = { [SNAPSHOT_LABEL]: 'shard', 'app.kubernetes.io/part-of': 'tollgate', 'app.kubernetes.io/managed-by': 'tollgate-operator' };

export class SnapshotWriter {
  private readonly client: KubeClient;
  private readonly maxShardBytes: number;
  private readonly targetShardJsonBytes: number;
  private readonly concurrency: number;
  private shardCount = 0;
  private shards: ShardState[] = [];
  private baseChecksum = '';
  private orgFingerprint = '';
  /** Checksums of what is in the cluster now, by Secret name. */
  private readonly stored = new Map<string, string>();
  generation = 0;
  version = '';
  /** The generation each resource is in the cluster's snapshot with: "Kind/name" (ApiKeys apart, by name). */
  private readonly lastGenerations = new Map<string, number>();
  private readonly lastKeyGenerations = new Map<string, number>();
  /** "Kind/name" → the snapshot generation from which its current metadata.generation is served. */
  readonly includedSince = new Map<string, number>();

  constructor(client: KubeClient, opts: WriterOptions = {}) {
    this.client = client;
    this.maxShardBytes = opts.maxShardBytes ?? 700 * 1024;
    this.targetShardJsonBytes = opts.targetShardJsonBytes ?? 128 * 1024;
    this.concurrency = opts.concurrency ?? 8;
  }

  /** Picks up where a previous leader left off, from the snapshot Secrets as they are. */
  recover(secrets: SecretObject[]): void {
    for (const s of secrets) {
      const sum = s.metadata.annotations?.[CHECKSUM_ANNOTATION];
      if (sum) this.stored.set(s.metadata.name, sum);
    }
    const manifestSecret = secrets.find((s) => s.metadata.name === MANIFEST_SECRET);
    const raw = manifestSecret?.data?.['manifest.json'];
    if (!raw) return;
    try {
      const m = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as SnapshotManifest;
      this.generation = m.generation;
      this.version = m.version;
      for (const [ref, g] of Object.entries(m.generations)) {
        this.lastGenerations.set(ref, g);
        this.includedSince.set(ref, m.generation);
      }
      for (const sh of m.shards) {
        const data = secrets.find((s) => s.metadata.name === sh.name)?.data?.['keys.json.gz'];
        if (!data) continue;
        const shard = JSON.parse(gunzipBase64(data)) as KeyShard;
        for (const [name, g] of Object.entries(shard.generations)) {
          this.lastKeyGenerations.set(name, g);
          this.includedSince.set(refOf('ApiKey', name), m.generation);
        }
      }
    } catch {
      // An unreadable manifest is simply rewritten.
    }
  }

  async write(c: Compiled): Promise<WriteResult> {
    const t0 = performance.now();
    const baseJson = encodeJson(c.base);
    const orgFingerprint = c.base.organizations.map((o) => o.id).join(',');
    // A pass that changed a few keys keeps the count (a shard that outgrows its limit still doubles it below);
    // full passes (start, relist, the periodic resync) size it to the number of keys.
    const incremental = c.changedKeys !== undefined && this.shardCount > 0 && orgFingerprint === this.orgFingerprint;
    const needed = incremental ? this.shardCount : Math.max(1, 2 ** Math.ceil(Math.log2(Math.max(1, Math.ceil(this.estimateJsonBytes(c) / this.targetShardJsonBytes)))));
    // Grow at once; shrink only when far too many, so the count does not flap.
    let count = this.shardCount === 0 || needed > this.shardCount || needed * 4 <= this.shardCount ? needed : this.shardCount;
    const rejectedKeys = new Map<string, string>();
    let next: ShardState[];
    let dirty: Set<number>;
    for (;;) {
      ({ next, dirty } = incremental && count === this.shardCount ? this.patch(c, c.changedKeys!) : this.partition(c, count));
      if (count !== this.shardCount || orgFingerprint !== this.orgFingerprint) for (let i = 0; i < count; i++) dirty.add(i);
      for (const i of dirty) this.serialize(next[i], c, rejectedKeys);
      if (rejectedKeys.size > 0) return { written: false, generation: this.generation, version: this.version, shardsWritten: 0, shards: [], rejectedKeys, serializeMs: performance.now() - t0, putMs: 0 };
      if (next.every((s) => s.bytes <= this.maxShardBytes) || count >= 4096) break;
      count *= 2;
    }
    const version = sha256(`${baseJson.checksum}|${next.map((s) => s.checksum).join(',')}`);
    const summary = next.map((s, i) => ({ name: shardSecretName(i), keys: s.members.size, bytes: s.bytes }));
    if (version === this.version && this.stored.get(MANIFEST_SECRET) === version) {
      this.commitState(next, count, baseJson.checksum, orgFingerprint);
      return { written: false, generation: this.generation, version, shardsWritten: 0, shards: summary, rejectedKeys, serializeMs: performance.now() - t0, putMs: 0 };
    }
    // Shards first, manifest last: a pod never sees a manifest whose shards are not there yet.
    const toWrite = [...dirty].filter((i) => this.stored.get(shardSecretName(i)) !== next[i].checksum);
    const t1 = performance.now();
    await this.pool(toWrite, async (i) => {
      const s = next[i];
      await this.put({ metadata: { name: shardSecretName(i), labels: LABELS, annotations: { [CHECKSUM_ANNOTATION]: s.checksum } }, type: 'Opaque', data: { 'keys.json.gz': s.data } }, s.checksum);
    });
    const generation = this.generation + 1;
    const generations: Record<string, number> = {};
    for (const [ref, g] of c.generations) if (!ref.startsWith('ApiKey/')) generations[ref] = g;
    const manifest: SnapshotManifest = {
      format: 1,
      version,
      generation,
      baseChecksum: baseJson.checksum,
      shards: next.map((s, i) => ({ name: shardSecretName(i), checksum: s.checksum, keys: s.members.size })),
      generations,
      writtenAt: new Date().toISOString(),
    };
    await this.put(
      {
        metadata: { name: MANIFEST_SECRET, labels: { ...LABELS, [SNAPSHOT_LABEL]: 'manifest' }, annotations: { [CHECKSUM_ANNOTATION]: version } },
        type: 'Opaque',
        data: { 'manifest.json': Buffer.from(JSON.stringify(manifest)).toString('base64'), 'base.json': Buffer.from(baseJson.text).toString('base64') },
      },
      version,
    );
    // Shards the manifest no longer names.
    for (const name of [...this.stored.keys()]) {
      const m = name.match(/^tollgate-snapshot-keys-(\d+)$/);
      if (m && Number(m[1]) >= count) {
        try {
          await this.client.deleteSecret(name);
        } catch (err) {
          if (statusOf(err) !== 404) throw err;
        }
        this.stored.delete(name);
      }
    }
    this.generation = generation;
    this.version = version;
    this.commitState(next, count, baseJson.checksum, orgFingerprint);
    const since = (last: Map<string, number>, id: string, ref: string, g: number | undefined) => {
      if (g === undefined) {
        last.delete(id);
        this.includedSince.delete(ref);
      } else if (last.get(id) !== g) {
        last.set(id, g);
        this.includedSince.set(ref, generation);
      }
    };
    for (const [ref, g] of c.generations) since(this.lastGenerations, ref, ref, g);
    for (const ref of [...this.lastGenerations.keys()]) if (!c.generations.has(ref)) since(this.lastGenerations, ref, ref, undefined);
    // Only the keys that changed, unless this was a full pass.
    for (const name of c.changedKeys ?? c.keyGenerations.keys()) since(this.lastKeyGenerations, name, refOf('ApiKey', name), c.keyGenerations.get(name));
    if (!c.changedKeys) for (const name of [...this.lastKeyGenerations.keys()]) if (!c.keyGenerations.has(name)) since(this.lastKeyGenerations, name, refOf('ApiKey', name), undefined);
    return { written: true, generation, version, shardsWritten: toWrite.length, shards: summary, rejectedKeys, serializeMs: t1 - t0, putMs: performance.now() - t1 };
  }

  private commitState(next: ShardState[], count: number, baseChecksum: string, orgFingerprint: string): void {
    this.shards = next;
    this.shardCount = count;
    this.baseChecksum = baseChecksum;
    this.orgFingerprint = orgFingerprint;
  }

  private estimateJsonBytes(c: Compiled): number {
    // About 260 bytes per key entry; exact enough to pick a power-of-two shard count.
    let n = 0;
    for (const k of c.keys.values()) n += 200 + k.id.length + (k.name?.length ?? 0) + k.project.length + k.organization.length;
    return n;
  }

  /** Puts each key in its shard; a shard is dirty when any member's entry (object identity from the compile memo) or generation changed. */
  private partition(c: Compiled, count: number): { next: ShardState[]; dirty: Set<number> } {
    const next: ShardState[] = Array.from({ length: count }, () => ({ members: new Map(), checksum: '', bytes: 0, data: '' }));
    for (const [name, entry] of c.keys) next[shardOf(name, count)].members.set(name, { entry, generation: c.keyGenerations.get(name) ?? 0 });
    const dirty = new Set<number>();
    for (let i = 0; i < count; i++) {
      const s = next[i];
      const prev = count === this.shardCount ? this.shards[i] : undefined;
      let same = prev !== undefined && prev.members.size === s.members.size;
      if (prev && same) {
        for (const [name, m] of s.members) {
          const p = prev.members.get(name);
          if (!p || p.entry !== m.entry || p.generation !== m.generation) {
            same = false;
            break;
          }
        }
      }
      if (!prev || !same) {
        dirty.add(i);
        continue;
      }
      s.checksum = prev.checksum;
      s.bytes = prev.bytes;
      s.data = prev.data;
    }
    return { next, dirty };
  }

  /** The shards of the changed keys, from the last state; the others are the same objects as before. */
  private patch(c: Compiled, changed: ReadonlySet<string>): { next: ShardState[]; dirty: Set<number> } {
    const next = [...this.shards];
    const dirty = new Set<number>();
    for (const name of changed) {
      const i = shardOf(name, this.shardCount);
      if (!dirty.has(i)) {
        dirty.add(i);
        next[i] = { members: new Map(this.shards[i].members), checksum: '', bytes: 0, data: '' };
      }
      const entry = c.keys.get(name);
      if (entry) next[i].members.set(name, { entry, generation: c.keyGenerations.get(name) ?? 0 });
      else next[i].members.delete(name);
    }
    return { next, dirty };
  }

  private serialize(s: ShardState, c: Compiled, rejected: Map<string, string>): void {
    const names = [...s.members.keys()].sort();
    const keys = names.map((n) => s.members.get(n)!.entry);
    // The gateway's schema checks the shard with the base it refers to (organizations, duplicate hashes).
    const r = snapshotSchema.safeParse({ ...c.base, apiKeys: keys });
    if (!r.success) {
      for (const issue of r.error.issues) {
        if (issue.path[0] === 'apiKeys' && typeof issue.path[1] === 'number') rejected.set(names[issue.path[1]], formatIssues({ issues: [{ ...issue, path: issue.path.slice(2) }] } as never)[0]);
        else rejected.set('(base)', issue.message);
      }
      return;
    }
    const shard: KeyShard = { keys, generations: Object.fromEntries(names.map((n) => [n, s.members.get(n)!.generation])) };
    const { text, checksum } = encodeJson(shard);
    s.checksum = checksum;
    s.data = gzipBase64(text);
    s.bytes = s.data.length;
  }

  private async put(secret: SecretObject, checksum: string): Promise<void> {
    const name = secret.metadata.name;
    try {
      if (this.stored.has(name)) await this.client.replaceSecret(secret);
      else await this.client.createSecret(secret);
    } catch (err) {
      const code = statusOf(err);
      if (code === 409) await this.client.replaceSecret(secret);
      else if (code === 404) await this.client.createSecret(secret);
      else throw err;
    }
    this.stored.set(name, checksum);
  }

  private async pool(items: number[], fn: (i: number) => Promise<void>): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(this.concurrency, items.length) }, async () => {
        while (next < items.length) await fn(items[next++]);
      }),
    );
  }
}
