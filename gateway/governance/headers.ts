// Rate-limit headers in the names each SDK family knows: OpenAI's x-ratelimit-* and Anthropic's anthropic-ratelimit-*.
import type { FastifyReply } from 'fastify';
import type { ErrorFamily } from '../errors.ts';
import type { Verdict } from './backend.ts';
import type { Rule } from './rules.ts';

/** OpenAI's duration text: "20ms", "6s", "1m30s". */
export function resetText(ms: number): string {
  if (ms < 1000) {
    const n = Math.max(0, Math.ceil(ms));
    // Below a second the texts are few: each is built once, not per answer.
    return (MS_TEXT[n] ??= `${n}ms`);
  }
  const s = Math.ceil(ms / 1000);
  if (s < 60) return (S_TEXT[s] ??= `${s}s`);
  return `${Math.floor(s / 60)}m${s % 60}s`;
}
const MS_TEXT: string[] = [];
const S_TEXT: string[] = [];

/**
 * Sets the headers for the tightest rpm and tpm rules (the ones with the least left) on the fastify reply, not the
 * Node response: Node then validates them once with the answer's own headers in writeHead, instead of in setHeader
 * and again moving every other header of the answer through setHeader (a hijacked stream merges them, relay.ts).
 */
export function setRateHeaders(reply: FastifyReply, family: ErrorFamily, p: HeaderPlan, v: Verdict, now: number): void {
  let req = -1;
  let tok = -1;
  for (let j = 0; j < p.rpm.length; j++) {
    const i = p.rpm[j];
    if (v.remaining[i] !== undefined && (req < 0 || v.remaining[i] < v.remaining[req])) req = i;
  }
  for (let j = 0; j < p.tpm.length; j++) {
    const i = p.tpm[j];
    if (v.remaining[i] !== undefined && (tok < 0 || v.remaining[i] < v.remaining[tok])) tok = i;
  }
  const names = family === 'messages' ? ANTHROPIC : OPENAI;
  if (req >= 0) set(reply, names.requests, family, p.limits[req], v.remaining[req], v.resetMs[req], now);
  if (tok >= 0) set(reply, names.tokens, family, p.limits[tok], v.remaining[tok], v.resetMs[tok], now);
}

/** Per rules list (compiled once per snapshot, kept by the governor): where its rpm and tpm rules are, and their limits as header text. */
export interface HeaderPlan {
  rpm: number[];
  tpm: number[];
  limits: (string | undefined)[];
}

export function headerPlan(rules: readonly Rule[]): HeaderPlan {
  const p: HeaderPlan = { rpm: [], tpm: [], limits: [] };
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i];
    if (r.kind === 'rpm') p.rpm.push(i);
    else if (r.kind === 'tpm') p.tpm.push(i);
    p.limits.push(r.kind === 'rpm' || r.kind === 'tpm' ? String(r.limit) : undefined);
  }
  return p;
}

// Header names built once: [limit, remaining, reset].
const OPENAI = {
  requests: ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'],
  tokens: ['x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'],
} as const;
const ANTHROPIC = {
  requests: ['anthropic-ratelimit-requests-limit', 'anthropic-ratelimit-requests-remaining', 'anthropic-ratelimit-requests-reset'],
  tokens: ['anthropic-ratelimit-tokens-limit', 'anthropic-ratelimit-tokens-remaining', 'anthropic-ratelimit-tokens-reset'],
} as const;

function set(reply: FastifyReply, names: readonly [string, string, string], family: ErrorFamily, limit: string | undefined, remaining: number, resetMs: number, now: number): void {
  reply.header(names[0], limit!);
  reply.header(names[1], String(remaining));
  // OpenAI: a duration ("6s"); Anthropic: the RFC 3339 time of the reset, to the second.
  reply.header(names[2], family === 'messages' ? resetTime(Math.ceil((now + resetMs) / 1000)) : resetText(resetMs));
}

// The RFC 3339 text of the last second asked for: answers within a second share it.
let lastSecond = NaN;
let lastTime = '';
function resetTime(second: number): string {
  if (second !== lastSecond) {
    lastTime = new Date(second * 1000).toISOString().replace('.000Z', 'Z');
    lastSecond = second;
  }
  return lastTime;
}
