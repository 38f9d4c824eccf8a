// Picks the real Postgres the suite talks to and says which (docs/contract.md, test databases): a container from
// @testcontainers/postgresql when a container runtime answers, else DATABASE_URL, else embedded PGlite only.
// Workers inherit DATABASE_URL from here, so every database test sees the same choice.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Sockets and variables through which a Docker-compatible runtime could answer; none: no attempt, no delay. */
function runtimeHint(): string | undefined {
  if (process.env.TOLLGATE_TEST_CONTAINERS === 'off') return undefined;
  if (process.env.DOCKER_HOST) return `DOCKER_HOST=${process.env.DOCKER_HOST}`;
  const sockets = ['/var/run/docker.sock', join(homedir(), '.docker/run/docker.sock'), join(process.env.XDG_RUNTIME_DIR ?? '/nonexistent', 'podman/podman.sock')];
  return sockets.find((s) => existsSync(s));
}

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  const hint = runtimeHint();
  if (hint) {
    try {
      const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
      const container = await new PostgreSqlContainer(process.env.TOLLGATE_TEST_POSTGRES_IMAGE ?? 'postgres:17-alpine').withStartupTimeout(120_000).start();
      process.env.DATABASE_URL = container.getConnectionUri();
      console.log(`[tollgate tests] database backends: Postgres in a testcontainers container (${hint}) and PGlite`);
      return async () => {
        await container.stop();
      };
    } catch (err) {
      console.log(`[tollgate tests] container runtime (${hint}) did not start Postgres: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  const url = process.env.DATABASE_URL;
  const where = url ? `Postgres at ${new URL(url).host} (DATABASE_URL) and PGlite` : 'PGlite only (no container runtime answered; set DATABASE_URL to add a real Postgres)';
  console.log(`[tollgate tests] database backends: ${where}`);
  return undefined;
}
