// Spend so far on Organization and ApiKey status, from the gateway pods' report Leases, through the fake API server
// and the real client: merged over pods (newest period, largest figure), rate-limited per object.
import { CoordinationV1Api } from '@kubernetes/client-node';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpendReportBuilder } from '../gateway/governance/spend-report.ts';
import { GATEWAY_REPORT_LABEL, gatewayLeaseName, SERVED_GENERATION_ANNOTATION, SPEND_ANNOTATION } from '../gateway/snapshot/kube-format.ts';
import type { FakeApiServer } from '../test/k8s-fake/api-server.ts';
import { startFakeApiServer } from '../test/k8s-fake/api-server.ts';
import { eventually, TestCluster } from '../test/k8s-fake/cluster.ts';
import { kubectl } from '../test/support/kubectl.ts';
import { Controller } from './controller.ts';
import { KubeClient } from './kube.ts';
import { spendFromLeases } from './spend.ts';

const NS = 'spend';
const EVERY_MS = 1500;

function report(day: string, month: string, scopes: Record<string, Record<string, string>>): string {
  const b = new SpendReportBuilder(day, month);
  for (const [ref, periods] of Object.entries(scopes)) for (const [p, v] of Object.entries(periods)) b.add(ref, p as 'day' | 'month' | 'total', v);
  return b.text()!;
}

describe('spend so far on status', () => {
  let api: FakeApiServer;
  let cluster: TestCluster;
  let controller: Controller;
  let leases: CoordinationV1Api;

  async function putLease(pod: string, spend: string): Promise<void> {
    const name = gatewayLeaseName(pod);
    const body = {
      metadata: { name, labels: { [GATEWAY_REPORT_LABEL]: 'true' }, annotations: { [SERVED_GENERATION_ANNOTATION]: '1', [SPEND_ANNOTATION]: spend } },
      spec: { holderIdentity: pod, leaseDurationSeconds: 15, renewTime: new Date() },
    };
    try {
      const current = await leases.readNamespacedLease({ namespace: NS, name });
      await leases.replaceNamespacedLease({ namespace: NS, name, body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion } } });
    } catch {
      await leases.createNamespacedLease({ namespace: NS, body });
    }
  }

  const spendOf = async (kind: 'Organization' | 'ApiKey', name: string) => ((await cluster.get(kind, name))?.status as { spend?: Record<string, string> } | undefined)?.spend;

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 200 });
    cluster = new TestCluster(api.kubeConfig(NS), NS);
    leases = api.kubeConfig(NS).makeApiClient(CoordinationV1Api);
    controller = new Controller({ client: new KubeClient(api.kubeConfig(NS), NS), informer: { backoffBaseMs: 50, backoffMaxMs: 500 }, spendStatusEveryMs: EVERY_MS, resyncMs: 200, debounceMs: 10 });
    await controller.start();
    await cluster.apply('Organization', 'acme', { models: ['*'], budget: { month: '100', day: '10' } });
    await cluster.apply('ApiKey', 'web', { organization: 'acme', project: 'web', budget: { total: '5' } });
  });
  afterAll(async () => {
    await controller?.stop();
    await api?.stop();
  });

  it('merges the pods\' reports: the newest day and month, the largest figure per period', () => {
    const lease = (spend: string) => ({ metadata: { annotations: { [SPEND_ANNOTATION]: spend } } });
    const merged = spendFromLeases([
      lease(report('d20261124', 'm202611', { 'Organization/acme': { day: '1.5', month: '20' } })),
      lease(report('d20261124', 'm202611', { 'Organization/acme': { day: '1.25', month: '20.000000000000001' } })),
      // A pod that has not reconciled since midnight: its day figure is yesterday's and is left out.
      lease(report('d20261123', 'm202611', { 'Organization/acme': { day: '9', month: '19' }, 'ApiKey/web': { total: '2' } })),
      lease('not json'),
    ]);
    expect(Object.fromEntries(merged)).toEqual({ 'Organization/acme': { day: '1.5', month: '20.000000000000001' }, 'ApiKey/web': { total: '2' } });
  });

  it('shows spend on Organization and ApiKey status, and rewrites it at most once per interval', async () => {
    await putLease('gw-a', report('d20261124', 'm202611', { 'Organization/acme': { day: '1.5', month: '20' }, 'ApiKey/web': { total: '0.25' } }));
    await eventually(async () => (await spendOf('Organization', 'acme'))?.month === '20', 5000, 'organization spend');
    // Seen at most one poll (and one read) after it was written: the interval counts from the write.
    const shownAt = Date.now();
    expect(await spendOf('Organization', 'acme')).toEqual({ day: '1.5', month: '20' });
    await eventually(async () => (await spendOf('ApiKey', 'web'))?.total === '0.25', 5000, 'key spend');
    // What the status shows, sampled every 25 ms from here on.
    const seen: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const m = (await spendOf('Organization', 'acme'))?.month;
        if (m !== undefined && seen.at(-1) !== m) seen.push(m);
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    // Two more reports within the interval (a second pod, then the first again): the status keeps the shown figures
    // until the interval has passed, then takes the newest once; the one in between is never written.
    await putLease('gw-b', report('d20261124', 'm202611', { 'Organization/acme': { day: '2', month: '21' } }));
    await new Promise((r) => setTimeout(r, 300));
    await putLease('gw-a', report('d20261124', 'm202611', { 'Organization/acme': { day: '3', month: '22' }, 'ApiKey/web': { total: '0.25' } }));
    await eventually(async () => (await spendOf('Organization', 'acme'))?.month === '22', 5000, 'newest spend after the interval');
    // Unthrottled, '22' would land ~300 ms after the second report; throttled, not before the interval is over. The
    // margin covers how late '20' may have been seen on a loaded machine, not the throttle.
    expect(Date.now() - shownAt).toBeGreaterThanOrEqual(EVERY_MS - 400);
    sampling = false;
    await sampler;
    // The sampler may have been asleep when the newest figure landed: one last look.
    const last = (await spendOf('Organization', 'acme'))?.month;
    if (last !== undefined && seen.at(-1) !== last) seen.push(last);
    expect(seen).toEqual(['20', '22']);
    expect(await spendOf('Organization', 'acme')).toEqual({ day: '3', month: '22' });
  });

  it('kubectl get organizations shows the month spent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tg-spend-kubectl-'));
    try {
      const config = api.writeKubeconfig(join(dir, 'kubeconfig'), NS);
      const out = await kubectl(config, ['get', 'organizations'], { home: dir });
      expect(out.stderr).toBe('');
      const [head, row] = out.stdout.trim().split('\n');
      expect(head).toMatch(/SPENT\/MONTH/);
      // Columns are aligned to the header; empty cells (no discount, no RPM) leave only spaces.
      const at = head.indexOf('SPENT/MONTH');
      const next = head.slice(at).search(/\s\S/) + at + 1;
      expect(row.slice(at, next).trim()).toBe('22');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
