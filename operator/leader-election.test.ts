// Two replicas, one Lease: exactly one leads; a released Lease passes at once, an abandoned one after it
// expires; a leader that cannot renew stops leading within renewDeadline.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeApiServer } from '../test/k8s-fake/api-server.ts';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';
import { eventually } from '../test/k8s-fake/cluster.ts';
import { KubeClient } from './kube.ts';
import { LeaderElector } from './leader-election.ts';
import { startOperator } from './operator.ts';

const NS = 'le';
const TIMING = { leaseDurationMs: 1000, renewDeadlineMs: 700, retryPeriodMs: 100 };
// Where a test shows that something happens *before* a lease could expire, the lease is long, so a loaded
// machine (a stalled event loop) cannot blur "at once" into "after expiry".
const LONG = { leaseDurationMs: 10_000, renewDeadlineMs: 7_000, retryPeriodMs: 100 };

describe('leader election on a Lease', () => {
  let api: FakeApiServer;
  beforeAll(async () => {
    api = await startFakeApiServer();
  });
  afterAll(async () => api?.stop());

  function elector(identity: string, name: string, log: string[], timing = TIMING) {
    return new LeaderElector({ client: new KubeClient(api.kubeConfig(NS), NS), name, identity, ...timing, onStartedLeading: () => log.push(`${identity}+`), onStoppedLeading: () => log.push(`${identity}-`) });
  }

  it('one leader at a time; a released Lease passes to the other replica at once', async () => {
    const log: string[] = [];
    const a = elector('a', 'one', log, LONG);
    a.start();
    await eventually(() => a.isLeader(), 2000, 'a leads');
    const b = elector('b', 'one', log, LONG);
    b.start();
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 50));
      expect(a.isLeader() && !b.isLeader()).toBe(true);
    }
    const t0 = performance.now();
    await a.stop();
    await eventually(() => b.isLeader(), 5000, 'b takes over');
    expect(performance.now() - t0).toBeLessThan(LONG.leaseDurationMs / 2);
    expect(log).toEqual(['a+', 'a-', 'b+']);
    const lease = await new KubeClient(api.kubeConfig(NS), NS).readLease('one');
    expect(lease.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 0 });
    await b.stop();
  });

  it('an abandoned Lease is taken only after it expires', async () => {
    const log: string[] = [];
    const a = elector('a', 'two', log);
    a.start();
    await eventually(() => a.isLeader(), 2000, 'a leads');
    await a.stop({ release: false }); // a crash: no release
    const b = elector('b', 'two', log);
    const t0 = performance.now();
    b.start();
    await eventually(() => b.isLeader(), 3000, 'b takes over');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(TIMING.leaseDurationMs - 50);
    expect((await new KubeClient(api.kubeConfig(NS), NS).readLease('two')).spec?.leaseTransitions).toBe(1);
    await b.stop();
  });

  it('a leader that cannot renew stops leading within renewDeadline', async () => {
    const log: string[] = [];
    const a = elector('a', 'three', log);
    a.start();
    await eventually(() => a.isLeader(), 2000, 'a leads');
    await api.stop();
    // However late this timer fires, renewDeadline has passed by then: the fence must already be down.
    await new Promise((r) => setTimeout(r, TIMING.renewDeadlineMs));
    expect(a.isLeader()).toBe(false);
    await eventually(() => log.includes('a-'), 2000, 'a told to stop');
    await api.start();
    await eventually(() => a.isLeader(), 3000, 'a leads again');
    await a.stop();
  });

  it('two operator replicas: only the leader runs a controller', async () => {
    const opts = { kubeConfig: api.kubeConfig(NS), namespace: NS, leaseName: 'op', election: LONG };
    const one = startOperator({ ...opts, identity: 'one' });
    const two = startOperator({ ...opts, identity: 'two' });
    await eventually(() => one.controller() ?? two.controller(), 2000, 'a controller');
    for (let i = 0; i < 10; i++) {
      await new Promise((r) => setTimeout(r, 50));
      expect([one.controller(), two.controller()].filter(Boolean)).toHaveLength(1);
    }
    const [leader, other] = one.controller() ? [one, two] : [two, one];
    await leader.stop();
    await eventually(() => other.controller(), 5000, 'the other takes over');
    await other.stop();
  });
});
