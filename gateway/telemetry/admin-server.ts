// The admin port (default 9464): /metrics in Prometheus text format, kept off the API port so it is never exposed
// with the API. Plain node:http: a scrape must work even when the API server is saturated or draining.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { once } from 'node:events';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';

export interface AdminServer {
  /** A URL that reaches it from this machine. */
  url: string;
  /** The address actually bound, `host:port`. */
  bound: string;
  close(): Promise<void>;
}

export interface AdminLogger {
  error(obj: object, msg?: string): void;
}

export async function startAdminServer(opts: {
  port: number;
  host?: string;
  prometheus: PrometheusExporter;
  log?: AdminLogger;
  /** The /upstreams body: each upstream target's health in this process. */
  upstreams?: () => unknown;
}): Promise<AdminServer | undefined> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      opts.prometheus.getMetricsRequestHandler(req, res);
      return;
    }
    if (req.method === 'GET' && path === '/upstreams' && opts.upstreams) {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(opts.upstreams()));
      return;
    }
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the admin port serves /metrics and /upstreams\n');
  });
  // Loopback unless told: the metrics carry cost per organization.
  server.listen(opts.port, opts.host ?? '127.0.0.1');
  try {
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([err]) => Promise.reject(err as Error))]);
  } catch (err) {
    // Metrics are not worth refusing traffic for: the API keeps serving and the failure is logged.
    opts.log?.error({ err: (err as Error).message, port: opts.port }, 'admin (metrics) server could not listen');
    server.close();
    return undefined;
  }
  const addr = server.address() as { port: number; address: string; family: string };
  const bound = `${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
  return {
    url: `http://${addr.address === '0.0.0.0' || addr.address === '::' ? `127.0.0.1:${addr.port}` : bound}`,
    bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
