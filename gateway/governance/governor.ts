// The governor: one admission before the upstream is contacted, one settlement after the ledger row is written.
// A key with no limits anywhere (key.governance undefined) returns at the first line: no allocation, no await.
import type { FastifyReply } from 'fastify';
import { selectTier } from '../billing/pricing.ts';
import type { BillingRule, CompiledPricing } from '../billing/pricing.ts';
import type { Decimal } from '../billing/decimal.ts';
import { pow10 } from '../billing/decimal.ts';
import type { ErrorFamily } from '../errors.ts';
import { GatewayError } from '../errors.ts';
import type { LedgerRow } from '../ledger/row.ts';
import type { RuntimeKey, RuntimeModel, UpstreamTarget } from '../snapshot/runtime.ts';
import type { AdmitInput, CounterBackend, SettleInput, Verdict } from './backend.ts';
import { headerPlan, setRateHeaders } from './headers.ts';
import type { HeaderPlan } from './headers.ts';
import type { LimitsView } from './limits-view.ts';
import { periodEnd, periodId } from './periods.ts';
import type { Rule } from './rules.ts';
import { costToUnits, SPEND_SCALE, toUnits, unitsToPoints } from './spend-units.ts';

export type { LimitsView } from './limits-view.ts';

/** What admission needs from a relay call. */
export interface GovernedCall {
  requestId: string;
  key: RuntimeKey;
  model: RuntimeModel;
  family: ErrorFamily;
  billing: BillingRule;
  requestBytes: number;
  targets: UpstreamTarget[];
}

export interface GovernorOptions {
  backend: CounterBackend;
  /** Injectable clock (tests move it across a calendar boundary). */
  now?: () => number;
}

// Lease names only need to be unique within this process (a shared backend's local view is per pod).
let seq = 0;

export class Governor {
  readonly backend: CounterBackend;
  readonly now: () => number;
  /** The last ledger reconciliation's spend per organization and key with a budget (JSON, spend-report.ts). */
  spendReport: string | undefined;

  constructor(opts: GovernorOptions) {
    this.backend = opts.backend;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Admits the call under every rule that applies, or throws a 429 GatewayError (headers already set on the reply).
   * Returns undefined, synchronously, when nothing applies to the key.
   */
  admit(call: GovernedCall, reply: FastifyReply): Ticket | Promise<Ticket> | undefined {
    const gov = call.key.governance;
    if (gov === undefined) return undefined;
    const rules = gov.byModel.size === 0 ? gov.rules : (gov.byModel.get(call.model.id) ?? gov.rules);
    if (rules.length === 0) return undefined;
    const now = this.now();
    const set = ruleSetOf(rules, now);
    // The reservation: the request's input priced as if 4 bytes were one token (no output assumed). See docs/limits.md for the bound this gives.
    const reserve = !set.budgets || call.billing === 'output_only' ? 0n : inputUnits(call.model.pricing, Math.ceil(call.requestBytes / 4), call.key.organization.discount);
    const ticket = new Ticket(this, call, set, now, reserve);
    // The ticket is the backend's admission input (and later its settlement input): no object built per call.
    const v = this.backend.admit(ticket);
    if (v instanceof Promise) return v.then((verdict) => this.decide(ticket, verdict, reply));
    return this.decide(ticket, v, reply);
  }

  private decide(t: Ticket, v: Verdict, reply: FastifyReply): Ticket {
    setRateHeaders(reply, t.call.family, t.set.headers, v, t.now);
    if (!v.ok) {
      const r = t.rules[v.refused];
      if (r.kind === 'budget') {
        reply.header('x-should-retry', 'false');
        const end = periodEnd(r.period!, t.now);
        if (end !== Infinity) reply.header('retry-after', String(Math.ceil((end - t.now) / 1000)));
        throw new GatewayError('quota_exceeded', `The ${r.period === 'total' ? 'total' : r.period === 'day' ? 'daily' : 'monthly'} budget of ${unitsToPoints(r.units!)} points for ${scopeText(r)} is spent.`);
      }
      reply.header('retry-after', String(Math.max(1, Math.ceil(v.retryAfterMs / 1000))));
      reply.header('retry-after-ms', String(Math.max(1, Math.ceil(v.retryAfterMs))));
      throw new GatewayError('rate_limited', `Rate limit reached for ${scopeText(r)}${r.model ? ` on model ${r.model}` : ''}: ${limitText(r)}. Try again in ${Math.max(1, Math.ceil(v.retryAfterMs / 1000))}s.`);
    }
    for (let j = 0; j < t.set.soft.length; j++) {
      const i = t.set.soft[j];
      const r = t.rules[i];
      if (v.spent[i] >= r.softUnits!) {
        reply.header('x-tollgate-budget-warning', `${scopeText(r)}: ${r.period} budget past ${unitsToPoints(r.softUnits!)} of ${unitsToPoints(r.units!)} points`);
        break;
      }
    }
    return t;
  }

  /** The limits and budgets of a key with what is left, for GET /api/business/v1/customer/limits. */
  async describe(key: RuntimeKey): Promise<LimitsView> {
    const gov = key.governance;
    const rules: Rule[] = gov ? [...gov.rules] : [];
    if (gov) for (const list of gov.byModel.values()) for (const r of list) if (!rules.includes(r)) rules.push(r);
    return { key: key.id, project: key.project, organization: key.organization.id, backend: this.backend.kind, ...(await this.describeRules(rules)) };
  }

  /** What is left of each rule's limit or budget now (an organization's or a project's rules, for the admin API). */
  async describeRules(rules: readonly Rule[]): Promise<Pick<LimitsView, 'limits' | 'budgets'>> {
    const now = this.now();
    const spendKeys = rules.map((r) => (r.kind === 'budget' ? r.id + periodId(r.period!, now) : undefined));
    const v = await this.backend.peek(rules, spendKeys, now);
    const view: Pick<LimitsView, 'limits' | 'budgets'> = { limits: [], budgets: [] };
    rules.forEach((r, i) => {
      if (r.kind === 'budget') {
        const left = r.units! - v.spent[i];
        const end = periodEnd(r.period!, now);
        view.budgets.push({
          scope: r.scope,
          owner: r.owner,
          period: r.period!,
          points: unitsToPoints(r.units!),
          spent: unitsToPoints(r.units! - left),
          remaining: unitsToPoints(left > 0n ? left : 0n),
          ...(r.softUnits !== undefined ? { soft_points: unitsToPoints(r.softUnits) } : {}),
          resets_at: end === Infinity ? null : new Date(end).toISOString(),
        });
      } else {
        view.limits.push({ scope: r.scope, owner: r.owner, kind: r.kind, ...(r.model ? { model: r.model } : {}), limit: r.limit, remaining: Math.max(0, v.remaining[i]), reset_seconds: Math.ceil(v.resetMs[i] / 1000) });
      }
    });
    return view;
  }

  close(): Promise<void> {
    return this.backend.close();
  }
}

const DAY_MS = 86_400_000;

/** What the governor derives from one rules list, for the current UTC day (a month changes on a day boundary too). */
interface RuleSet {
  rules: readonly Rule[];
  day: number;
  /** Parallel to the rules: a budget's counter name for the period, undefined for a rate rule. */
  keys: readonly (string | undefined)[];
  budgets: boolean;
  /** The budgets with a soft threshold. */
  soft: number[];
  headers: HeaderPlan;
}

// Per rules list (compiled once per snapshot): every request of a day shares one entry, so a request makes one lookup
// here, and backends may cache what they derive from the rules by the identity of its spend-key list.
const ruleSets = new WeakMap<readonly Rule[], RuleSet>();

function ruleSetOf(rules: readonly Rule[], now: number): RuleSet {
  const day = Math.floor(now / DAY_MS);
  const c = ruleSets.get(rules);
  if (c !== undefined && c.day === day) return c;
  const soft: number[] = [];
  rules.forEach((r, i) => r.softUnits !== undefined && soft.push(i));
  const next: RuleSet = {
    rules,
    day,
    keys: rules.map((r) => (r.kind === 'budget' ? r.id + periodId(r.period!, now) : undefined)),
    budgets: rules.some((r) => r.kind === 'budget'),
    soft,
    headers: c?.headers ?? headerPlan(rules),
  };
  ruleSets.set(rules, next);
  return next;
}

/** `tokens` input tokens at the model's input price and the discount, in femtopoints (rounded up). */
function inputUnits(pricing: CompiledPricing, tokens: number, orgDiscount: Decimal | undefined): bigint {
  const price = selectTier(pricing, tokens).input;
  const discount = orgDiscount ?? pricing.discount;
  // tokens × price per million × discount: scale = price + 6 + discount.
  const scale = price.scale + 6 + discount.scale;
  if (scale > SPEND_SCALE) return toUnits({ units: BigInt(tokens) * price.units * discount.units, scale });
  // Femtopoints per token are then an integer: one multiply per request, exact as a double below 2^53.
  let f = perToken.get(price);
  if (f === undefined || f.discount !== discount) {
    const units = price.units * discount.units * pow10(SPEND_SCALE - scale);
    perToken.set(price, (f = { discount, units, number: Number(units) }));
  }
  const n = tokens * f.number;
  return Number.isSafeInteger(n) ? BigInt(n) : BigInt(tokens) * f.units;
}

/** An input price's femtopoints per token at the discount it was last asked with (most keys of a price share one). */
interface PerToken {
  discount: Decimal;
  units: bigint;
  number: number;
}
// Keyed by the tier's price (compiled once per snapshot): a reload drops it with the old prices.
const perToken = new WeakMap<Decimal, PerToken>();

/**
 * One admitted request: knows what it reserved, learns the exact charge from the ledger row, settles once. It is the
 * backend's input for both (AdmitInput, then SettleInput once finished).
 */
export class Ticket implements AdmitInput, SettleInput {
  readonly tokens: number;
  readonly call: GovernedCall;
  readonly rules: readonly Rule[];
  readonly spendKeys: readonly (string | undefined)[];
  readonly set: RuleSet;
  readonly now: number;
  readonly reserve: bigint;
  counted = false;
  /** Set by finish: real tokens minus the estimate, exact charge minus the reservation. */
  tokensDelta = 0;
  spendDelta = 0n;
  private readonly gov: Governor;
  private row: LedgerRow | undefined;
  private leaseId: string | undefined;
  private done = false;
  constructor(gov: Governor, call: GovernedCall, set: RuleSet, now: number, reserve: bigint) {
    this.gov = gov;
    this.call = call;
    this.set = set;
    this.rules = set.rules;
    this.spendKeys = set.keys;
    this.now = now;
    this.reserve = reserve;
    this.tokens = Math.ceil(call.requestBytes / 4);
  }

  /** The request's name, made on first use: only a shared backend serving from its local view asks for it. */
  get lease(): string {
    return (this.leaseId ??= String(++seq));
  }

  /** Called with the row the ledger took: the exact charge and real tokens replace the reservation. */
  charged(row: LedgerRow): void {
    this.row = row;
  }

  /** Settles spend and tokens and frees the concurrency slot; a request never billed gives its reservation back. */
  finish(): void {
    if (this.done) return;
    this.done = true;
    const row = this.row;
    this.tokensDelta = (row ? row.input + row.cacheRead + row.cacheWrite + row.output : 0) - this.tokens;
    // The exact charge is parsed only where a budget counts it.
    this.spendDelta = (row && this.set.budgets ? costToUnits(row.costPoints) : 0n) - this.reserve;
    void this.gov.backend.settle(this);
  }
}

function scopeText(r: Rule): string {
  return `${r.scope} "${r.owner}"`;
}

function limitText(r: Rule): string {
  if (r.kind === 'rpm') return `${r.limit} requests per minute`;
  if (r.kind === 'tpm') return `${r.limit} tokens per minute`;
  return `${r.limit} concurrent requests`;
}
