// A stream meter watches SSE events (already split by a real parser) and keeps the usage seen so far.
import type { Usage } from './usage.ts';

export interface SseEvent {
  event?: string;
  data: string;
}

export interface StreamMeter {
  push(ev: SseEvent): void;
  /** True once the upstream's terminal event passed: usage is final and the row can be journaled. */
  readonly done: boolean;
  /** What the upstream reported; `estimated` when it never gave usage. */
  usage(): Usage;
  /**
   * UTF-8 bytes of the content the events carried so far (text, tool-call arguments, thinking; never framing):
   * what a cut stream's output is estimated from.
   */
  readonly contentBytes: number;
  /** contentBytes when the latest output count was reported: content up to there is in that count (0: none is). */
  readonly countedBytes: number;
}

export interface UsageReader {
  fromJson(body: unknown): Usage | null;
  /** Set when fromJson reads nothing but this one top-level member: the relay may then parse only that member. */
  usageMember?: string;
  stream(): StreamMeter;
}
