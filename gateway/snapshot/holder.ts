// The snapshot a pod serves now. Sources (file, Kubernetes) validate before they call set(); a bad one never lands here.
import type { RuntimeSnapshot } from './runtime.ts';

export class SnapshotHolder {
  current: RuntimeSnapshot | undefined;
  private listeners: ((s: RuntimeSnapshot) => void)[] = [];

  set(s: RuntimeSnapshot): void {
    this.current = s;
    for (const l of this.listeners) l(s);
  }

  onChange(l: (s: RuntimeSnapshot) => void): void {
    this.listeners.push(l);
  }
}
