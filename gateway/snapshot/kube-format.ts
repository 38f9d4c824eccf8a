// How a compiled snapshot is laid out in Secrets (cluster mode). The operator writes it; gateway pods read it.
// One manifest Secret names the key shards and carries everything but the keys; key shards hold the apiKeys,
// gzip-compressed, each well under the 1 MiB object limit. Shards are written first and the manifest last,
// so the manifest is the commit point: a pod switches only when every shard matches the manifest's checksum.
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Snapshot } from './schema.ts';

export const SNAPSHOT_LABEL = 'tollgate.dev/snapshot';
export const MANIFEST_SECRET = 'tollgate-snapshot';
export const CHECKSUM_ANNOTATION = 'tollgate.dev/checksum';
export const shardSecretName = (i: number): string => `tollgate-snapshot-keys-${i}`;

/** Gateway pods report what they serve on a Lease named tollgate-gw-<pod>, labelled so. */
export const GATEWAY_REPORT_LABEL = 'tollgate.dev/gateway-report';
export const SERVED_GENERATION_ANNOTATION = 'tollgate.dev/snapshot-generation';
export const SERVED_VERSION_ANNOTATION = 'tollgate.dev/snapshot-version';
/** The pod's staleness bound in seconds: after its Lease runs out, the pod may still be ready this long. */
export const STALE_AFTER_ANNOTATION = 'tollgate.dev/stale-after-seconds';
/** "true" while the pod knows its snapshot may be stale (and so is not ready). */
export const STALE_ANNOTATION = 'tollgate.dev/stale';
/**
 * Spend so far per budget scope as this pod last read it from the ledger (JSON, see gateway/governance/spend-report.ts):
 * the operator shows it on Organization and ApiKey status.
 */
export const SPEND_ANNOTATION = 'tollgate.dev/spend';
export const gatewayLeaseName = (pod: string): string => `tollgate-gw-${pod}`.slice(0, 253).replace(/[^a-z0-9.-]/g, '-').replace(/[-.]+$/, '');

export type SnapshotBase = Omit<Snapshot, 'apiKeys' | 'version' | 'generation'>;
export type SnapshotKey = Snapshot['apiKeys'][number];

export interface ManifestShard {
  name: string;
  /** sha256 of the shard's JSON text (before gzip). */
  checksum: string;
  keys: number;
}

export interface SnapshotManifest {
  format: 1;
  /** Content hash of the whole snapshot (snapshotVersion in runtime.ts); pods recompute and compare it. */
  version: string;
  /** Increases with every write; pods report it, the operator counts them per resource (condition Applied). */
  generation: number;
  /** sha256 of base.json. */
  baseChecksum: string;
  shards: ManifestShard[];
  /** "Kind/name" → metadata.generation each non-key resource was compiled from. */
  generations: Record<string, number>;
  writtenAt: string;
}

export interface KeyShard {
  keys: SnapshotKey[];
  /** ApiKey name → metadata.generation it was compiled from. */
  generations: Record<string, number>;
}

export const sha256 = (text: string | Buffer): string => 'sha256:' + createHash('sha256').update(text).digest('hex');

export function encodeJson(value: unknown): { text: string; checksum: string } {
  const text = JSON.stringify(value);
  return { text, checksum: sha256(text) };
}

export const gzipBase64 = (text: string): string => gzipSync(text, { level: 6 }).toString('base64');
export const gunzipBase64 = (b64: string): string => gunzipSync(Buffer.from(b64, 'base64')).toString('utf8');

/** FNV-1a: a key's shard depends only on its name and the shard count, so one key's change rewrites one shard. */
export function shardOf(name: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % shards;
}
