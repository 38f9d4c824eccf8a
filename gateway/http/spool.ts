// Holds bytes that must wait (an upload's parts before its `model`): in memory up to a threshold, then in a temp file.
// The file is unlinked as soon as it is opened, so nothing is left behind even if the process is killed.
import { randomUUID } from 'node:crypto';
import { open, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

const READ_CHUNK = 64 * 1024;

export class Spool {
  private readonly threshold: number;
  private readonly dir: string;
  private mem: Buffer[] = [];
  private memBytes = 0;
  private file: FileHandle | undefined;
  private fileBytes = 0;

  constructor(threshold: number, dir: string) {
    this.threshold = threshold;
    this.dir = dir;
  }

  get bytes(): number {
    return this.file ? this.fileBytes : this.memBytes;
  }

  get onDisk(): boolean {
    return this.file !== undefined;
  }

  /** Pieces are kept by reference until the threshold: callers must not reuse them. */
  async write(pieces: readonly Buffer[]): Promise<void> {
    if (!this.file) {
      let n = 0;
      for (const p of pieces) n += p.length;
      if (this.memBytes + n <= this.threshold) {
        for (const p of pieces) this.mem.push(p);
        this.memBytes += n;
        return;
      }
      await this.moveToDisk();
    }
    for (const p of pieces) await this.append(p);
  }

  private async moveToDisk(): Promise<void> {
    const path = join(this.dir, `tollgate-spool-${randomUUID()}`);
    const fh = await open(path, 'wx+', 0o600);
    this.file = fh;
    await unlink(path);
    const mem = this.mem;
    this.mem = [];
    this.memBytes = 0;
    for (const p of mem) await this.append(p);
  }

  private async append(b: Buffer): Promise<void> {
    let off = 0;
    while (off < b.length) {
      const { bytesWritten } = await this.file!.write(b, off, b.length - off, this.fileBytes);
      off += bytesWritten;
      this.fileBytes += bytesWritten;
    }
  }

  /** Everything written, in order; each read from disk is a fresh buffer (the consumer may still hold the last). */
  async *replay(): AsyncGenerator<Buffer> {
    if (!this.file) {
      const mem = this.mem;
      this.mem = [];
      yield* mem;
      return;
    }
    for (let pos = 0; pos < this.fileBytes; ) {
      const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK, this.fileBytes - pos));
      const { bytesRead } = await this.file.read(buf, 0, buf.length, pos);
      if (bytesRead === 0) throw new Error('spool file ended early');
      pos += bytesRead;
      yield bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
    }
  }

  async close(): Promise<void> {
    this.mem = [];
    const f = this.file;
    this.file = undefined;
    await f?.close();
  }
}
