import { describe, expect, it } from 'vitest';
import { pause } from '../resilience/backoff.ts';
import { AbortSwitch, watchAbort } from './abort-switch.ts';

describe('AbortSwitch', () => {
  it('tells every watcher still watching, once, with the first reason', () => {
    const s = new AbortSwitch();
    const told: string[] = [];
    const a = { onAbort: () => told.push('a') };
    const b = { onAbort: () => told.push('b') };
    const c = { onAbort: () => told.push('c') };
    s.watch(a);
    s.watch(b);
    s.watch(c);
    s.unwatch(b);
    const first = new Error('first');
    s.abort(first);
    s.abort(new Error('second'));
    expect(told).toEqual(['a', 'c']);
    expect(s.aborted).toBe(true);
    expect(s.reason).toBe(first);
  });

  it('watches a standard AbortSignal the same way, and stops when told', () => {
    const c = new AbortController();
    let n = 0;
    const stop = watchAbort(c.signal, { onAbort: () => n++ });
    stop();
    c.abort();
    expect(n).toBe(0);
    const d = new AbortController();
    watchAbort(d.signal, { onAbort: () => n++ });
    d.abort();
    expect(n).toBe(1);
  });

  it('ends a backoff pause at once when thrown', async () => {
    const s = new AbortSwitch();
    expect(await pause(5, s)).toBe(true);
    const waiting = pause(60_000, s);
    s.abort(new Error('cut'));
    expect(await waiting).toBe(false);
  });
});
