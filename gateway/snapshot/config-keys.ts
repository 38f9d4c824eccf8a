// Key, organization and project edits in a standalone config file (the CLI and the admin API): edits keep a YAML
// file's comments and order; a JSON file stays JSON; every write is validated first and lands by atomic rename.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isMap, isSeq, parseDocument, YAMLSeq } from 'yaml';
import type { Document, YAMLMap } from 'yaml';
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
  const data: unknown = doc.toJS();
  parseSnapshot(data, path);
  const tmp = `${path}.${process.pid}.tmp`;
  // YAML parses a JSON file too, but the file source reads a .json file as JSON: write it back as JSON.
  writeFileSync(tmp, path.endsWith('.json') ? JSON.stringify(data, null, 2) + '\n' : doc.toString());
  renameSync(tmp, path);
}

/** Why an edit was refused: the admin API maps `code` to its status (404, 409, 422). */
export class ConfigEditError extends Error {
  readonly code: 'not_found' | 'conflict' | 'invalid_request';
  constructor(code: ConfigEditError['code'], message: string) {
    super(message);
    this.code = code;
  }
}

/** A field's new value: undefined leaves it, null removes it. */
type Patch<T> = { [K in keyof T]?: T[K] | null };

function seqOf(doc: Document, key: string): YAMLSeq {
  let seq = doc.get(key);
  if (!isSeq(seq)) {
    seq = new YAMLSeq();
    doc.set(key, seq);
  }
  return seq as YAMLSeq;
}

function findById(seq: YAMLSeq, id: string): YAMLMap | undefined {
  for (const item of seq.items) if (isMap(item) && item.get('id') === id) return item as YAMLMap;
  return undefined;
}

function apply(doc: Document, map: YAMLMap, patch: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) map.delete(k);
    else map.set(k, doc.createNode(v));
  }
}

export interface OrganizationEdit {
  models?: string[];
  limits?: unknown;
  budget?: unknown;
}

export function createOrganization(path: string, id: string, o: OrganizationEdit): void {
  const doc = load(path);
  const seq = seqOf(doc, 'organizations');
  if (findById(seq, id)) throw new ConfigEditError('conflict', `organization "${id}" already exists`);
  const entry: Record<string, unknown> = { id, models: o.models ?? [] };
  if (o.limits !== undefined) entry.limits = o.limits;
  if (o.budget !== undefined) entry.budget = o.budget;
  seq.add(doc.createNode(entry));
  save(path, doc);
}

export function patchOrganization(path: string, id: string, patch: Patch<OrganizationEdit>): void {
  const doc = load(path);
  const org = findById(seqOf(doc, 'organizations'), id);
  if (!org) throw new ConfigEditError('not_found', `no organization "${id}"`);
  // An organization always lists its models (possibly none): null means none, not "remove the field".
  apply(doc, org, { ...patch, models: patch.models === null ? [] : patch.models });
  save(path, doc);
}

/** Sets a project's limits and budget, adding the project to its organization's list when it is not there yet. */
export function patchProject(path: string, organization: string, id: string, patch: Patch<{ limits: unknown; budget: unknown }>): void {
  const doc = load(path);
  const org = findById(seqOf(doc, 'organizations'), organization);
  if (!org) throw new ConfigEditError('not_found', `no organization "${organization}"`);
  let projects = org.get('projects');
  if (!isSeq(projects)) {
    projects = new YAMLSeq();
    org.set('projects', projects);
  }
  let project = findById(projects as YAMLSeq, id);
  if (!project) {
    project = doc.createNode({ id }) as YAMLMap;
    (projects as YAMLSeq).add(project);
  }
  apply(doc, project, patch);
  save(path, doc);
}

export function patchKey(path: string, id: string, patch: Patch<{ name: string; expiresAt: string; limits: unknown; budget: unknown }>): void {
  const doc = load(path);
  const key = findById(seqOf(doc, 'apiKeys'), id);
  if (!key) throw new ConfigEditError('not_found', `no key "${id}"`);
  apply(doc, key, patch);
  save(path, doc);
}

export function createKey(path: string, o: CreateKeyOptions): { key: string; id: string; prefix: string } {
  const doc = load(path);
  const snap = parseSnapshot(doc.toJS(), path);
  if (!snap.organizations.some((org) => org.id === o.organization)) throw new ConfigEditError('not_found', `unknown organization "${o.organization}" (known: ${snap.organizations.map((x) => x.id).join(', ') || 'none'})`);
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
  if (matches.length === 0) throw new ConfigEditError('not_found', `no key with id or prefix "${idOrPrefix}"`);
  if (matches.length > 1) throw new ConfigEditError('conflict', `"${idOrPrefix}" matches ${matches.length} keys; use the key id`);
  const item = matches[0];
  if (!isMap(item)) throw new Error('unexpected key entry');
  item.set('disabled', true);
  save(path, doc);
  return String(item.get('id'));
}
