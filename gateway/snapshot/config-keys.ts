// Key management in a standalone config file: edits keep the file's comments and order; writes are atomic renames.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isMap, isSeq, parseDocument, YAMLSeq } from 'yaml';
import type { Document } from 'yaml';
import { randomBytes } from 'node:crypto';
import { generateApiKey } from '../auth/api-key.ts';
import { parseSnapshot } from './validate.ts';

export interface CreateKeyOptions {
  organization: string;
  project: string;
  name?: string;
  expiresAt?: string;
}

function load(path: string): Document {
  const doc = parseDocument(readFileSync(path, 'utf8'));
  if (doc.errors.length) throw new Error(`${path}: ${doc.errors[0].message}`);
  return doc;
}

function save(path: string, doc: Document): void {
  // Validate the result first: a key edit must never turn a good file into a rejected one.
  parseSnapshot(doc.toJS(), path);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, doc.toString());
  renameSync(tmp, path);
}

export function createKey(path: string, o: CreateKeyOptions): { key: string; id: string; prefix: string } {
  const doc = load(path);
  const snap = parseSnapshot(doc.toJS(), path);
  if (!snap.organizations.some((org) => org.id === o.organization)) throw new Error(`unknown organization "${o.organization}" (known: ${snap.organizations.map((x) => x.id).join(', ') || 'none'})`);
  const g = generateApiKey();
  const id = `key-${randomBytes(4).toString('hex')}`;
  const entry: Record<string, unknown> = { id, hash: g.hash, prefix: g.prefix, organization: o.organization, project: o.project };
  if (o.name) entry.name = o.name;
  if (o.expiresAt) entry.expiresAt = o.expiresAt;
  entry.createdAt = new Date().toISOString();
  let seq = doc.get('apiKeys');
  if (!isSeq(seq)) {
    seq = new YAMLSeq();
    doc.set('apiKeys', seq);
  }
  (seq as YAMLSeq).add(doc.createNode(entry));
  save(path, doc);
  return { key: g.key, id, prefix: g.prefix };
}

export function listKeys(path: string): { id: string; prefix: string; organization: string; project: string; state: string; name?: string }[] {
  const snap = parseSnapshot(load(path).toJS(), path);
  const now = Date.now();
  return snap.apiKeys.map((k) => ({
    id: k.id,
    prefix: k.prefix,
    organization: k.organization,
    project: k.project,
    name: k.name,
    state: k.disabled ? 'revoked' : k.expiresAt && Date.parse(k.expiresAt) <= now ? 'expired' : 'active',
  }));
}

export function revokeKey(path: string, idOrPrefix: string): string {
  const doc = load(path);
  const seq = doc.get('apiKeys');
  if (!isSeq(seq)) throw new Error('no keys in this config');
  const matches = seq.items.filter((item) => isMap(item) && (item.get('id') === idOrPrefix || item.get('prefix') === idOrPrefix));
  if (matches.length === 0) throw new Error(`no key with id or prefix "${idOrPrefix}"`);
  if (matches.length > 1) throw new Error(`"${idOrPrefix}" matches ${matches.length} keys; use the key id`);
  const item = matches[0];
  if (!isMap(item)) throw new Error('unexpected key entry');
  item.set('disabled', true);
  save(path, doc);
  return String(item.get('id'));
}
