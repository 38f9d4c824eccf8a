// API writes the controller makes, by key, a bounded number at a time. Unbounded, one pass over 50,000 ApiKeys
// that all need a write (a first install, a status schema change) starts 50,000 requests at once: the HTTP
// client's pool then scans its queue per request (quadratic) and the process stalls with its memory growing.
export type Job = () => Promise<void>;

export class WorkQueue {
  private readonly pending = new Map<string, Job>();
  private readonly active = new Set<string>();
  private readonly concurrency: number;
  private readonly onIdle: () => void;
  private workers = 0;

  constructor(concurrency: number, onIdle: () => void = () => {}) {
    this.concurrency = Math.max(1, concurrency);
    this.onIdle = onIdle;
  }

  /** Queues a job unless one under this key is queued or running; false when it was not queued. */
  add(key: string, job: Job): boolean {
    if (this.pending.has(key) || this.active.has(key)) return false;
    this.pending.set(key, job);
    this.spawn();
    return true;
  }

  /** Queues a job, replacing a queued one under this key: the latest wins. It runs after a running one of that key. */
  set(key: string, job: Job): void {
    this.pending.delete(key);
    this.pending.set(key, job);
    this.spawn();
  }

  has(key: string): boolean {
    return this.pending.has(key) || this.active.has(key);
  }

  get idle(): boolean {
    return this.pending.size === 0 && this.active.size === 0;
  }

  /** Drops every queued job (running ones finish). */
  clear(): void {
    this.pending.clear();
  }

  private spawn(): void {
    while (this.workers < this.concurrency && this.workers < this.pending.size) {
      this.workers++;
      void this.work();
    }
  }

  private next(): [string, Job] | undefined {
    // At most `concurrency` keys are running, so this skips at most that many entries.
    for (const e of this.pending) if (!this.active.has(e[0])) return e;
    return undefined;
  }

  private async work(): Promise<void> {
    try {
      for (let e = this.next(); e; e = this.next()) {
        const [key, job] = e;
        this.pending.delete(key);
        this.active.add(key);
        try {
          await job();
        } catch {
          // Jobs handle their own errors; a throw must not stop the worker.
        } finally {
          this.active.delete(key);
        }
      }
    } finally {
      // Anything still queued is under a running key: that key's worker takes it when its job ends.
      this.workers--;
      if (this.idle) this.onIdle();
    }
  }
}
