import { describe, expect, it } from 'vitest';
import { openPgStore } from './pg-store.ts';

const url = process.env.DATABASE_URL;

describe.skipIf(!url)('pg store', () => {
  it('commits durably even where the connection\'s default says otherwise', async () => {
    const off = `${url!}${url!.includes('?') ? '&' : '?'}options=${encodeURIComponent('-c synchronous_commit=off')}`;
    const store = openPgStore(off, { max: 2 });
    try {
      const shown = await Promise.all([0, 1].map(() => store.query<{ synchronous_commit: string }>('SHOW synchronous_commit')));
      expect(shown.map((r) => r.rows[0].synchronous_commit)).toEqual(['on', 'on']);
    } finally {
      await store.close();
    }
  });
});

describe.skipIf(!url)('pg copyIn', () => {
  it('keeps a one-client pool usable after the server refuses a script', async () => {
    const store = openPgStore(url!, { max: 1 });
    try {
      await expect(store.copyIn!('COPY tg_review_no_such_table (a) FROM STDIN', 'x\n')).rejects.toMatchObject({ code: '42P01' });
      expect((await store.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await store.close();
    }
  });

  it('does not hand the next query a connection the server closed with a FATAL error', async () => {
    // A FATAL error (here the backend terminating itself, as pg_terminate_backend or a shutdown does) carries a
    // severity like any refusal, but the server closes the connection after it: the pool must not keep it.
    const store = openPgStore(url!, { max: 1 });
    try {
      await expect(store.copyIn!('SELECT pg_terminate_backend(pg_backend_pid()); COPY tg_review_no_such_table (a) FROM STDIN', '1\n')).rejects.toMatchObject({ severity: 'FATAL' });
      expect((await store.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await store.close();
    }
  });
});
