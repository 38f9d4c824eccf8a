// One operator replica: keeps its informers warm, campaigns for the leader Lease, and reconciles only while it leads.
import { hostname } from 'node:os';
import type { Logger } from '../kube/informer.ts';
import type { ControllerOptions } from './controller.ts';
import { Controller } from './controller.ts';
import { KubeClient } from './kube.ts';
import { LeaderElector } from './leader-election.ts';
import type { KubeConfig } from '@kubernetes/client-node';

export interface OperatorOptions extends Omit<ControllerOptions, 'client' | 'isLeader'> {
  kubeConfig: KubeConfig;
  namespace: string;
  /** Where the snapshot Secrets and the gateways' report Leases live (default: `namespace`). */
  snapshotNamespace?: string;
  identity?: string;
  leaseName?: string;
  election?: { leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number };
  /** false: this replica leads without a Lease (one replica only; the chart's operator.leaderElection.enabled). */
  leaderElection?: boolean;
  log?: Logger;
}

export interface RunningOperator {
  identity: string;
  elector: LeaderElector;
  /** The controller of the current leadership term (undefined while not leading). */
  controller(): Controller | undefined;
  stop(): Promise<void>;
}

export function startOperator(o: OperatorOptions): RunningOperator {
  const client = new KubeClient(o.kubeConfig, o.namespace);
  const identity = o.identity ?? process.env.POD_NAME ?? `${hostname()}-${process.pid}`;
  let leading = false;
  // Every replica lists and watches from the start, so a takeover costs one pass, not a relist of 100,000 objects:
  // changes are served again within the lease duration plus about a second after a leader dies.
  const snapshotClient = o.snapshotNamespace && o.snapshotNamespace !== o.namespace ? new KubeClient(o.kubeConfig, o.snapshotNamespace) : undefined;
  const controller = new Controller({ ...o, client, snapshotClient, isLeader: () => leading && (o.leaderElection === false || elector.isLeader()) });
  const started = controller.start().catch((err: unknown) => o.log?.error({ err: (err as Error).message }, 'controller failed to start'));
  const elector: LeaderElector = new LeaderElector({
    client,
    name: o.leaseName ?? 'tollgate-operator',
    identity,
    log: o.log,
    ...o.election,
    onStartedLeading: () => {
      leading = true;
      controller.takeover();
    },
    onStoppedLeading: () => {
      leading = false;
      controller.standDown();
    },
  });
  if (o.leaderElection === false) {
    leading = true;
    controller.takeover();
  } else elector.start();
  return {
    identity,
    elector,
    controller: () => (leading ? controller : undefined),
    async stop() {
      if (o.leaderElection !== false) await elector.stop();
      leading = false;
      await started;
      await controller.stop();
    },
  };
}
