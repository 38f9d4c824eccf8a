// The one database seam: Postgres through a pg Pool, or PGlite in-process (in a worker thread). Same SQL on both.
// Types only: open.ts picks and opens an implementation, so the implementations import this file and nothing circles.

/** Something that runs SQL: the store itself, or a transaction handle. */
export interface Queryable {
  /** One statement, `$n` parameters. NUMERIC and int8 come back as strings on both backends. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>;
  /** A script of several statements, no parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * PGlite only: a script (no parameters) whose `COPY ... FROM '/dev/blob'` reads `data` (text, or bytes for
   * `FORMAT binary`), run as one implicit transaction; the rows of its last statement. Loading rows through COPY costs
   * less a row than a jsonb parameter.
   */
  copyQuery?<T = Record<string, unknown>>(script: string, data: string | Uint8Array): Promise<{ rows: T[] }>;
  /**
   * Postgres only: a script (no parameters) whose one `COPY ... FROM STDIN` reads `data` (text, or bytes for
   * `FORMAT binary`, sent as they are), sent as one message and so run as one implicit transaction. COPY loads a row
   * for less than a parameter the statement has to take apart.
   */
  copyIn?(script: string, data: string | Uint8Array): Promise<void>;
}

export interface Store extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs fn in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
