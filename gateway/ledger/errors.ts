// Errors the ledger throws to the request path; sink.ts turns them into the caller's 503.

/** The journal reached its byte bound (or the disk is full): the row was NOT recorded. */
export class LedgerFullError extends Error {
  readonly code = 'LEDGER_FULL';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'LedgerFullError';
  }
}

/** record() after close(): the row was NOT recorded. */
export class LedgerClosedError extends Error {
  readonly code = 'LEDGER_CLOSED';
  constructor() {
    super('ledger is closed');
    this.name = 'LedgerClosedError';
  }
}
