// A TCP pass-through to a real server that a test can cut and restore: a database outage
// with real connection errors (refused while down, reset for open connections).
import { createConnection, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Closes the listener and resets every open connection. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }, opts: { startDown?: boolean } = {}): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;

  const listen = async () => {
    const s = createServer((client) => {
      const upstream = createConnection(target);
      sockets.add(client).add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve());
    });
    port = (s.address() as { port: number }).port;
    server = s;
  };
  const stop = async () => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.resetAndDestroy();
    sockets.clear();
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };

  await listen(); // picks the port, even when the proxy is to start down
  if (opts.startDown) await stop();
  return {
    get port() {
      return port;
    },
    down: stop,
    up: async () => {
      if (!server) await listen();
    },
    close: stop,
  };
}
