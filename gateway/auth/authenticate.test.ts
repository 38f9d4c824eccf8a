import { describe, expect, it } from 'vitest';
import { presentedKey } from './authenticate.ts';

describe('presentedKey', () => {
  it('reads a Bearer credential whatever the scheme\'s case, trimmed', () => {
    expect(presentedKey({ authorization: 'Bearer sk_live_abc' })).toBe('sk_live_abc');
    expect(presentedKey({ authorization: 'bearer sk_live_abc ' })).toBe('sk_live_abc');
    expect(presentedKey({ authorization: 'BEARER sk_live_abc' })).toBe('sk_live_abc');
  });

  it('ignores another scheme or a bare scheme, and falls back to x-api-key, then the gemini key', () => {
    expect(presentedKey({ authorization: 'Basic abc' })).toBeUndefined();
    expect(presentedKey({ authorization: 'Bearer ' })).toBeUndefined();
    expect(presentedKey({ authorization: 'Basic abc', 'x-api-key': ' sk_live_x ' })).toBe('sk_live_x');
    expect(presentedKey({}, 'sk_live_g')).toBe('sk_live_g');
  });
});
