// The real kubectl v1.31 against the fake API server in strict mode: discovery, CRDs installed through the API,
// Table output from printer columns, `explain` from the CRDs' OpenAPI schemas, client-side and server-side apply,
// admission with the server's messages, --dry-run=server, chunked lists, size limits, namespaces and delete.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { FakeApiServer } from './api-server.ts';
import { startFakeApiServer } from './api-server.ts';
import type { KubectlResult } from '../support/kubectl.ts';
import { kubectl } from '../support/kubectl.ts';

const NS = 'tollgate';

describe('the real kubectl against the fake API server', () => {
  let api: FakeApiServer;
  let dir: string;
  let config: string;
  const k = (...args: string[]): Promise<KubectlResult> => kubectl(config, args, { home: dir });
  /** kubectl that must succeed; its stdout. */
  const ok = async (...args: string[]): Promise<string> => {
    const r = await k(...args);
    expect(r.status, `kubectl ${args.join(' ')}\n${r.stderr}`).toBe(0);
    return r.stdout;
  };
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };

  beforeAll(async () => {
    // No CRDs preinstalled: `kubectl apply -f crds/` has to create them through the API.
    api = await startFakeApiServer({ strict: true, installCrds: false });
    dir = mkdtempSync(join(tmpdir(), 'tg-kubectl-'));
    config = api.writeKubeconfig(join(dir, 'kubeconfig'), NS);
  });
  afterAll(async () => {
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('installs the CRDs with apply -f crds/ and discovers their resources, short names and categories', async () => {
    expect(await ok('apply', '-f', 'crds/')).toMatch(/customresourcedefinition.apiextensions.k8s.io\/models.tollgate.dev created/);
    const resources = await ok('api-resources', '--api-group=tollgate.dev', '-o', 'wide');
    expect(resources).toMatch(/^models\s+tgmodel\s+tollgate.dev\/v1alpha1\s+true\s+Model\s+.*\s+tollgate\s*$/m);
    expect(resources).toMatch(/^apikeys\s+tgkey\s/m);
    expect(await ok('get', 'crds')).toMatch(/^NAME\s+CREATED AT\n(.*\n)*providers.tollgate.dev\s+\d{4}-/m);
    expect(await ok('version', '-o', 'json')).toContain('"gitVersion": "v1.31.0-tollgate-fake"');
  });

  it('refuses objects in a namespace that does not exist, then applies the examples into a new one', async () => {
    const missing = await k('apply', '-n', 'nowhere', '-f', 'examples/k8s/organizations.yaml');
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('namespaces "nowhere" not found');
    expect(await ok('create', 'namespace', NS)).toContain(`namespace/${NS} created`);
    const out = await ok('apply', '-f', 'examples/k8s/secrets/', '-f', 'examples/k8s/');
    expect(out).toContain('model.tollgate.dev/gpt-4o created');
    expect(out).toContain('secret/openai-credentials created');
    // Applying the same files again changes nothing: the last-applied annotation makes the patches empty.
    const again = await ok('apply', '-f', 'examples/k8s/');
    expect(again.trim().split('\n').every((l) => l.endsWith(' unchanged'))).toBe(true);
  });

  it('prints the printer columns for kubectl get, wide columns with -o wide, and whole categories', async () => {
    const models = await ok('get', 'models');
    expect(models.split('\n')[0]).toMatch(/^NAME\s+ID\s+PROTOCOLS\s+PRICING\s+READY\s+AGE$/);
    expect(models).toMatch(/^gpt-4o\s+openai\/gpt-4o\s+gpt-4o\s+\d+s$/m);
    const wide = await ok('get', 'tgmodel', 'claude-sonnet-4-5', '-o', 'wide');
    expect(wide.split('\n')[0]).toMatch(/\sALIAS\s+PUBLIC\s/);
    expect(wide).toMatch(/^claude-sonnet-4-5\s+anthropic\/claude-sonnet-4.5\s+claude-sonnet\s+claude-sonnet-4-5\s+true\s/m);
    const all = await ok('get', 'tollgate');
    for (const kind of ['apikey', 'model', 'organization', 'pricinggroup', 'provider']) expect(all).toContain(`${kind}.tollgate.dev/`);
    const secrets = await ok('get', 'secrets');
    expect(secrets).toMatch(/^NAME\s+TYPE\s+DATA\s+AGE$/m);
    expect(secrets).toMatch(/^openai-credentials\s+Opaque\s+1\s/m);
    expect(await ok('get', 'secret', 'openai-credentials', '-o', 'jsonpath={.data}')).toMatch(/^\{"\w+":"[A-Za-z0-9+/=]+"\}$/);
  });

  it('client-side apply of a core kind goes through a strategic merge patch; kubectl patch and label work', async () => {
    const changed = file('creds.yaml', readFileSync('examples/k8s/secrets/provider-credentials.yaml', 'utf8').replace('replace-with-your-openai-key', 'sk-changed'));
    expect(await ok('apply', '-f', changed)).toContain('secret/openai-credentials configured');
    expect(Buffer.from(await ok('get', 'secret', 'openai-credentials', '-o', 'jsonpath={.data.apiKey}'), 'base64').toString()).toBe('sk-changed');
    await ok('label', 'secret', 'openai-credentials', 'team=platform');
    expect(await ok('get', 'secret', 'openai-credentials', '-o', 'jsonpath={.metadata.labels.team}')).toBe('platform');
    // Custom resources take merge and JSON patches; a strategic merge patch is refused as the server refuses it.
    const strategic = await k('patch', 'model', 'gpt-4o-mini', '-p', '{"spec":{"public":false}}');
    expect(strategic.stderr).toContain('the body of the request was in an unknown format');
    expect(await ok('patch', 'model', 'gpt-4o-mini', '--type=merge', '-p', '{"spec":{"public":false}}')).toContain('model.tollgate.dev/gpt-4o-mini patched');
    expect(await ok('get', 'model', 'gpt-4o-mini', '-o', 'jsonpath={.spec.public} {.metadata.generation}')).toBe('false 2');
  });

  it('describes an object, and streams Table rows to kubectl get -w', async () => {
    const described = await ok('describe', 'model', 'gpt-4o');
    expect(described).toMatch(/^Name:\s+gpt-4o$/m);
    expect(described).toMatch(/^Kind:\s+Model$/m);
    expect(described).toMatch(/^\s+Id:\s+openai\/gpt-4o$/m);
    // The watch kubectl get -w opens: Table in the Accept header, one-row Tables in the events.
    const ctl = new AbortController();
    const res = await fetch(`${api.url}/apis/tollgate.dev/v1alpha1/namespaces/${NS}/models?watch=1&fieldSelector=metadata.name%3Dgpt-4o`, { headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' }, signal: ctl.signal });
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    ctl.abort();
    const event = JSON.parse(new TextDecoder().decode(value).split('\n')[0]) as { type: string; object: { kind: string; rows: { cells: unknown[] }[] } };
    expect(event.type).toBe('ADDED');
    expect(event.object.kind).toBe('Table');
    expect(event.object.rows[0].cells.slice(0, 2)).toEqual(['gpt-4o', 'openai/gpt-4o']);
  });

  it('explains our fields from the CRD schema through OpenAPI v3', async () => {
    const crd = parseYaml(readFileSync('crds/tollgate.dev_models.yaml', 'utf8')) as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, { description: string; properties?: Record<string, { description: string }> }> } } } } }[] } };
    const spec = crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties;
    const out = await ok('explain', 'model.spec.pricingGroupRef');
    expect(out).toContain('KIND:       Model');
    expect(out).toContain('FIELD: pricingGroupRef <Object>');
    const words = (s: string) => s.replace(/\s+/g, ' ').trim();
    expect(words(out)).toContain(words(spec.pricingGroupRef.description));
    const upstreams = await ok('explain', 'tgmodel.spec.upstreams');
    expect(upstreams).toMatch(/protocol\s+<string> -required-/);
    expect(await ok('explain', 'apikeys', '--recursive')).toMatch(/expiresAt\s+<string>/);
  });

  it('refuses every invalid example at kubectl apply with the server message, storing nothing', async () => {
    const dirInvalid = 'examples/k8s/invalid';
    const files = readdirSync(dirInvalid).filter((f) => f.endsWith('.yaml'));
    const results = await Promise.all(files.map((f) => k('apply', '-f', join(dirInvalid, f))));
    files.forEach((f, i) => {
      const text = readFileSync(join(dirInvalid, f), 'utf8');
      const expected = text.match(/^# expect: (.*)$/m)![1];
      const obj = parseYaml(text.replace(/^#.*$/gm, '')) as { kind: string; metadata: { name: string } };
      const r = results[i];
      expect(r.status, f).not.toBe(0);
      if (expected.startsWith('unknown field')) {
        // Strict field validation: the server decodes strictly and names the field.
        expect(r.stderr, f).toContain(`${obj.kind} in version "v1alpha1" cannot be handled as a ${obj.kind}: strict decoding error: ${expected}`);
        return;
      }
      const field = expected.slice(0, expected.indexOf(': '));
      expect(r.stderr, f).toContain(`The ${obj.kind} "${obj.metadata.name}" is invalid: ${field}: `);
      // CEL messages, enums and required fields read exactly as the expectation; pattern, format and type
      // failures are worded by the server ("in body should match '…'"), so only the field is compared there.
      if (!/must match|must be string/.test(expected)) expect(r.stderr, f).toContain(expected);
    });
    const stored = await ok('get', 'tollgate', '-o', 'name');
    for (const f of files) expect(stored).not.toContain(`/${(parseYaml(readFileSync(join(dirInvalid, f), 'utf8')) as { metadata: { name: string } }).metadata.name}\n`);
  });

  it('prunes unknown fields with a warning when field validation is Warn', async () => {
    const path = file('org-extra.yaml', 'apiVersion: tollgate.dev/v1alpha1\nkind: Organization\nmetadata:\n  name: extra\nspec:\n  models: ["*"]\n  colour: blue\n');
    const r = await k('apply', '--validate=warn', '-f', path);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain('unknown field "spec.colour"');
    expect(await ok('get', 'tgorg', 'extra', '-o', 'jsonpath={.spec}')).toBe('{"models":["*"]}');
  });

  it('server-side apply: field managers, conflicts, --force-conflicts and removal of fields no longer applied', async () => {
    const base = 'apiVersion: tollgate.dev/v1alpha1\nkind: Organization\nmetadata:\n  name: initech\nspec:\n';
    const first = file('ssa-1.yaml', `${base}  models: ["openai/*"]\n  discount: "0.9"\n`);
    expect(await ok('apply', '--server-side', '-f', first)).toContain('organization.tollgate.dev/initech serverside-applied');
    const obj = JSON.parse(await ok('get', 'tgorg', 'initech', '-o', 'json', '--show-managed-fields')) as { metadata: { managedFields: { manager: string; operation: string; fieldsV1: Record<string, unknown> }[] } };
    expect(obj.metadata.managedFields).toEqual([expect.objectContaining({ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': { '.': {}, 'f:models': {}, 'f:discount': {} } } })]);
    const other = file('ssa-2.yaml', `${base}  models: ["anthropic/*"]\n`);
    const conflict = await k('apply', '--server-side', '--field-manager=platform', '-f', other);
    expect(conflict.status).not.toBe(0);
    expect(conflict.stderr).toContain('Apply failed with 1 conflict: conflict with "kubectl" using tollgate.dev/v1alpha1: .spec.models');
    await ok('apply', '--server-side', '--field-manager=platform', '--force-conflicts', '-f', other);
    expect(await ok('get', 'tgorg', 'initech', '-o', 'jsonpath={.spec.models}')).toBe('["anthropic/*"]');
    // kubectl now sends platform's value for models (co-owned, no conflict) and no discount, which it owned
    // alone: discount goes.
    await ok('apply', '--server-side', '-f', file('ssa-3.yaml', `${base}  models: ["anthropic/*"]\n`));
    expect(JSON.parse(await ok('get', 'tgorg', 'initech', '-o', 'jsonpath={.spec}'))).toEqual({ models: ['anthropic/*'] });
    const owners = JSON.parse(await ok('get', 'tgorg', 'initech', '-o', 'json', '--show-managed-fields')) as { metadata: { managedFields: { manager: string }[] } };
    expect(owners.metadata.managedFields.map((e) => e.manager).sort()).toEqual(['kubectl', 'platform']);
    // Server-side apply goes through admission too.
    const bad = await k('apply', '--server-side', '--force-conflicts', '-f', file('ssa-bad.yaml', `${base}  models: ["openai/**"]\n`));
    expect(bad.stderr).toContain('The Organization "initech" is invalid: spec.models[0]: Invalid value: "openai/**"');
  });

  it('--dry-run=server admits and answers but stores nothing', async () => {
    const s = await ok('create', 'secret', 'generic', 'dry', '--from-literal=a=b', '--dry-run=server', '-o', 'json');
    expect((JSON.parse(s) as { data: Record<string, string> }).data).toEqual({ a: Buffer.from('b').toString('base64') });
    expect((await k('get', 'secret', 'dry')).stderr).toContain('secrets "dry" not found');
    const changed = file('gpt4o-dry.yaml', readFileSync('examples/k8s/models.yaml', 'utf8').split('\n---\n').find((d) => /name: gpt-4o\n/.test(d))!.replace('pricingGroupRef: { name: gpt-4o }', 'pricingGroupRef: { name: gpt-4o-mini }').replace(/name: gpt-4o\n(\s+)name: gpt-4o$/m, 'name: gpt-4o-mini'));
    const before = await ok('get', 'model', 'gpt-4o', '-o', 'jsonpath={.metadata.resourceVersion} {.spec.pricingGroupRef.name}');
    expect(await ok('apply', '--dry-run=server', '-f', changed)).toMatch(/model.tollgate.dev\/gpt-4o (configured|unchanged) \(server dry run\)/);
    expect(await ok('apply', '--server-side', '--dry-run=server', '--force-conflicts', '-f', changed)).toContain('(server dry run)');
    expect(await ok('delete', 'model', 'gpt-4o', '--dry-run=server')).toContain('deleted (server dry run)');
    expect(await ok('get', 'model', 'gpt-4o', '-o', 'jsonpath={.metadata.resourceVersion} {.spec.pricingGroupRef.name}')).toBe(before);
  });

  it('lists in chunks with limit and continue', async () => {
    const chunked = await k('get', 'models', '--chunk-size=2', '-o', 'name', '-v=6');
    expect(chunked.status).toBe(0);
    expect(chunked.stdout.trim().split('\n')).toHaveLength(5);
    expect((chunked.stderr.match(/limit=2/g) ?? []).length).toBeGreaterThanOrEqual(3);
    expect(chunked.stderr).toMatch(/continue=/);
    const page = (await (await fetch(`${api.url}/apis/tollgate.dev/v1alpha1/namespaces/${NS}/models?limit=2`)).json()) as { items: { metadata: { name: string } }[]; metadata: { continue: string; remainingItemCount: number } };
    expect(page.items.map((i) => i.metadata.name)).toEqual(['claude-sonnet-4-5', 'gemini-2-5-pro']);
    expect(page.metadata.remainingItemCount).toBe(3);
    const next = (await (await fetch(`${api.url}/apis/tollgate.dev/v1alpha1/namespaces/${NS}/models?limit=2&continue=${encodeURIComponent(page.metadata.continue)}`)).json()) as { items: { metadata: { name: string } }[] };
    expect(next.items.map((i) => i.metadata.name)).toEqual(['gpt-4o', 'gpt-4o-mini']);
    expect((await fetch(`${api.url}/apis/tollgate.dev/v1alpha1/namespaces/${NS}/models?limit=2&continue=garbage`)).status).toBe(400);
  });

  it('enforces the size limits: 1.5 MiB per object, 256 KiB of annotations, 3 MiB per request', async () => {
    const big = file('big.bin', 'x'.repeat(1_200_000)); // base64 in data: 1.6 MB
    const tooBig = await k('create', 'secret', 'generic', 'big', `--from-file=blob=${big}`);
    expect(tooBig.status).not.toBe(0);
    expect(tooBig.stderr).toContain('etcdserver: request is too large');
    // Client-side apply keeps a copy of the object in an annotation, so a 300 KB ConfigMap cannot be applied.
    const cm = file('cm.yaml', `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: large\ndata:\n  blob: "${'y'.repeat(300_000)}"\n`);
    const annotated = await k('apply', '-f', cm);
    expect(annotated.stderr).toContain('metadata.annotations: Too long: must have at most 262144 bytes');
    const r = await fetch(`${api.url}/api/v1/namespaces/${NS}/configmaps`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ metadata: { name: 'huge' }, data: { x: 'z'.repeat(3_200_000) } }) });
    expect(r.status).toBe(413);
    expect(((await r.json()) as { message: string }).message).toBe('Request entity too large: limit is 3145728');
  });

  it('deletes what it applied, and a namespace with everything in it', async () => {
    const out = await ok('delete', '-f', 'examples/k8s/');
    expect(out).toContain('model.tollgate.dev "gpt-4o" deleted');
    expect(await ok('get', 'models', '-o', 'name')).toBe('');
    expect((await k('get', 'models')).stderr).toContain(`No resources found in ${NS} namespace.`);
    expect(await ok('delete', 'namespace', NS)).toContain(`namespace "${NS}" deleted`);
    expect(await ok('get', 'secrets,organizations', '-A', '-o', 'name')).toBe('');
    expect(await ok('delete', 'crd', 'models.tollgate.dev')).toContain('deleted');
    expect((await k('get', 'models')).stderr).toMatch(/the server doesn't have a resource type "models"|Resource=models": the server could not find the requested resource/);
  });
});
