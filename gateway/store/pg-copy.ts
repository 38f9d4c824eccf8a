// A simple-protocol script with one `COPY ... FROM STDIN`, for pg's query queue (its "submittable" interface): the
// script goes as one Query message, so its statements run in one implicit transaction (all or nothing), and when
// the server asks for the COPY data it gets `data` at once. One round trip, where BEGIN / COPY / statement / COMMIT
// would take four. pg itself has no COPY; this is the few protocol messages it needs, not a dependency.
import type { Connection } from 'pg';

interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

export class CopyScript {
  private done = false;
  private readonly text: string;
  private readonly data: Buffer;
  private readonly callback: (err: Error | null) => void;

  constructor(text: string, data: Buffer, callback: (err: Error | null) => void) {
    this.text = text;
    this.data = data;
    this.callback = callback;
  }

  submit(connection: Connection): void {
    (connection as unknown as CopyConnection).query(this.text);
  }

  handleCopyInResponse(connection: Connection): void {
    const c = connection as unknown as CopyConnection;
    c.sendCopyFromChunk(this.data);
    c.endCopyFrom();
  }

  // The script's other messages carry nothing the caller reads.
  handleCommandComplete(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}

  // A server error is followed by ReadyForQuery (the rest of the script discarded, the transaction rolled back);
  // a lost connection or a timeout is not: answer at the first either way, as pg's own queries do.
  handleError(err: Error): void {
    this.finish(err);
  }

  handleReadyForQuery(): void {
    this.finish(null);
  }

  private finish(err: Error | null): void {
    if (this.done) return;
    this.done = true;
    this.callback(err);
  }
}
