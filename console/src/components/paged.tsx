// A cursor-paginated list: the first page, then "Load more" appends the next one from next_cursor.
import { useEffect, useState } from 'preact/hooks';
import { list } from '../api.ts';
import { describeError } from './load.tsx';

export interface Paged<T> {
  rows: T[];
  more: boolean;
  loading: boolean;
  error?: string;
  loadMore: () => void;
  reload: () => void;
  /** Replaces one row in place (after a write answered with the new object). */
  replace: (match: (row: T) => boolean, row: T) => void;
}

export function usePaged<T>(path: string, query: Record<string, string | number | undefined>): Paged<T> {
  const key = JSON.stringify(query);
  const [rows, setRows] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);

  const fetchPage = (from: string | null, append: boolean, live: () => boolean) => {
    setLoading(true);
    list<T>(path, { ...query, cursor: from ?? undefined }).then(
      (page) => {
        if (!live()) return;
        setRows((old) => (append ? [...old, ...page.data] : page.data));
        setCursor(page.next_cursor);
        setError(undefined);
        setLoading(false);
      },
      (err: unknown) => {
        if (!live()) return;
        setError(describeError(err));
        setLoading(false);
      },
    );
  };

  useEffect(() => {
    let live = true;
    fetchPage(null, false, () => live);
    return () => {
      live = false;
    };
  }, [path, key, tick]);

  return {
    rows,
    more: cursor !== null,
    loading,
    error,
    loadMore: () => cursor && fetchPage(cursor, true, () => true),
    reload: () => setTick((t) => t + 1),
    replace: (match, row) => setRows((old) => old.map((r) => (match(r) ? row : r))),
  };
}
