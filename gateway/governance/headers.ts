// Rate-limit headers in the names each SDK family knows: OpenAI's x-ratelimit-* and Anthropic's anthropic-ratelimit-*.
import type { ServerResponse } from 'node:http';
import type { ErrorFamily } from '../errors.ts';
import type { Verdict } from './backend.ts';
import type { Rule } from './rules.ts';

/** OpenAI's duration text: "20ms", "6s", "1m30s". */
export function resetText(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${s % 60}s`;
}

/** Sets the headers for the tightest rpm and tpm rules (the ones with the least left). */
export function setRateHeaders(raw: ServerResponse, family: ErrorFamily, rules: readonly Rule[], v: Verdict, now: number): void {
  let req = -1;
  let tok = -1;
  for (let i = 0; i < rules.length; i++) {
    const k = rules[i].kind;
    if (v.remaining[i] === undefined) continue;
    if (k === 'rpm' && (req < 0 || (v.remaining[i] as number) < (v.remaining[req] as number))) req = i;
    else if (k === 'tpm' && (tok < 0 || (v.remaining[i] as number) < (v.remaining[tok] as number))) tok = i;
  }
  if (family === 'messages') {
    if (req >= 0) setAnthropic(raw, 'requests', rules[req].limit, v.remaining[req] as number, now + v.resetMs[req]);
    if (tok >= 0) setAnthropic(raw, 'tokens', rules[tok].limit, v.remaining[tok] as number, now + v.resetMs[tok]);
    return;
  }
  if (req >= 0) setOpenAi(raw, 'requests', rules[req].limit, v.remaining[req] as number, v.resetMs[req]);
  if (tok >= 0) setOpenAi(raw, 'tokens', rules[tok].limit, v.remaining[tok] as number, v.resetMs[tok]);
}

function setOpenAi(raw: ServerResponse, what: string, limit: number, remaining: number, resetMs: number): void {
  raw.setHeader(`x-ratelimit-limit-${what}`, String(limit));
  raw.setHeader(`x-ratelimit-remaining-${what}`, String(remaining));
  raw.setHeader(`x-ratelimit-reset-${what}`, resetText(resetMs));
}

function setAnthropic(raw: ServerResponse, what: string, limit: number, remaining: number, resetAt: number): void {
  raw.setHeader(`anthropic-ratelimit-${what}-limit`, String(limit));
  raw.setHeader(`anthropic-ratelimit-${what}-remaining`, String(remaining));
  raw.setHeader(`anthropic-ratelimit-${what}-reset`, new Date(Math.ceil(resetAt / 1000) * 1000).toISOString().replace('.000Z', 'Z'));
}
