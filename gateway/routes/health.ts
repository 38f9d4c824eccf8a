// /healthz: the process is alive. /readyz: a snapshot is loaded and known current (cluster mode: its watch has not
// been broken longer than the staleness bound) and usage can be recorded: the database answers,
// or while it does not, the local journal still has room (docs/contract.md, durability; docs/adr/0003).
import type { FastifyInstance } from 'fastify';
import type { GatewayContext } from './context.ts';

export function registerHealthRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_req, reply) => {
    const snapshot = ctx.holder.current;
    const ledger = ctx.ledger.health();
    const database = await ctx.databaseReachable();
    const stale = ctx.holder.stale;
    const ready = !ctx.draining.value && snapshot !== undefined && stale === undefined && ledger.ready;
    await reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'not_ready',
      snapshot: snapshot ? { version: snapshot.version, generation: snapshot.generation, ...(stale === undefined ? {} : { stale }) } : null,
      database,
      ledger,
      draining: ctx.draining.value,
    });
  });
}
