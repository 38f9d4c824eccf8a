// GenAI attributes from bodies: request parameters in each protocol's names, response facts from JSON and streams.
import type { Attributes, Span } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { emptyUsage } from '../meter/usage.ts';
import type { StreamMeter } from '../meter/stream-meter.ts';
import { operationOf, providerNameOf, requestParams, responseFacts, StreamFacts } from './genai.ts';

/** Records setAttribute calls; the rest of Span is not used by these functions. */
function recorder(): { span: Span; attrs: Attributes } {
  const attrs: Attributes = {};
  const span = { setAttribute: (k: string, v: unknown) => ((attrs[k] = v as never), span) } as unknown as Span;
  return { span, attrs };
}

const params = (body: Record<string, unknown>): Attributes => {
  const a: Attributes = {};
  requestParams(body, a);
  return a;
};

describe('request parameters', () => {
  it('chat, messages and responses names', () => {
    expect(params({ max_tokens: 10, temperature: 0.2, top_p: 0.9, frequency_penalty: 0.1, presence_penalty: 0.3, seed: 4, n: 2, stop: 'END' })).toEqual({
      'gen_ai.request.max_tokens': 10,
      'gen_ai.request.temperature': 0.2,
      'gen_ai.request.top_p': 0.9,
      'gen_ai.request.frequency_penalty': 0.1,
      'gen_ai.request.presence_penalty': 0.3,
      'gen_ai.request.seed': 4,
      'gen_ai.request.choice.count': 2,
      'gen_ai.request.stop_sequences': ['END'],
    });
    expect(params({ max_completion_tokens: 99 })).toEqual({ 'gen_ai.request.max_tokens': 99 });
    expect(params({ max_output_tokens: 7, top_k: 3, stop_sequences: ['a', 'b'] })).toEqual({ 'gen_ai.request.max_tokens': 7, 'gen_ai.request.top_k': 3, 'gen_ai.request.stop_sequences': ['a', 'b'] });
  });

  it('gemini generationConfig', () => {
    expect(params({ contents: [], generationConfig: { maxOutputTokens: 50, temperature: 1, topP: 0.5, topK: 40, candidateCount: 1, stopSequences: ['x'] } })).toEqual({
      'gen_ai.request.max_tokens': 50,
      'gen_ai.request.temperature': 1,
      'gen_ai.request.top_p': 0.5,
      'gen_ai.request.top_k': 40,
      'gen_ai.request.choice.count': 1,
      'gen_ai.request.stop_sequences': ['x'],
    });
  });

  it('ignores values of the wrong type (the body is the client’s)', () => {
    expect(params({ max_tokens: '10', temperature: null, stop: [1, 2], generationConfig: 'x' })).toEqual({});
  });
});

describe('response facts from JSON', () => {
  it.each([
    ['openai chat', { id: 'chatcmpl-1', model: 'gpt-4o-mini-2024-07-18', choices: [{ finish_reason: 'stop' }, { finish_reason: 'length' }] }, { id: 'chatcmpl-1', model: 'gpt-4o-mini-2024-07-18', reasons: ['stop', 'length'] }],
    ['anthropic', { id: 'msg_1', model: 'claude-x', stop_reason: 'end_turn' }, { id: 'msg_1', model: 'claude-x', reasons: ['end_turn'] }],
    ['gemini', { responseId: 'r1', modelVersion: 'gemini-2.5-flash', candidates: [{ finishReason: 'STOP' }] }, { id: 'r1', model: 'gemini-2.5-flash', reasons: ['STOP'] }],
    ['responses', { id: 'resp_1', object: 'response', model: 'gpt-5-nano', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } }, { id: 'resp_1', model: 'gpt-5-nano', reasons: ['max_output_tokens'] }],
  ])('%s', (_name, body, want) => {
    const { span, attrs } = recorder();
    responseFacts(body, span);
    expect(attrs).toEqual({ 'gen_ai.response.id': want.id, 'gen_ai.response.model': want.model, 'gen_ai.response.finish_reasons': want.reasons });
  });
});

describe('response facts from a stream', () => {
  const meter = (): StreamMeter & { seen: number } => ({ seen: 0, done: false, contentBytes: 0, countedBytes: 0, push() { this.seen++; }, usage: () => emptyUsage() });

  it('openai chat: id and model from the first chunk, the finish reason from its chunk, never from content text', () => {
    const { span, attrs } = recorder();
    const inner = meter();
    const f = new StreamFacts(inner, span);
    f.push({ data: '{"id":"chatcmpl-9","model":"gpt-4o-mini","choices":[{"delta":{"role":"assistant"},"finish_reason":null}]}' });
    f.push({ data: '{"id":"chatcmpl-9","choices":[{"delta":{"content":"say \\"finish_reason\\":\\"evil\\""},"finish_reason":null}]}' });
    f.push({ data: '{"id":"chatcmpl-9","choices":[{"delta":{},"finish_reason":"tool_calls"}]}' });
    f.push({ data: '[DONE]' });
    f.flush();
    expect(inner.seen).toBe(4);
    expect(attrs).toEqual({ 'gen_ai.response.id': 'chatcmpl-9', 'gen_ai.response.model': 'gpt-4o-mini', 'gen_ai.response.finish_reasons': ['tool_calls'] });
  });

  it('anthropic and responses events', () => {
    const a = recorder();
    const fa = new StreamFacts(meter(), a.span);
    fa.push({ event: 'message_start', data: '{"type":"message_start","message":{"id":"msg_7","model":"claude-x","stop_reason":null}}' });
    fa.push({ event: 'message_delta', data: '{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}' });
    fa.flush();
    expect(a.attrs).toEqual({ 'gen_ai.response.id': 'msg_7', 'gen_ai.response.model': 'claude-x', 'gen_ai.response.finish_reasons': ['max_tokens'] });

    const r = recorder();
    const fr = new StreamFacts(meter(), r.span);
    fr.push({ event: 'response.created', data: '{"type":"response.created","response":{"id":"resp_3","model":"gpt-5-nano"}}' });
    fr.push({ event: 'response.completed', data: '{"type":"response.completed","response":{"id":"resp_3","status":"completed"}}' });
    fr.flush();
    expect(r.attrs).toEqual({ 'gen_ai.response.id': 'resp_3', 'gen_ai.response.model': 'gpt-5-nano', 'gen_ai.response.finish_reasons': ['completed'] });
  });
});

describe('operation and provider names', () => {
  it('follow the upstream protocol', () => {
    expect([operationOf('openai'), operationOf('anthropic'), operationOf('responses'), operationOf('gemini'), operationOf('images')]).toEqual(['chat', 'chat', 'chat', 'generate_content', 'generate_content']);
    expect([providerNameOf('openai'), providerNameOf('anthropic'), providerNameOf('responses'), providerNameOf('gemini'), providerNameOf('images')]).toEqual(['openai', 'anthropic', 'openai', 'gcp.gemini', 'openai']);
  });
});
