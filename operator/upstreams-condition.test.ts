// The pure half of condition UpstreamsHealthy: reading pods' reports, merging them, the condition, its rate limit.
import { describe, expect, it } from 'vitest';
import { decodeEjected, encodeEjected, MAX_REPORTED } from '../gateway/snapshot/kube-ejections.ts';
import type { Condition, Resource } from './kinds.ts';
import { aggregateEjections, holdCondition, upstreamsCondition } from './reconcile.ts';
import type { GatewayPod } from './status.ts';
import { livePods } from './status.ts';

const pod = (name: string, targets: [string, string, 'ejected' | 'half_open'][]): GatewayPod => ({ name, generation: 1, ejected: { total: targets.length, targets: targets.map(([provider, model, state]) => ({ provider, model, state })) } });
const provider = (name: string): Resource => ({ metadata: { name, generation: 3 } });
const model = (name: string, ups: [string, string][]): Resource => ({ metadata: { name, generation: 1 }, spec: { upstreams: ups.map(([p, m]) => ({ protocol: 'openai', providerRef: { name: p }, model: m })) } });

describe('the ejected-targets report', () => {
  it('is empty when nothing is ejected, bounded to MAX_REPORTED targets, and counts the rest', () => {
    expect(encodeEjected([])).toBe('');
    const many = Array.from({ length: 40 }, (_, i) => ({ provider: 'p', model: `m${String(i).padStart(2, '0')}`, state: 'ejected' as const }));
    const text = encodeEjected(many);
    const back = decodeEjected(text);
    expect(back.total).toBe(40);
    expect(back.targets).toHaveLength(MAX_REPORTED);
    expect(text.length).toBeLessThan(2000);
    expect(decodeEjected(encodeEjected([{ provider: 'p', model: 'x'.repeat(10_000), state: 'half_open' }])).targets[0].model).toHaveLength(200);
  });

  it('reads anything malformed as nothing reported', () => {
    for (const bad of [undefined, '', 'not json', '[]', '{"targets":"x"}', 'null']) expect(decodeEjected(bad)).toEqual({ total: 0, targets: [] });
    expect(decodeEjected('{"total":-5,"targets":[{"provider":"p","model":"m","state":"ejected"},{"provider":1},{"provider":"p","model":"m","state":"on fire"}]}')).toEqual({ total: 1, targets: [{ provider: 'p', model: 'm', state: 'ejected' }] });
  });

  it('comes from each live pod\'s Lease annotation', () => {
    const now = Date.now();
    const lease = (name: string, ejected?: string) => ({ metadata: { name, annotations: { 'tollgate.dev/snapshot-generation': '4', ...(ejected === undefined ? {} : { 'tollgate.dev/ejected-upstreams': ejected }) } }, spec: { holderIdentity: name, leaseDurationSeconds: 15, renewTime: new Date(now) as never } });
    const pods = livePods([lease('a', encodeEjected([{ provider: 'p', model: 'm', state: 'ejected' }])), lease('b')], now);
    expect(pods.map((p) => [p.name, p.ejected.targets.length])).toEqual([['a', 1], ['b', 0]]);
  });
});

describe('condition UpstreamsHealthy', () => {
  const pods = [pod('gw-b', [['openai', 'gpt-4o', 'ejected'], ['anthropic', 'claude', 'half_open']]), pod('gw-a', [['openai', 'gpt-4o', 'half_open']]), pod('gw-c', [])];
  const all = aggregateEjections(pods);

  it('merges the pods\' reports per target, in a stable order', () => {
    expect(all).toEqual([
      { provider: 'anthropic', model: 'claude', pods: ['gw-b'], halfOpen: 1 },
      { provider: 'openai', model: 'gpt-4o', pods: ['gw-a', 'gw-b'], halfOpen: 1 },
    ]);
  });

  it('False on the Provider and the Models whose targets are ejected, naming targets and pods; True elsewhere', () => {
    expect(upstreamsCondition('Provider', provider('openai'), all, pods)).toEqual({ type: 'UpstreamsHealthy', observedGeneration: 3, status: 'False', reason: 'TargetsEjected', message: 'ejected: openai/gpt-4o on 2/3 pods (gw-a, gw-b)' });
    expect(upstreamsCondition('Model', model('m', [['anthropic', 'claude'], ['openai', 'gpt-4o-mini']]), all, pods)).toMatchObject({ status: 'False', message: 'ejected: anthropic/claude (half-open, awaiting a probe) on 1/3 pods (gw-b)' });
    expect(upstreamsCondition('Model', model('m', [['openai', 'gpt-4o-mini']]), all, pods)).toMatchObject({ status: 'True', reason: 'NoTargetsEjected' });
    expect(upstreamsCondition('Provider', provider('other'), all, pods)).toMatchObject({ status: 'True' });
    expect(upstreamsCondition('Provider', provider('openai'), [], [])).toMatchObject({ status: 'Unknown', reason: 'NoGatewayPods' });
  });

  it('a long list is cut: at most 8 targets and 5 pods each, the rest counted', () => {
    const many = Array.from({ length: 7 }, (_, i) => pod(`gw-${i}`, Array.from({ length: 10 }, (_, j) => ['p', `m${j}`, 'ejected'] as [string, string, 'ejected'])));
    const c = upstreamsCondition('Provider', provider('p'), aggregateEjections(many), many);
    expect(c.message).toContain('p/m0 on 7/7 pods (gw-0, gw-1, gw-2, gw-3, gw-4 and 2 more)');
    expect(c.message).toMatch(/; and 2 more$/);
    expect(c.message.length).toBeLessThan(1000);
  });

  it('a change is written at most once per interval: within it the current condition is kept, and the wait is said', () => {
    const cur: Condition = { type: 'UpstreamsHealthy', status: 'True', reason: 'NoTargetsEjected', message: 'none', observedGeneration: 3, lastTransitionTime: '2026-01-01T00:00:00Z' };
    const next = upstreamsCondition('Provider', provider('openai'), all, pods);
    expect(holdCondition(next, undefined, undefined, 0, 30_000)).toEqual({ condition: next, changed: true });
    expect(holdCondition(next, cur, undefined, 0, 30_000)).toEqual({ condition: next, changed: true });
    expect(holdCondition(next, cur, 1000, 11_000, 30_000)).toEqual({ condition: { type: 'UpstreamsHealthy', status: 'True', reason: 'NoTargetsEjected', message: 'none', observedGeneration: 3 }, changed: false, retryInMs: 20_000 });
    expect(holdCondition(next, cur, 1000, 31_000, 30_000)).toEqual({ condition: next, changed: true });
    const same = { ...next, lastTransitionTime: 'x' };
    expect(holdCondition(next, same, 1000, 1001, 30_000)).toEqual({ condition: next, changed: false });
    // A spec change (new generation) is not held: only the upstreams' news is rate-limited.
    const older = { ...next, observedGeneration: 2, lastTransitionTime: 'x' };
    expect(holdCondition(next, older, 1000, 1001, 30_000)).toEqual({ condition: next, changed: false });
    expect(holdCondition(next, { ...cur, observedGeneration: 2 }, 1000, 11_000, 30_000).condition.observedGeneration).toBe(3);
  });
});
