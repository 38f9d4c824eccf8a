// Test helpers around the fake API server: apply custom resources with the real client, read status and Secrets.
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Condition, Kind, Resource } from '../../operator/kinds.ts';
import { GROUP, KINDS, VERSION } from '../../operator/kinds.ts';

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export class TestCluster {
  readonly co: CustomObjectsApi;
  readonly core: CoreV1Api;
  readonly namespace: string;

  constructor(kc: KubeConfig, namespace: string) {
    this.co = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.namespace = namespace;
  }

  private p(kind: Kind) {
    return { group: GROUP, version: VERSION, namespace: this.namespace, plural: KINDS[kind] };
  }

  /** Creates the resource, or merge-patches its spec when it exists (kubectl apply, roughly). */
  async apply(kind: Kind, name: string, spec: Record<string, unknown>): Promise<Resource> {
    try {
      return (await this.co.createNamespacedCustomObject({ ...this.p(kind), body: { apiVersion: `${GROUP}/${VERSION}`, kind, metadata: { name }, spec } })) as Resource;
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      return (await this.co.patchNamespacedCustomObject({ ...this.p(kind), name, body: { spec } }, MERGE)) as Resource;
    }
  }

  async patchSpec(kind: Kind, name: string, spec: Record<string, unknown>): Promise<Resource> {
    return (await this.co.patchNamespacedCustomObject({ ...this.p(kind), name, body: { spec } }, MERGE)) as Resource;
  }

  async get(kind: Kind, name: string): Promise<Resource | undefined> {
    try {
      return (await this.co.getNamespacedCustomObject({ ...this.p(kind), name })) as Resource;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  async delete(kind: Kind, name: string): Promise<void> {
    await this.co.deleteNamespacedCustomObject({ ...this.p(kind), name });
  }

  async condition(kind: Kind, name: string, type: string): Promise<Condition | undefined> {
    return (await this.get(kind, name))?.status?.conditions?.find((c) => c.type === type);
  }

  async secret(name: string): Promise<Record<string, string> | undefined> {
    try {
      const s = await this.core.readNamespacedSecret({ namespace: this.namespace, name });
      return Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  async putSecret(name: string, data: Record<string, string>): Promise<void> {
    try {
      await this.core.createNamespacedSecret({ namespace: this.namespace, body: { metadata: { name }, stringData: data } });
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      await this.core.replaceNamespacedSecret({ namespace: this.namespace, name, body: { metadata: { name }, stringData: data } });
    }
  }

  async deleteSecret(name: string): Promise<void> {
    await this.core.deleteNamespacedSecret({ namespace: this.namespace, name });
  }
}

/** Polls until fn returns something truthy; fails with the last value seen. */
export async function eventually<T>(fn: () => Promise<T | undefined | false> | T | undefined | false, ms = 5000, what = 'condition'): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    last = await fn();
    if (last !== undefined && last !== false && last !== null) return last as T;
    if (Date.now() > end) throw new Error(`${what} not met within ${ms} ms (last: ${JSON.stringify(last)})`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
