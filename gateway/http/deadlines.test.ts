import { describe, expect, it } from 'vitest';
import { Deadlines, DeadlinesByDuration, slackMs } from './deadlines.ts';

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('shared deadlines', () => {
  it('fires each deadline no earlier than its duration and within the slack after it', async () => {
    const fired: { arg: string; at: number; ms: number }[] = [];
    const list = new Deadlines<string>(60, (arg, ms) => fired.push({ arg, at: performance.now(), ms }));
    const t0 = performance.now();
    list.add('a');
    await wait(20);
    const t1 = performance.now();
    list.add('b');
    await wait(150);
    expect(fired.map((f) => f.arg)).toEqual(['a', 'b']);
    expect(fired[0].ms).toBe(60);
    expect(fired[0].at - t0).toBeGreaterThanOrEqual(60);
    expect(fired[1].at - t1).toBeGreaterThanOrEqual(60);
    // Event-loop lag on a busy machine comes on top of the slack; the bound here leaves room for it.
    expect(fired[1].at - t1).toBeLessThan(60 + slackMs(60) + 60);
    expect(list.size).toBe(0);
  });

  it('never fires a cancelled deadline, and cancelling twice or after firing is harmless', async () => {
    const fired: string[] = [];
    const list = new Deadlines<string>(30, (arg) => fired.push(arg));
    const a = list.add('a');
    const b = list.add('b');
    const c = list.add('c');
    b.cancel();
    b.cancel();
    expect(list.size).toBe(2);
    a.cancel();
    await wait(100);
    expect(fired).toEqual(['c']);
    c.cancel();
    expect(list.size).toBe(0);
  });

  it('keeps serving deadlines armed after the list ran empty, and after its head was cancelled', async () => {
    const fired: string[] = [];
    const list = new Deadlines<string>(30, (arg) => fired.push(arg));
    list.add('first').cancel();
    await wait(10);
    list.add('second');
    await wait(100);
    expect(fired).toEqual(['second']);
    list.add('third');
    await wait(100);
    expect(fired).toEqual(['second', 'third']);
  });

  it('a throwing callback does not strand the deadlines after it', async () => {
    const fired: string[] = [];
    const list = new Deadlines<string>(20, (arg) => {
      fired.push(arg);
      if (arg === 'a') throw new Error('boom');
    });
    const errors: unknown[] = [];
    const onError = (err: unknown) => errors.push(err);
    process.on('uncaughtException', onError);
    try {
      list.add('a');
      list.add('b');
      await wait(100);
    } finally {
      process.off('uncaughtException', onError);
    }
    expect(fired).toEqual(['a', 'b']);
    expect(errors).toHaveLength(1);
  });

  it('keeps one list per duration', async () => {
    const fired: string[] = [];
    const by = new DeadlinesByDuration<string>((arg, ms) => fired.push(`${arg}:${ms}`));
    by.add(80, 'slow');
    by.add(20, 'fast');
    await wait(50);
    expect(fired).toEqual(['fast:20']);
    await wait(100);
    expect(fired).toEqual(['fast:20', 'slow:80']);
  });

  it('bounds the slack: 1/20 of the duration, at least 1 ms, at most 0.5 s', () => {
    expect(slackMs(5)).toBe(1);
    expect(slackMs(200)).toBe(10);
    expect(slackMs(30_000)).toBe(500);
    expect(slackMs(600_000)).toBe(500);
  });
});
