// The slice of a pino logger the ledger uses; fastify's logger fits as is.
export interface LedgerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Used when no logger is given: problems to stderr, routine news nowhere. */
export const stderrLogger: LedgerLogger = {
  info() {},
  warn(obj, msg) {
    console.error(`tollgate ledger: ${msg}`, obj);
  },
  error(obj, msg) {
    console.error(`tollgate ledger: ${msg}`, obj);
  },
};
