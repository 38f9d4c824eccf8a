// Cost of serving messages on a chat upstream: the chat-SSE -> messages-SSE state machine behind the real SSE parser
// and meter (as the relay runs it), and the request conversion. Run: node bench/convert-messages.ts [words]
import { ChatToMessagesStream } from '../gateway/convert/messages-over-openai/stream.ts';
import { messagesRequestToChat } from '../gateway/convert/messages-over-openai/request.ts';
import { openaiChatReader } from '../gateway/meter/openai-chat.ts';
import { SseTap } from '../gateway/meter/sse-tap.ts';

const words = Number(process.argv[2] ?? 500);
const head = '{"id":"chatcmpl-b","object":"chat.completion.chunk","created":1750000000,"model":"gpt-4o-mini","service_tier":"default","system_fingerprint":null,"choices":';
let sse = `data: ${head}[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}\n\n`;
for (let i = 0; i < words; i++) sse += `data: ${head}[{"index":0,"delta":{"content":" word${i}"},"finish_reason":null}],"usage":null}\n\n`;
sse += `data: ${head}[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}\n\n`;
sse += `data: ${head}[],"usage":{"prompt_tokens":100,"completion_tokens":${words},"total_tokens":${100 + words}}}\n\n`;
sse += 'data: [DONE]\n\n';
const bytes = Buffer.from(sse);
// Upstreams send a few events per TCP read; 512-byte pieces are a fair middle.
const pieces: Buffer[] = [];
for (let i = 0; i < bytes.length; i += 512) pieces.push(bytes.subarray(i, i + 512));
const ctx = { stopSequences: [], fallbackId: 'bench', fallbackModel: 'm' };

function once(convert: boolean): number {
  const c = new ChatToMessagesStream(ctx);
  let out = 0;
  const tap = new SseTap(openaiChatReader.stream(), convert ? (ev) => (out += c.push(ev).length) : undefined);
  for (const p of pieces) tap.push(p);
  tap.end();
  return out + c.end().length;
}

function time(label: string, n: number, fn: () => unknown): number {
  for (let i = 0; i < Math.min(n, 50); i++) fn();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  const ns = Number(process.hrtime.bigint() - t0) / n;
  console.log(`${label}: ${(ns / 1000).toFixed(1)} µs per call`);
  return ns;
}

const streams = 200;
const events = words + 4;
const meterOnly = time(`stream of ${events} events, parser + meter only (pass-through)`, streams, () => once(false));
const converted = time(`stream of ${events} events, parser + meter + converter`, streams, () => once(true));
console.log(`converter share: ${((converted - meterOnly) / events / 1000).toFixed(2)} µs per event; output ${once(true)} bytes for ${bytes.length} in`);
const body = { model: 'm', max_tokens: 1024, system: 'Be brief.', tools: [{ name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }], messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'get_weather', input: { city: 'Paris' } }] }, { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'sunny' }] }] };
time('request conversion (tool round trip, 3 messages)', 20000, () => messagesRequestToChat(body, { drop: [] }));
