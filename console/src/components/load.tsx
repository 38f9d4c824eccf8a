// Loading an admin API answer into a component: the value, the error in words, and a way to load it again.
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { ApiError } from '../api.ts';

export interface Loaded<T> {
  data?: T;
  error?: string;
  loading: boolean;
  reload: () => void;
}

export function describeError(err: unknown): string {
  if (err instanceof ApiError) return err.status ? `${err.message} (${err.status} ${err.code})` : err.message;
  return (err as Error).message ?? String(err);
}

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (err: unknown) => live && setState({ error: describeError(err), loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function ErrorNote({ error }: { error?: string }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

export function Loading({ when, children }: { when: boolean; children?: ComponentChildren }) {
  return when ? <p class="muted">Loading…</p> : <>{children}</>;
}
