// One operator replica: campaigns for the leader Lease and runs the controller only while it leads.
import { hostname } from 'node:os';
import type { Logger } from '../gateway/snapshot/kube-informer.ts';
import type { ControllerOptions } from './controller.ts';
import { Controller } from './controller.ts';
import { KubeClient } from './kube.ts';
import { LeaderElector } from './leader-election.ts';
import type { KubeConfig } from '@kubernetes/client-node';

export interface OperatorOptions extends Omit<ControllerOptions, 'client' | 'isLeader'> {
  kubeConfig: KubeConfig;
  namespace: string;
  identity?: string;
  leaseName?: string;
  election?: { leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number };
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
  let controller: Controller | undefined;
  let stopping: Promise<void> = Promise.resolve();
  const elector: LeaderElector = new LeaderElector({
    client,
    name: o.leaseName ?? 'tollgate-operator',
    identity,
    log: o.log,
    ...o.election,
    onStartedLeading: () => {
      const c = new Controller({ ...o, client, isLeader: () => elector.isLeader() });
      controller = c;
      // A new term starts with fresh caches; it waits for the last term's controller to have stopped.
      void stopping.then(() => c.start()).catch((err: unknown) => o.log?.error({ err: (err as Error).message }, 'controller failed to start'));
    },
    onStoppedLeading: () => {
      const c = controller;
      controller = undefined;
      if (c) stopping = c.stop();
    },
  });
  elector.start();
  return {
    identity,
    elector,
    controller: () => controller,
    async stop() {
      await elector.stop();
      await controller?.stop();
      await stopping;
    },
  };
}
