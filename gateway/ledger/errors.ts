// Errors the ledger throws to the request path. The gateway maps both to 503.

/** The journal reached its byte bound (or the disk is full): the row was NOT recorded. */
export class LedgerFullError extends Error {
  readonly code = 'LEDGER_FULL';
  readonly statusCode = 503;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LedgerFullError';
  }
}

/** record() after close(): the row was NOT recorded. */
export class LedgerClosedError extends Error {
  readonly code = 'LEDGER_CLOSED';
  readonly statusCode = 503;
  constructor() {
    super('ledger is closed');
    this.name = 'LedgerClosedError';
  }
}
