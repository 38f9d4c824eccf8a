// The operator's (and the gateway's) few calls to the Kubernetes API, over @kubernetes/client-node.
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeConfig, V1Lease, V1Secret } from '@kubernetes/client-node';
import type { Condition, Kind, Resource, SecretObject } from './kinds.ts';
import { shareConnections, slim, statusOf } from '../kube/informer.ts';
import { GROUP, KINDS, VERSION } from './kinds.ts';

export { shareConnections, statusOf };

const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const JSON_PATCH = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

export class KubeClient {
  readonly kc: KubeConfig;
  readonly namespace: string;
  private readonly co: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly leases: CoordinationV1Api;

  constructor(kc: KubeConfig, namespace: string) {
    this.kc = shareConnections(kc);
    this.namespace = namespace;
    this.co = kc.makeApiClient(CustomObjectsApi);
    this.core = kc.makeApiClient(CoreV1Api);
    this.leases = kc.makeApiClient(CoordinationV1Api);
  }

  crPath(kind: Kind): string {
    return `/apis/${GROUP}/${VERSION}/namespaces/${this.namespace}/${KINDS[kind]}`;
  }

  listResources(kind: Kind, labelSelector?: string): Promise<{ items: Resource[]; metadata?: { resourceVersion?: string } }> {
    return paged((_continue) => this.co.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: this.namespace, plural: KINDS[kind], labelSelector, limit: LIST_PAGE, _continue }) as Promise<Page<Resource>>);
  }

  async patchStatus(kind: Kind, name: string, status: Record<string, unknown>): Promise<void> {
    await this.co.patchNamespacedCustomObjectStatus({ group: GROUP, version: VERSION, namespace: this.namespace, plural: KINDS[kind], name, body: { status }, fieldManager: 'tollgate-operator' }, MERGE);
  }

  /** Replaces metadata.finalizers only if the object is still at resourceVersion (JSON patch `test`), so no one else's finalizer is lost. */
  async setFinalizers(kind: Kind, name: string, resourceVersion: string, finalizers: string[]): Promise<void> {
    await this.co.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: this.namespace,
        plural: KINDS[kind],
        name,
        body: [
          { op: 'test', path: '/metadata/resourceVersion', value: resourceVersion },
          { op: 'add', path: '/metadata/finalizers', value: finalizers },
        ],
      },
      JSON_PATCH,
    );
  }

  listSecrets(labelSelector?: string): Promise<{ items: SecretObject[]; metadata?: { resourceVersion?: string } }> {
    return paged((_continue) => this.core.listNamespacedSecret({ namespace: this.namespace, labelSelector, limit: LIST_PAGE, _continue }) as Promise<Page<SecretObject>>);
  }

  async createSecret(body: SecretObject & { stringData?: Record<string, string> }): Promise<SecretObject> {
    return (await this.core.createNamespacedSecret({ namespace: this.namespace, body: body as V1Secret, fieldManager: 'tollgate-operator' })) as SecretObject;
  }

  async replaceSecret(body: SecretObject): Promise<SecretObject> {
    return (await this.core.replaceNamespacedSecret({ namespace: this.namespace, name: body.metadata.name, body: body as V1Secret, fieldManager: 'tollgate-operator' })) as SecretObject;
  }

  async deleteSecret(name: string): Promise<void> {
    await this.core.deleteNamespacedSecret({ namespace: this.namespace, name });
  }

  listLeases(labelSelector?: string): Promise<{ items: V1Lease[]; metadata?: { resourceVersion?: string } }> {
    return this.leases.listNamespacedLease({ namespace: this.namespace, labelSelector });
  }

  readLease(name: string): Promise<V1Lease> {
    return this.leases.readNamespacedLease({ namespace: this.namespace, name });
  }

  createLease(body: V1Lease): Promise<V1Lease> {
    return this.leases.createNamespacedLease({ namespace: this.namespace, body });
  }

  replaceLease(body: V1Lease): Promise<V1Lease> {
    return this.leases.replaceNamespacedLease({ namespace: this.namespace, name: body.metadata!.name!, body });
  }

  /** A core/v1 Event about a custom resource (what `kubectl describe` shows). */
  async event(kind: Kind, obj: Resource, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    await this.core.createNamespacedEvent({
      namespace: this.namespace,
      body: {
        metadata: { generateName: `${obj.metadata.name}.`, namespace: this.namespace },
        involvedObject: { apiVersion: `${GROUP}/${VERSION}`, kind, name: obj.metadata.name, namespace: this.namespace, uid: obj.metadata.uid, resourceVersion: obj.metadata.resourceVersion },
        type,
        reason,
        message,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        source: { component: 'tollgate-operator' },
        reportingComponent: 'tollgate.dev/operator',
        reportingInstance: process.env.POD_NAME ?? 'tollgate-operator',
      },
    });
  }
}

export type { Condition };

/** Objects per list call: a relist of 50,000 ApiKeys or Secrets holds one page's response at a time (a few MB), not all of it; 25 calls, not 100, for the two lists at 50,000. */
export const LIST_PAGE = 2000;

interface Page<T> {
  items: T[];
  /** `_continue` from client-node's typed lists, `continue` from the custom-objects API's plain JSON. */
  metadata?: { resourceVersion?: string; continue?: string; _continue?: string };
}

/**
 * A whole list in pages. Each page is slimmed (managedFields, last-applied) as it lands, so the response text and
 * its parsed copy of one page are what is transient; the list's resourceVersion is the first page's, as the server
 * keeps every page consistent with it.
 */
async function paged<T>(fetch: (cont: string | undefined) => Promise<Page<T>>): Promise<{ items: T[]; metadata: { resourceVersion?: string } }> {
  const items: T[] = [];
  let resourceVersion: string | undefined;
  let cont: string | undefined;
  do {
    const page = await fetch(cont);
    resourceVersion ??= page.metadata?.resourceVersion;
    for (const item of page.items) items.push(slim(item));
    cont = page.metadata?._continue || page.metadata?.continue || undefined;
  } while (cont);
  return { items, metadata: { resourceVersion } };
}
