// The chart's observability pieces, rendered by the real helm binary: the optional ServiceMonitor scrapes the gateway
// Service's metrics port, the dashboard ConfigMap carries valid JSON, and every series the dashboard queries is one the
// gateway really exposes (checked against a live /metrics scrape).
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { TestGateway } from '../support/gateway.ts';
import { startTestGateway } from '../support/gateway.ts';
import { helm } from '../support/helm.ts';
import { scrape } from '../support/prometheus.ts';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

interface Dashboard {
  uid: string;
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
}

async function template(args: string[]): Promise<K8sObject[]> {
  const r = await helm(['template', 'tg', 'charts/tollgate', '--namespace', 'tollgate', ...args]);
  expect(r.status, r.stderr).toBe(0);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as K8sObject)
    .filter((o) => o !== null);
}

const ON = ['--set', 'metrics.serviceMonitor.enabled=true,metrics.grafanaDashboard.enabled=true', '--set-string', 'metrics.serviceMonitor.labels.release=kps'];

describe('helm: ServiceMonitor and Grafana dashboard', () => {
  it('renders neither by default', async () => {
    const kinds = (await template([])).map((o) => `${o.kind}/${o.metadata.name}`);
    expect(kinds.some((k) => k.startsWith('ServiceMonitor/'))).toBe(false);
    expect(kinds).not.toContain('ConfigMap/tg-tollgate-dashboard');
  });

  it('the ServiceMonitor selects the gateway Service and scrapes its metrics port', async () => {
    const objects = await template(ON);
    const sm = objects.find((o) => o.kind === 'ServiceMonitor')!;
    const svc = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'tg-tollgate-gateway')!;
    new Service(svc as never).validate();
    expect(sm.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(sm.metadata.labels).toMatchObject({ release: 'kps', 'app.kubernetes.io/component': 'gateway' });
    const spec = sm.spec as { selector: { matchLabels: Record<string, string> }; namespaceSelector: { matchNames: string[] }; endpoints: { port: string; path: string; interval: string }[] };
    expect(svc.metadata.labels).toMatchObject(spec.selector.matchLabels);
    expect(spec.namespaceSelector.matchNames).toEqual(['tollgate']);
    expect(spec.endpoints).toEqual([expect.objectContaining({ port: 'metrics', path: '/metrics', interval: '30s' })]);
    const ports = (svc.spec as { ports: { name: string; port: number }[] }).ports;
    expect(ports.find((p) => p.name === 'metrics')?.port).toBe(9464);
  });

  it('refuses a malformed scrape interval', async () => {
    const r = await helm(['template', 'tg', 'charts/tollgate', '--set', 'metrics.serviceMonitor.interval=soon']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('metrics.serviceMonitor.interval');
  });

  describe('the dashboard', () => {
    let dashboard: Dashboard;
    let t: TestGateway;
    beforeAll(async () => {
      const cm = (await template(ON)).find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'tg-tollgate-dashboard')!;
      new ConfigMap(cm as never).validate();
      expect(cm.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
      dashboard = JSON.parse(cm.data!['tollgate-gateway.json']) as Dashboard;
      t = await startTestGateway({ gateway: { adminPort: 0, adminHost: '127.0.0.1', telemetry: { env: {} } } });
    });
    afterAll(async () => t?.close());

    it('shows requests, errors, latency and overhead percentiles, tokens and cost by model and organization, limits, upstream health and the process', () => {
      expect(dashboard.uid).toBe('tollgate-gateway');
      const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((x) => x.expr)).join('\n');
      for (const needed of [
        'tollgate_requests_total',
        'http_response_status_code=~"5.."',
        'histogram_quantile(0.99, sum by (le) (rate(gen_ai_server_request_duration_bucket',
        'histogram_quantile(0.99, sum by (le) (rate(tollgate_gateway_overhead_bucket',
        'sum by (gen_ai_request_model, gen_ai_token_type) (rate(gen_ai_client_token_usage_sum',
        'sum by (tollgate_organization, gen_ai_request_model) (increase(tollgate_cost_points_total',
        'tollgate_upstream_errors_total',
        'tollgate_requests_total{http_response_status_code="429"}',
        'tollgate_limits_degraded',
        'tollgate_upstream_state{tollgate_upstream_state!="healthy"}',
        'nodejs_eventloop_delay_p99',
        'process_memory_usage',
      ]) {
        expect(exprs).toContain(needed);
      }
    });

    it('queries only series and labels the gateway exposes', async () => {
      const chat = (body: Record<string, unknown>) =>
        fetch(`${t.url}/api/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${t.keys.acme}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], ...body }) }).then((r) => r.text());
      await chat({});
      await chat({ stream: true });
      await chat({ model: 'openai/unreachable' });
      await t.gw.ledger.flush();
      const { metrics } = await scrape(t.gw.adminUrl!);
      const series = new Set<string>();
      const labels = new Set<string>(['le', 'pod']);
      for (const [name, family] of Object.entries(metrics)) {
        series.add(name);
        if (family.type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) series.add(name + s);
        for (const d of family.data) for (const l of Object.keys(d.labels)) labels.add(l);
      }
      const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((x) => x.expr));
      expect(exprs.length).toBeGreaterThan(15);
      for (const expr of exprs) {
        for (const [token] of expr.matchAll(/\b(?:gen_ai|tollgate|process|nodejs|v8js)_[a-z0-9_]+\b/g)) expect(series.has(token) || labels.has(token), `${token} in ${expr}`).toBe(true);
      }
    });
  });
});
