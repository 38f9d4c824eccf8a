// chat error bodies -> messages error bodies: golden fixtures, each a valid Anthropic error body with the same status.
import { describe, expect, it } from 'vitest';
import { checkErrorBody, streamEventSchemas } from '../../../test/support/anthropic-shapes.ts';
import { expectGolden, goldenInputs, readFixture } from '../../../test/support/golden-files.ts';
import { chatErrorToMessages, messagesErrorEvent, messagesErrorType, streamErrorType } from './error.ts';

const DIR = 'convert/chat-error-to-messages';

describe('chat error to messages error', () => {
  it.each(goldenInputs(DIR, 'json'))('%s matches its golden file and the Anthropic error shape', (name) => {
    const input = JSON.parse(readFixture(DIR, `${name}.in.json`)) as { status: number; body: unknown };
    const raw = typeof input.body === 'string' ? input.body : JSON.stringify(input.body);
    const out = chatErrorToMessages(input.status, Buffer.from(raw));
    expect(out.status).toBe(input.status);
    expect(out.contentType).toContain('application/json');
    expect(checkErrorBody(JSON.parse(out.body))).toEqual([]);
    expectGolden(DIR, `${name}.out.json`, JSON.stringify({ status: out.status, body: JSON.parse(out.body) }, null, 2) + '\n');
  });

  it('maps every status the SDK distinguishes to the type Anthropic uses for it', () => {
    expect([400, 401, 402, 403, 404, 409, 413, 422, 429, 500, 502, 503, 504, 529].map(messagesErrorType)).toEqual([
      'invalid_request_error',
      'authentication_error',
      'billing_error',
      'permission_error',
      'not_found_error',
      'invalid_request_error',
      'request_too_large',
      'invalid_request_error',
      'rate_limit_error',
      'api_error',
      'api_error',
      'overloaded_error',
      'timeout_error',
      'overloaded_error',
    ]);
  });

  it('in-stream errors are typed from the upstream type and code', () => {
    expect(streamErrorType({ type: 'server_error', code: null })).toBe('api_error');
    expect(streamErrorType({ type: 'server_error', code: 'server_is_overloaded' })).toBe('overloaded_error');
    expect(streamErrorType({ type: 'tokens', code: 'rate_limit_exceeded' })).toBe('rate_limit_error');
    expect(streamErrorType({ type: 'invalid_request_error' })).toBe('invalid_request_error');
    const frame = messagesErrorEvent('api_error', 'boom');
    expect(frame).toBe('event: error\ndata: {"type":"error","error":{"type":"api_error","message":"boom"}}\n\n');
    expect(streamEventSchemas.error).toBeTruthy();
  });
});
