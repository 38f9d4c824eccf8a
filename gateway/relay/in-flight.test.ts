import { describe, expect, it } from 'vitest';
import { DrainCutError, InFlight } from './in-flight.ts';

describe('InFlight', () => {
  it('cuts every open relay, and any that starts after the cut, with the drain-cut reason', () => {
    const f = new InFlight();
    const a = new AbortController();
    f.add(a);
    f.cut();
    expect(a.signal.reason).toBeInstanceOf(DrainCutError);
    const late = new AbortController();
    f.add(late);
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toBe(a.signal.reason);
  });

  it('settles once the last relay is done, or reports that time ran out', async () => {
    const f = new InFlight();
    expect(await f.settled(10)).toBe(true);
    const a = new AbortController();
    const b = new AbortController();
    f.add(a);
    f.add(b);
    expect(await f.settled(20)).toBe(false);
    const done = f.settled(1000);
    f.delete(a);
    expect(f.size).toBe(1);
    f.delete(b);
    expect(await done).toBe(true);
  });
});
