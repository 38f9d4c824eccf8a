// The relay's per-request cancellation: the part of AbortController/AbortSignal the upstream exchange uses (whether,
// why, and who to tell), without an EventTarget per request. An AbortController with its signal and an abort listener
// cost a few µs of CPU and several objects per request (bench/cpu-per-request.ts); this is one object, and whoever
// watches it is told directly. Callers outside the relay may still pass a real AbortSignal (see `watchAbort`).

/** Told once when the switch is thrown; watchers are objects (the upstream response handler), not closures. */
export interface AbortWatcher {
  onAbort(): void;
}

export class AbortSwitch {
  aborted = false;
  /** Set when the client left while its upstream attempt goes on: no retry or fallback is started after it. */
  noMoreAttempts = false;
  reason: unknown = undefined;
  private watcher: AbortWatcher | undefined;
  /** Watchers beyond the first (a backoff pause beside an attempt is rare): allocated only then. */
  private more: AbortWatcher[] | undefined;

  abort(reason: unknown = new Error('request aborted')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const first = this.watcher;
    const more = this.more;
    this.watcher = undefined;
    this.more = undefined;
    first?.onAbort();
    if (more) for (const w of more) w.onAbort();
  }

  watch(w: AbortWatcher): void {
    if (this.watcher === undefined) this.watcher = w;
    else (this.more ??= []).push(w);
  }

  unwatch(w: AbortWatcher): void {
    if (this.watcher === w) this.watcher = undefined;
    else if (this.more) {
      const i = this.more.indexOf(w);
      if (i >= 0) this.more.splice(i, 1);
    }
  }
}

/** What the upstream side accepts as a cancellation: the relay's switch, or a standard signal. */
export type Abortable = AbortSwitch | AbortSignal;

/** Tells `w` when `s` aborts; returns what stops that. */
export function watchAbort(s: Abortable, w: AbortWatcher): () => void {
  if (s instanceof AbortSwitch) {
    s.watch(w);
    return () => s.unwatch(w);
  }
  const onAbort = () => w.onAbort();
  s.addEventListener('abort', onAbort, { once: true });
  return () => s.removeEventListener('abort', onAbort);
}
