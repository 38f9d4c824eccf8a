// GET /api/business/v1/customer/usage?from=&to=: the key's project, [from, to), RFC 9457 errors.
import type { FastifyInstance } from 'fastify';
import { authenticate, presentedKey } from '../auth/authenticate.ts';
import type { ParamError } from '../errors.ts';
import { GatewayError } from '../errors.ts';
import type { GatewayContext } from './context.ts';
import { handle, snapshotOrFail } from './context.ts';
import { telemetryOf } from '../telemetry/request-hook.ts';

const MAX_RANGE_MS = 366 * 24 * 3600 * 1000;

export function registerUsageRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get(
    '/api/business/v1/customer/usage',
    handle('problem', async (req, reply) => {
      const key = authenticate(snapshotOrFail(ctx), presentedKey(req.headers));
      telemetryOf(req).admitted(key);
      const q = req.query as Record<string, unknown>;
      const { from, to } = parseRange(q.from, q.to);
      let report;
      try {
        report = await telemetryOf(req).traced('usage report query', () => ctx.ledger.usageReport({ project: key.project, from, to }));
      } catch (err) {
        req.log.warn({ err: (err as Error).message }, 'usage report failed');
        throw new GatewayError('ledger_unavailable', 'The usage store cannot be reached right now; try again shortly.');
      }
      await reply.header('cache-control', 'no-store').send(report);
    }),
  );
}

export function parseRange(fromRaw: unknown, toRaw: unknown): { from: Date; to: Date } {
  const errors: ParamError[] = [];
  const from = parseInstant('from', fromRaw, errors);
  const to = parseInstant('to', toRaw, errors);
  if (errors.length) throw new GatewayError('invalid_request', 'The from and to query parameters must be RFC 3339 timestamps or dates (YYYY-MM-DD).', { errors });
  if (to!.getTime() < from!.getTime()) {
    throw new GatewayError('invalid_request', '`to` is before `from`.', { status: 422, errors: [{ location: 'query.to', message: 'must not be before from', value: toRaw }] });
  }
  if (to!.getTime() - from!.getTime() > MAX_RANGE_MS) {
    throw new GatewayError('invalid_request', 'The range may span at most 366 days.', { status: 422, errors: [{ location: 'query.to', message: 'the range may span at most 366 days', value: toRaw }] });
  }
  return { from: from!, to: to! };
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATETIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$/;

function parseInstant(name: string, v: unknown, errors: ParamError[]): Date | undefined {
  if (v === undefined || v === '') {
    errors.push({ location: `query.${name}`, message: 'required', value: v ?? null });
    return undefined;
  }
  if (typeof v !== 'string' || !(DATE.test(v) || DATETIME.test(v))) {
    errors.push({ location: `query.${name}`, message: 'must be an RFC 3339 timestamp (2026-01-31T00:00:00Z) or a date (2026-01-31)', value: v });
    return undefined;
  }
  const d = new Date(DATE.test(v) ? `${v}T00:00:00Z` : v);
  // Date accepts 2026-02-31 by rolling over; a real calendar date must round-trip.
  if (Number.isNaN(d.getTime()) || (DATE.test(v) && d.toISOString().slice(0, 10) !== v)) {
    errors.push({ location: `query.${name}`, message: 'not a valid date', value: v });
    return undefined;
  }
  return d;
}
