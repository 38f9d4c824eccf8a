// The relays under way, so a shutdown past its drain budget can cut their upstream reads at once and wait for each
// to journal its row (billed for what it relayed) before the ledger closes.
export class DrainCutError extends Error {
  constructor() {
    super('drain budget spent');
  }
}

/** A relay's cancellation (its AbortSwitch; anything with the same abort). */
export interface Cuttable {
  abort(reason?: unknown): void;
}

export class InFlight {
  private readonly open = new Set<Cuttable>();
  private idle: (() => void) | undefined;
  private cutReason: DrainCutError | undefined;

  /** A relay starts: `controller` aborts its upstream exchange (at once when the cut already came). */
  add(controller: Cuttable): void {
    this.open.add(controller);
    if (this.cutReason) controller.abort(this.cutReason);
  }

  /** A relay is done, its row journaled or refused. */
  delete(controller: Cuttable): void {
    if (this.open.delete(controller) && this.open.size === 0) this.idle?.();
  }

  get size(): number {
    return this.open.size;
  }

  /** Aborts every relay's upstream exchange; each records what it relayed as the client-gone path does. */
  cut(): void {
    const reason = (this.cutReason ??= new DrainCutError());
    for (const c of this.open) c.abort(reason);
  }

  /** Resolves true once no relay is open, false when `ms` ran out first. */
  settled(ms: number): Promise<boolean> {
    if (this.open.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.idle = undefined;
        resolve(false);
      }, ms);
      this.idle = () => {
        clearTimeout(timer);
        this.idle = undefined;
        resolve(true);
      };
    });
  }
}
