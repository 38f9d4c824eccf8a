// Listening errors in words a user can act on, and the early probe that finds a busy port before anything opens.
import { createServer } from 'node:net';

/** Loopback unless told (the container and chart pass 0.0.0.0). */
export const DEFAULT_HOST = '127.0.0.1';

/** Listening failed (port in use, address not available): the message says what to change. */
export class ListenError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export function listenError(err: unknown, host: string, port: number): Error {
  const code = (err as { code?: string }).code ?? '';
  if (code === 'EADDRINUSE') return new ListenError(code, `EADDRINUSE: port ${port} on ${host} is already in use; choose another with --port N (or PORT=N).`);
  if (code === 'EADDRNOTAVAIL') return new ListenError(code, `EADDRNOTAVAIL: ${host} is not an address of this machine; choose another with --host ADDR (or TOLLGATE_HOST).`);
  if (code === 'EACCES') return new ListenError(code, `EACCES: port ${port} on ${host} needs privileges; choose a port above 1023 with --port N (or PORT=N).`);
  return err as Error;
}

/** Binds and releases host:port once, so a busy port fails before anything else opens. */
export async function probeListen(host: string, port: number): Promise<void> {
  const probe = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ port, host, exclusive: true }, resolve);
    });
  } catch (err) {
    throw listenError(err, host, port);
  } finally {
    if (probe.listening) await new Promise((r) => probe.close(r));
  }
}
