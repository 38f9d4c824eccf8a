// The headers an anthropic upstream gets beside the credential: the client's version and beta, else the default version.
import { describe, expect, it } from 'vitest';
import { anthropic, ANTHROPIC_VERSION } from './anthropic.ts';

describe('anthropic.versionHeaders', () => {
  it('sends the default version when the client names none (and for converted chat calls)', () => {
    expect(anthropic.versionHeaders({}, {})).toEqual({ 'anthropic-version': ANTHROPIC_VERSION });
    expect(anthropic.versionHeaders(undefined, { traceparent: 't' })).toEqual({ traceparent: 't', 'anthropic-version': '2023-06-01' });
  });

  it("passes the client's own version and beta flags on", () => {
    expect(anthropic.versionHeaders({ 'anthropic-version': '2024-01-01', 'anthropic-beta': 'a,b' }, {})).toEqual({ 'anthropic-version': '2024-01-01', 'anthropic-beta': 'a,b' });
    expect(anthropic.versionHeaders({ 'anthropic-beta': ['a', 'b'] as unknown as string }, {})).toEqual({ 'anthropic-version': ANTHROPIC_VERSION, 'anthropic-beta': 'a,b' });
  });

  it('takes the credential as x-api-key, never as a bearer token', () => {
    expect(anthropic.credentialHeaders('k')).toEqual({ 'x-api-key': 'k' });
  });
});
