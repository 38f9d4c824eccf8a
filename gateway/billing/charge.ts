// Turns a metered answer into the ledger row and the cost the client is told (docs/contract.md: usage, pricing).
import type { LedgerRow } from '../ledger/row.ts';
import type { Usage } from '../meter/usage.ts';
import type { RuntimeKey, RuntimeModel, UpstreamTarget } from '../snapshot/runtime.ts';
import type { BillingRule } from './pricing.ts';
import { priceUsage } from './pricing.ts';

export interface ChargeContext {
  requestId: string;
  key: RuntimeKey;
  model: RuntimeModel;
  clientModel: string;
  endpoint: string;
  stream: boolean;
  billing: BillingRule;
}

/** `status` is what the client was answered; `latencyMs` the time since the request arrived (both recorded when known). */
export function charge(ctx: ChargeContext, target: UpstreamTarget, usage: Usage, now = Date.now(), attempts = 1, status?: number, latencyMs?: number): LedgerRow {
  const cost = priceUsage(ctx.model.pricing, usage, ctx.key.organization.discount, ctx.billing);
  return {
    requestId: ctx.requestId,
    occurredAt: now,
    organization: ctx.key.organization.id,
    project: ctx.key.project,
    apiKeyId: ctx.key.id,
    clientModel: ctx.clientModel,
    modelId: ctx.model.id,
    provider: target.provider.id,
    upstreamModel: target.model,
    endpoint: ctx.endpoint,
    stream: ctx.stream,
    input: usage.input,
    output: usage.output,
    cacheRead: usage.cacheRead,
    cacheWrite: usage.cacheWrite,
    reasoning: usage.reasoning,
    artifacts: usage.artifacts,
    explicitCache: usage.explicitCache,
    estimated: usage.estimated,
    costPoints: cost.costPoints,
    originalCost: cost.originalCost,
    detail: usage.detail,
    attempts,
    status,
    latencyMs: latencyMs === undefined ? undefined : Math.round(latencyMs),
    keyPrefix: ctx.key.prefix,
  };
}
