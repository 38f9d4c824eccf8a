// Operator metrics: the controller, run against the fake API server, reports its reconciles, the snapshot it wrote
// and the resources it had to leave out, on its own /metrics endpoint.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller } from '../../operator/controller.ts';
import { KubeClient } from '../../operator/kube.ts';
import type { OperatorTelemetry } from '../../operator/metrics.ts';
import { startOperatorTelemetry } from '../../operator/metrics.ts';
import type { FakeApiServer } from '../k8s-fake/api-server.ts';
import { startFakeApiServer } from '../k8s-fake/api-server.ts';
import { eventually, TestCluster } from '../k8s-fake/cluster.ts';
import { scrape, sumHistogram, sumValues } from '../support/prometheus.ts';

const NS = 'metrics';

describe('operator metrics', () => {
  let api: FakeApiServer;
  let cluster: TestCluster;
  let controller: Controller;
  let tel: OperatorTelemetry;

  beforeAll(async () => {
    api = await startFakeApiServer({ bookmarkIntervalMs: 200 });
    cluster = new TestCluster(api.kubeConfig(NS), NS);
    tel = await startOperatorTelemetry({ adminPort: 0, host: '127.0.0.1', env: {} });
    controller = new Controller({ client: new KubeClient(api.kubeConfig(NS), NS), informer: { backoffBaseMs: 50, backoffMaxMs: 500 }, metrics: tel.metrics });
    await controller.start();
    await cluster.putSecret('creds', { apiKey: 'sk-upstream-1' });
    await cluster.apply('Provider', 'openai', { baseUrl: 'https://api.openai.com/v1', protocols: ['openai'], credentials: { secretRef: { name: 'creds', key: 'apiKey' } } });
    await cluster.apply('PricingGroup', 'mini', { mode: 'flat_tokens', prices: { input: '0.15', output: '0.6' } });
    await cluster.apply('Model', 'mini', { id: 'openai/gpt-4o-mini', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'openai' }, model: 'gpt-4o-mini' }] });
    // Invalid: its pricing group does not exist.
    await cluster.apply('Model', 'dangling', { id: 'openai/dangling', pricingGroupRef: { name: 'nope' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'openai' }, model: 'x' }] });
    await cluster.apply('Organization', 'acme', { models: ['*'] });
    await cluster.apply('ApiKey', 'web', { organization: 'acme', project: 'web' });
    await cluster.apply('ApiKey', 'ops', { organization: 'acme', project: 'ops' });
  });
  afterAll(async () => {
    await controller?.stop();
    await api?.stop();
    await tel?.close();
  });

  it('counts reconciles, reports the snapshot and the invalid resources', async () => {
    const m = await eventually(async () => {
      await controller.idle();
      const { metrics } = await scrape(tel.admin!.url);
      return sumValues(metrics, 'tollgate_operator_api_keys') === 2 ? metrics : undefined;
    }, 5000, 'two keys in the snapshot');
    expect(sumValues(m, 'tollgate_operator_reconciles_total', { tollgate_kind: 'Snapshot', tollgate_result: 'success' })).toBeGreaterThan(0);
    expect(sumHistogram(m, 'tollgate_operator_reconcile_duration', 'count')).toBe(sumValues(m, 'tollgate_operator_reconciles_total'));
    expect(sumValues(m, 'tollgate_operator_snapshot_shards')).toBeGreaterThanOrEqual(1);
    expect(sumValues(m, 'tollgate_operator_snapshot_size')).toBeGreaterThan(100);
    expect(sumValues(m, 'tollgate_operator_invalid_resources', { tollgate_kind: 'Model' })).toBe(1);
    expect(sumValues(m, 'tollgate_operator_invalid_resources', { tollgate_kind: 'ApiKey' })).toBe(0);
  });

  it('an invalid resource fixed drops out of the gauge', async () => {
    await cluster.apply('Model', 'dangling', { id: 'openai/dangling', pricingGroupRef: { name: 'mini' }, upstreams: [{ protocol: 'openai', providerRef: { name: 'openai' }, model: 'x' }] });
    await eventually(async () => {
      await controller.idle();
      const { metrics } = await scrape(tel.admin!.url);
      return sumValues(metrics, 'tollgate_operator_invalid_resources', { tollgate_kind: 'Model' }) === 0 ? true : undefined;
    }, 5000, 'no invalid Model');
  });
});
