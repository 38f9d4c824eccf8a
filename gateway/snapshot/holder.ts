// The snapshot a pod serves now. Sources (file, Kubernetes) validate before they call set(); a bad one never lands here.
import type { RuntimeSnapshot } from './runtime.ts';

export class SnapshotHolder {
  current: RuntimeSnapshot | undefined;
  /**
   * Why the snapshot may be out of date (cluster mode: the snapshot watch has been broken longer than its bound),
   * else undefined. A stale pod is not ready, so the Service stops sending it traffic.
   */
  stale: string | undefined;
  /** Also refuse requests (503) while stale, for traffic that does not come through the Service. */
  refuseWhenStale = false;
  private listeners: ((s: RuntimeSnapshot) => void)[] = [];

  set(s: RuntimeSnapshot): void {
    this.current = s;
    for (const l of this.listeners) l(s);
  }

  onChange(l: (s: RuntimeSnapshot) => void): void {
    this.listeners.push(l);
  }
}
