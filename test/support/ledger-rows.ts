// Ledger rows for tests: realistic defaults, unique request ids, any field overridable.
import { randomBytes } from 'node:crypto';
import type { LedgerRow } from '../../gateway/ledger/row.ts';

let counter = 0;

export function ledgerRow(overrides: Partial<LedgerRow> = {}): LedgerRow {
  counter++;
  return {
    requestId: `req_${randomBytes(6).toString('hex')}_${counter}`,
    occurredAt: Date.UTC(2025, 5, 1, 12, 30),
    organization: 'org-a',
    project: 'proj-a',
    apiKeyId: 'key-1',
    clientModel: 'gpt-4o',
    modelId: 'gpt-4o',
    provider: 'openai',
    upstreamModel: 'gpt-4o-2024-08-06',
    endpoint: '/api/v1/chat/completions',
    stream: false,
    input: 100,
    output: 20,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning: 0,
    artifacts: 0,
    explicitCache: false,
    estimated: false,
    costPoints: '0.0015',
    originalCost: '0.0015',
    detail: { prompt_tokens: 100, completion_tokens: 20 },
    ...overrides,
  };
}

/** A unique project name, so tests sharing one database do not see each other's rows. */
export function freshProject(label = 'p'): string {
  return `${label}-${randomBytes(4).toString('hex')}`;
}
