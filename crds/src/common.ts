// Field shapes shared by the five kinds: names, references, prices, and the status every kind carries.
import { int, list, obj, str, type Schema } from './openapi.ts';

export const GROUP = 'tollgate.dev';
export const VERSION = 'v1alpha1';
export const CATEGORY = 'tollgate';

// DNS-1123 subdomain: what metadata.name accepts, so a reference can name any object of the kind.
const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

// The snapshot's id alphabet (gateway/snapshot/schema.ts `slug`): projects land there verbatim.
export const SLUG = '^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$';

// Exact decimals as strings: a YAML float (2.5) would be rounded on its way through JSON.
export const DECIMAL = '^[0-9]+(\\.[0-9]+)?$';

export function name(description: string): Schema {
  return str(description, { minLength: 1, maxLength: 253, pattern: DNS_SUBDOMAIN });
}

export function decimal(description: string): Schema {
  return str(`${description} A decimal string such as "2.5" (quote it in YAML so it stays exact).`, { maxLength: 32, pattern: DECIMAL });
}

/** A reference to another tollgate object of `kind` in the same namespace. */
export function localRef(kind: string, description: string): Schema {
  return obj(description, { name: name(`Name of the ${kind} in this namespace.`) }, ['name']);
}

export function secretKeyRef(description: string): Schema {
  return obj(description, {
    name: name('Name of the Secret in this namespace.'),
    key: str('Key within the Secret whose value is used.', { minLength: 1, maxLength: 253, pattern: '^[-._a-zA-Z0-9]+$' }),
  }, ['name', 'key']);
}

// metav1.Condition, field for field, so kubectl wait --for=condition=Ready and kstatus tooling work.
const condition = obj(
  'Condition contains details for one aspect of the current state of this resource.',
  {
    type: str('Type of condition in CamelCase: Ready (compiled into the snapshot), Applied (served by the gateway pods) or, on Providers and Models, UpstreamsHealthy (no gateway pod has one of its upstream targets ejected).', {
      maxLength: 316,
      pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    }),
    status: str('Status of the condition: True, False or Unknown.', { enum: ['True', 'False', 'Unknown'] }),
    observedGeneration: int('The .metadata.generation the condition was set from.', { minimum: 0 }),
    lastTransitionTime: str('Last time the condition changed from one status to another.', { format: 'date-time' }),
    reason: str('Programmatic CamelCase identifier of the last transition, e.g. PricingGroupNotFound.', {
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    }),
    message: str('Human-readable detail of the last transition, e.g. which reference is missing.', { maxLength: 32768 }),
  },
  ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
);

/** Status fields every kind has; `extra` adds the kind's own (e.g. the ApiKey's Secret name). */
export function status(extra: Record<string, Schema> = {}): Schema {
  return obj('Observed state, written by the tollgate operator. Read-only for users.', {
    observedGeneration: int('The .metadata.generation the operator last reconciled.', { minimum: 0 }),
    conditions: list('Ready: compiled into the gateway snapshot (False with a reason when a reference is missing or invalid). Applied: how many gateway pods serve this generation, e.g. "3/3 pods serve generation 7". UpstreamsHealthy (Provider, Model): False with reason TargetsEjected while gateway pods report one of its upstream targets ejected, naming the targets and pods.', condition, {
      maxItems: 8,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    }),
    ...extra,
  });
}

// Routing policy (docs/routing.md): the same fields on a Provider (its upstreams' default) and a Model (over it).
const ms = (what: string, dflt: number) => int(`${what} In milliseconds; default ${dflt}.`, { minimum: 1, maximum: 3_600_000 });
export const routingFields: Record<string, Schema> = {
  maxAttempts: int('Attempts in all, the first included; default 3, 1 never retries. Retries happen only before anything reached the client, on connect errors, first-byte timeouts, 408, 429, 500, 502, 503 and 504.', { minimum: 1, maximum: 10 }),
  backoffBaseMs: ms('Backoff before retry n is uniform in [0, min(backoffMaxMs, backoffBaseMs*2^(n-1))] (full jitter).', 100),
  backoffMaxMs: ms('Longest single backoff.', 2_000),
  retryAfterCapMs: int('An upstream retry-after longer than this is not waited for: its answer goes to the client. In milliseconds; default 10000.', { minimum: 0, maximum: 3_600_000 }),
  ejectAfter: int('Consecutive failed attempts that eject a target; default 5.', { minimum: 1, maximum: 1_000_000 }),
  ejectFailurePercent: int('Failure-ratio ejection: a target is ejected when at least this percentage of its attempts in the window failed; default 50, 0 turns it off.', { minimum: 0, maximum: 100 }),
  ejectMinRequests: int('Attempts the window must hold before its failure ratio can eject a target; default 20.', { minimum: 1, maximum: 1_000_000 }),
  ejectWindowMs: int('Length of the sliding failure-ratio window, in milliseconds; it slides in tenths. Default 10000.', { minimum: 100, maximum: 600_000 }),
  ejectBaseMs: ms('Cooldown of a first ejection; it doubles on each repeat until a half-open probe succeeds.', 5_000),
  ejectMaxMs: ms('Longest ejection cooldown.', 300_000),
  maxConcurrency: int('Requests in flight per target; a full target is skipped, all full answers 503. Default 0: unbounded.', { minimum: 0, maximum: 1_000_000 }),
};
