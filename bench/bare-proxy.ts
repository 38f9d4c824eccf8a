// The floor for Node: fastify + one undici Agent that only forwards (no auth, no parsing, no metering).
//   node bench/bare-proxy.ts --port N --upstream http://127.0.0.1:M [--buffered]
// Streamed (default) pipes the upstream body back; --buffered reads a JSON answer whole and sends one Buffer, which
// is cheaper per request (SSE answers are streamed either way). The bench takes the better of the two as the floor.
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { Agent } from 'undici';

const { values } = parseArgs({ options: { port: { type: 'string' }, upstream: { type: 'string' }, buffered: { type: 'boolean', default: false } } });
const buffered = values.buffered;
const origin = new URL(values.upstream ?? 'http://127.0.0.1:8081').origin;
// Same upstream settings as the gateway's client, except no cap below the fd limit: every stream holds a socket.
const agent = new Agent({ connections: null, pipelining: 1, keepAliveTimeout: 30_000, allowH2: false, connect: { timeout: 30_000 }, headersTimeout: 120_000, bodyTimeout: 120_000 });

const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
app.get('/healthz', async () => ({ status: 'ok' }));
app.post('/*', async (req, reply) => {
  const res = await agent.request({
    origin,
    path: req.url,
    method: 'POST',
    headers: { 'content-type': req.headers['content-type'] ?? 'application/json', authorization: req.headers.authorization ?? '' },
    body: req.body as Buffer,
  });
  const type = String(res.headers['content-type'] ?? 'application/json');
  reply.code(res.statusCode).header('content-type', type);
  if (buffered && !type.includes('text/event-stream')) return reply.send(Buffer.from(await res.body.arrayBuffer()));
  return reply.send(res.body);
});

// The same listen backlog as the gateway (its default), so neither drops connections the other would queue.
await app.listen({ port: Number(values.port ?? 0), host: '127.0.0.1', backlog: 4096 });
const stop = () => void app.close().then(() => agent.close()).finally(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
