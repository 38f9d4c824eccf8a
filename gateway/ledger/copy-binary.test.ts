import { describe, expect, it } from 'vitest';
import { ledgerRow } from '../../test/support/ledger-rows.ts';
import { copyBinary, NOT_STORABLE } from './copy-binary.ts';

// What the rows store is compared against the other paths in writer.test.ts; here, which batches it declines.
describe('binary COPY data for ledger rows', () => {
  it('starts with the signature and ends with the trailer', () => {
    const data = copyBinary([ledgerRow()]);
    expect(data).toBeInstanceOf(Buffer);
    const b = data as Buffer;
    expect(b.subarray(0, 11)).toEqual(Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'));
    expect(b.readInt16BE(19)).toBe(26);
    expect(b.readInt16BE(b.length - 2)).toBe(-1);
  });

  it('declines values that do not convert exactly, so the batch goes as COPY text', () => {
    for (const v of [
      { input: 1.5 }, { output: 2 ** 53 }, { cacheRead: Number.NaN }, { attempts: 40_000 }, { status: 1.5 }, { latencyMs: 2 ** 31 },
      { costPoints: '1e-7' }, { costPoints: '.5' }, { originalCost: '1.' }, { originalCost: '+2' }, { costPoints: 'NaN' }, { costPoints: ' 1' },
      { costPoints: '1'.repeat(1001) }, { estimated: 'yes' as unknown as boolean }, { keyPrefix: null as unknown as string },
    ]) {
      expect(copyBinary([ledgerRow(), ledgerRow(v)]), JSON.stringify(v)).toBeUndefined();
    }
  });

  it('says when text must be made storable first: a NUL or a lone surrogate, also in the JSON of detail', () => {
    for (const v of [{ requestId: 'a\u0000b' }, { project: 'p\uD800' }, { keyPrefix: 'k\uDC00' }, { detail: { x: '\u0000' } }, { detail: { x: '\uD800' } }]) {
      expect(copyBinary([ledgerRow(v)]), JSON.stringify(v)).toBe(NOT_STORABLE);
    }
    expect(copyBinary([ledgerRow({ detail: { x: 'é😀 \\ "q"' }, project: 'é😀' })])).toBeInstanceOf(Buffer);
  });
});
