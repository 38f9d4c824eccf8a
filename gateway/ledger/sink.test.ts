// The sink turns every way a row can fail to be recorded into the caller's 503, and passes a durable row through.
import { describe, expect, it } from 'vitest';
import { ledgerRow } from '../../test/support/ledger-rows.ts';
import { GatewayError } from '../errors.ts';
import { LedgerClosedError, LedgerFullError } from './errors.ts';
import { ledgerSink } from './sink.ts';

describe('ledger sink', () => {
  it('resolves when the ledger recorded the row', async () => {
    const rows: unknown[] = [];
    const sink = ledgerSink({ record: (r) => (rows.push(r), Promise.resolve()) });
    const row = ledgerRow();
    await sink.append(row);
    expect(rows).toEqual([row]);
  });

  it.each([
    ['journal full (refused at once)', () => { throw new LedgerFullError('ledger journal full: 10 bytes pending, bound 5'); }],
    ['closed (refused at once)', () => { throw new LedgerClosedError(); }],
    ['write failed (refused later)', () => Promise.reject(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }))],
  ])('%s: rejects with ledger_unavailable, the answer withheld', async (_name, record) => {
    const sink = ledgerSink({ record: record as () => Promise<void> });
    const err = await sink.append(ledgerRow()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ kind: 'ledger_unavailable', status: 503 });
    expect((err as Error).message).toMatch(/withheld/);
  });

  it('rows sharing one journal write share one outcome', async () => {
    let fail!: (e: Error) => void;
    const write = new Promise<void>((_, reject) => (fail = reject));
    const sink = ledgerSink({ record: () => write });
    const a = sink.append(ledgerRow());
    const b = sink.append(ledgerRow());
    expect(a).toBe(b);
    fail(new Error('disk gone'));
    await expect(a).rejects.toMatchObject({ kind: 'ledger_unavailable' });
  });
});
