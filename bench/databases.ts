// A fresh Postgres database per benchmark run, dropped afterwards; the run never touches other databases' data.
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import pg from 'pg';
import { cpuSeconds, machineBusySeconds } from './proc.ts';

export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

export interface BenchDatabase {
  url: string;
  /** CPU seconds so far of each Postgres backend process connected to this database (from /proc). */
  backendCpu(): Promise<BackendCpu>;
  drop(): Promise<void>;
}

/** pid → CPU seconds of the Postgres server processes serving one database's connections. */
export type BackendCpu = Map<number, number>;

/**
 * CPU the database's backends spent between two readings. A backend that connected in between counts whole (it
 * did all its work in the window); one that disconnected in between is lost (its /proc entry is gone), so the
 * figure is a lower bound; the gateway's pool keeps its connections open under load.
 */
export function backendCpuSpent(before: BackendCpu, after: BackendCpu): number {
  let s = 0;
  for (const [pid, cpu] of after) s += cpu - (before.get(pid) ?? 0);
  return s;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = '/' + name;
  return u.toString();
}

export async function postgresReachable(url: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await c.connect();
    await c.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await c.end().catch(() => {});
  }
}

export async function createBenchDatabase(adminUrl: string, label: string): Promise<BenchDatabase> {
  const name = `tollgate_bench_${label}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(adminUrl, name),
    async backendCpu() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        const { rows } = await c.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'", [name]);
        const out: BackendCpu = new Map();
        for (const { pid } of rows) {
          try {
            out.set(pid, cpuSeconds(pid));
          } catch {
            // disconnected since the query
          }
        }
        return out;
      } finally {
        await c.end();
      }
    },
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** The machine's busy share of all cores over `ms` (proc.ts reads /proc/stat). */
async function machineBusy(ms: number): Promise<number> {
  const b0 = machineBusySeconds();
  await new Promise((r) => setTimeout(r, ms));
  return (machineBusySeconds() - b0) / ((ms / 1000) * availableParallelism());
}

/**
 * Before a database throughput scenario: Postgres writes out what earlier scenarios left dirty (CHECKPOINT), then
 * the machine is waited on until it is quiet (under 10 % busy over half a second, at most 30 s), so the figure is
 * the writer's, not the tail of the run before it. Returns the busy share last read.
 */
export async function quietPostgres(adminUrl: string): Promise<number> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query('CHECKPOINT');
  } finally {
    await c.end();
  }
  const deadline = performance.now() + 30_000;
  let busy = await machineBusy(500);
  while (busy >= 0.1 && performance.now() < deadline) busy = await machineBusy(500);
  return busy;
}
