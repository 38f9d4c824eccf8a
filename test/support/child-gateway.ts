// A gateway in its own process (`node gateway/cli.ts start`), so tests can SIGKILL it like the kernel would.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { once } from 'node:events';

export interface ChildGateway {
  url: string;
  proc: ChildProcess;
  logs: string[];
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  srv.close();
  await once(srv, 'close');
  return port;
}

export async function startChildGateway(opts: { configPath: string; dataDir: string; databaseUrl?: string; env?: Record<string, string> }): Promise<ChildGateway> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['gateway/cli.ts', 'start', '--config', opts.configPath, '--port', String(port)], {
    env: { ...process.env, TOLLGATE_DATA_DIR: opts.dataDir, DATABASE_URL: opts.databaseUrl ?? '', LOG_LEVEL: 'info', TOLLGATE_ADMIN_PORT: 'off', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const url = `http://127.0.0.1:${port}`;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${logs.join('')}`)), 30_000);
    const onData = (d: Buffer) => {
      logs.push(d.toString());
      if (d.toString().includes('tollgate listening')) {
        clearTimeout(timer);
        resolve();
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (d: Buffer) => logs.push(d.toString()));
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${logs.join('')}`));
    });
  });
  proc.removeAllListeners('exit');
  return {
    url,
    proc,
    logs,
    async kill(signal) {
      if (proc.exitCode !== null) return proc.exitCode;
      const exited = once(proc, 'exit');
      proc.kill(signal);
      const [code] = await exited;
      return code as number | null;
    },
  };
}
