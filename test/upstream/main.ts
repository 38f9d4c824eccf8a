// Runs the fake upstream standalone for the demo and benchmarks.
//   node test/upstream/main.ts [--port 8081] [--host 127.0.0.1] [--first-byte-delay-ms 0] [--chunk-delay-ms 0] [--record]
// Prints the base URL on stdout (first line) and stops on SIGINT/SIGTERM.
import { parseArgs } from 'node:util';
import { startFakeUpstream } from './server.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '8081' },
    host: { type: 'string', default: '127.0.0.1' },
    'first-byte-delay-ms': { type: 'string', default: '0' },
    'chunk-delay-ms': { type: 'string', default: '0' },
    record: { type: 'boolean', default: false },
  },
});

const fake = await startFakeUpstream({
  port: Number(values.port),
  host: values.host,
  firstByteDelayMs: Number(values['first-byte-delay-ms']),
  chunkDelayMs: Number(values['chunk-delay-ms']),
  // recording every request would grow memory without bound under load
  record: values.record,
});
console.log(fake.url);
console.error(
  `fake upstream ready: OpenAI ${fake.url}/v1, Anthropic ${fake.url} (/v1/messages), Gemini ${fake.url} (/v1beta/models/...), Ark ${fake.url}/api/v3`,
);

let closing = false;
const stop = (): void => {
  if (closing) return;
  closing = true;
  fake.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
