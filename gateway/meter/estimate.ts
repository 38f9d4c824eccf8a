// Estimates, always flagged `estimated`: used only where the upstream did not report (all of) its usage.
import type { Usage } from './usage.ts';
import { emptyUsage } from './usage.ts';

/** Tokens of a request or a non-stream answer from its bytes: the coarse 4-bytes-per-token rule. */
export function estimateUsage(requestBytes: number, responseBytes: number): Usage {
  return { ...emptyUsage(), input: Math.ceil(requestBytes / 4), output: Math.ceil(responseBytes / 4), estimated: true };
}

/** Output tokens of content the client received: UTF-8 bytes / 4 (docs/contract.md, usage). */
export function contentTokens(contentBytes: number): number {
  return Math.ceil(contentBytes / 4);
}

/**
 * The usage of a stream that ended without the provider's final usage (cut, client left, drain budget, no usage
 * event): input and cache figures as reported when the provider reported any (Anthropic's message_start carries
 * the real input), else the prompt estimate. Output is never below what was reported: when the last report counted
 * content (a cumulative count: Gemini's per-chunk usage, a message_delta), that count plus the estimate of the
 * content streamed after it; else (no count, or message_start's placeholder) the larger of the report and the
 * estimate of all content streamed. A stream whose final usage came is returned as reported.
 */
export function streamUsage(reported: Usage, done: boolean, meter: { contentBytes: number; countedBytes: number }, requestBytes: number): Usage {
  if (done && !reported.estimated) return reported;
  const { contentBytes, countedBytes } = meter;
  const output = countedBytes > 0 ? reported.output + contentTokens(contentBytes - countedBytes) : Math.max(reported.output, contentTokens(contentBytes));
  if (reported.detail === null && reported.input === 0 && reported.output === 0) {
    // Images counted without usage stay unguessed: their bytes are base64, not tokens.
    if (reported.artifacts > 0 && contentBytes === 0) return { ...reported, estimated: true };
    return { ...reported, input: Math.ceil(requestBytes / 4), output, estimated: true };
  }
  return { ...reported, output, estimated: true };
}
