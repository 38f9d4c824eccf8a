import { describe, expect, it } from 'vitest';
import { retryDelay } from './retry-delay.ts';

describe('retry delay', () => {
  const policy = { baseMs: 100, capMs: 5_000 };

  it('doubles per failure between half and all of the ceiling', () => {
    expect(retryDelay(1, policy, () => 0)).toBe(50);
    expect(retryDelay(1, policy, () => 1)).toBe(100);
    expect(retryDelay(4, policy, () => 0)).toBe(400);
    expect(retryDelay(4, policy, () => 1)).toBe(800);
  });

  it('never exceeds the cap, however many failures', () => {
    expect(retryDelay(7, policy, () => 1)).toBe(5_000);
    expect(retryDelay(10_000, policy, () => 1)).toBe(5_000);
    expect(retryDelay(10_000, policy, () => 0)).toBe(2_500);
  });
});
