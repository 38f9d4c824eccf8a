// Used only when an upstream gave no usage at all: a coarse 4-bytes-per-token guess, always flagged estimated.
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';

export function estimateUsage(requestBytes: number, responseBytes: number): Usage {
  return { ...emptyUsage(), input: Math.ceil(requestBytes / 4), output: Math.ceil(responseBytes / 4), estimated: true };
}
