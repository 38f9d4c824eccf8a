// A simple-protocol script with one `COPY ... FROM STDIN`, for pg's query queue (its "submittable" interface): the
// script goes as one Query message, so its statements run in one implicit transaction (all or nothing), and when
// the server asks for the COPY data it gets `data` at once. One round trip, where BEGIN / COPY / statement / COMMIT
// would take four. pg itself has no COPY; this is the few protocol messages it needs, not a dependency.
import type { Connection } from 'pg';
import type { Writable } from 'node:stream';

interface CopyConnection {
  query(text: string): void;
  stream: Writable;
}

// CopyDone: the message code and its length (4, itself).
const COPY_DONE = Buffer.from([0x63, 0, 0, 0, 4]);

export class CopyScript {
  private done = false;
  private readonly text: string;
  private readonly data: Uint8Array;
  private readonly callback: (err: Error | null) => void;

  constructor(text: string, data: Uint8Array, callback: (err: Error | null) => void) {
    this.text = text;
    this.data = data;
    this.callback = callback;
  }

  submit(connection: Connection): void {
    (connection as unknown as CopyConnection).query(this.text);
  }

  // One CopyData message written as its 5-byte header and the caller's bytes, then CopyDone, in one corked write:
  // pg's own sendCopyFromChunk would copy the whole batch into its message buffer first.
  handleCopyInResponse(connection: Connection): void {
    const { stream } = connection as unknown as CopyConnection;
    if (!stream.writable) return; // as pg's own writes: the lost connection surfaces as its error
    const header = Buffer.allocUnsafe(5);
    header[0] = 0x64; // 'd'
    header.writeInt32BE(4 + this.data.byteLength, 1);
    stream.cork();
    stream.write(header);
    stream.write(this.data);
    stream.write(COPY_DONE);
    stream.uncork();
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
