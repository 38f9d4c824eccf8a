import { describe, expect, it } from 'vitest';
import { ledgerRow } from '../../test/support/ledger-rows.ts';
import { checkRow, parseJournalLine } from './journal-line.ts';

describe('journal line', () => {
  it('reads back the row that was written', () => {
    const row = ledgerRow({ detail: { usage: { prompt_tokens: 3 } } });
    expect(parseJournalLine(JSON.stringify(row))).toEqual(row);
  });

  it.each([
    ['a negative count', { input: -1 }, /input/],
    ['a fractional count', { output: 1.5 }, /output/],
    ['money as a number', { costPoints: 0.1 as unknown as string }, /costPoints/],
    ['money that is not a decimal', { originalCost: '1,5' }, /decimal/],
    ['an empty request id', { requestId: '' }, /requestId/],
    ['NUL in text', { project: 'a\u0000b' }, /NUL/],
    ['a missing flag', { stream: undefined as unknown as boolean }, /stream/],
    ['a bad time', { occurredAt: Number.NaN }, /occurredAt/],
    ['a status that is not an HTTP status', { status: 200.5 }, /status/],
    ['a negative latency', { latencyMs: -1 }, /latencyMs/],
    ['NUL in the key prefix', { keyPrefix: 'sk_\u0000' }, /keyPrefix/],
  ])('rejects %s', (_, patch, reason) => {
    expect(() => parseJournalLine(JSON.stringify({ ...ledgerRow(), ...patch }))).toThrow(reason);
  });

  it('reads lines journaled before status, latency and key prefix existed, and lines that have them', () => {
    const old = ledgerRow();
    expect(parseJournalLine(JSON.stringify(old))).toEqual(old);
    const now = ledgerRow({ status: 200, latencyMs: 42, keyPrefix: 'sk_live_Ab3dEf' });
    expect(parseJournalLine(JSON.stringify(now))).toEqual(now);
  });

  it('checks a row still in memory the same way', () => {
    const row = ledgerRow();
    expect(checkRow(row)).toBe(row);
    expect(() => checkRow({ ...row, cacheRead: -3 })).toThrow(/cacheRead/);
    expect(() => checkRow({ ...row, endpoint: 'a\u0000' })).toThrow(/NUL/);
  });
});
