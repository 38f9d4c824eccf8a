// Exponential backoff with jitter, so pods that lost the same database do not retry in step.
export interface RetryPolicy {
  baseMs: number;
  capMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { baseMs: 100, capMs: 5_000 };

/** Delay before attempt `failures + 1`: half fixed, half random, never above the cap. */
export function retryDelay(failures: number, policy: RetryPolicy = DEFAULT_RETRY, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(failures - 1, 30));
  return ceiling / 2 + random() * (ceiling / 2);
}
