import { routingFields, secretKeyRef, status } from '../common.ts';
import { AGE_COLUMN, APPLIED_COLUMN, READY_COLUMN, REASON_COLUMN, type KindDefinition } from '../crd.ts';
import { DISCONNECT_ACTIONS, PROTOCOLS } from '../../../gateway/snapshot/schema.ts';
import { int, list, obj, str, stringMap } from '../openapi.ts';


const protocolsText = 'openai (chat completions), anthropic (messages), responses, images (generations and edits), gemini (generateContent).';

const timeout = (what: string, defaultMs: number) =>
  int(`${what} In milliseconds; default ${defaultMs}.`, { minimum: 1, maximum: 3_600_000 });

export const provider: KindDefinition = {
  kind: 'Provider',
  plural: 'providers',
  singular: 'provider',
  shortNames: ['tgprovider'],
  description: 'Provider is an upstream endpoint the gateway calls: its base URL, the protocols it speaks, and the Secret holding its credential. Models route to providers through their upstreams.',
  spec: obj('Desired state of the Provider.', {
    baseUrl: str('Upstream base URL, e.g. https://api.openai.com/v1. Protocol paths (/chat/completions, /messages, ...) are appended to it.', {
      maxLength: 2048,
      format: 'uri',
      'x-kubernetes-validations': [{ rule: "self.matches('^https?://[^/?#]+')", message: 'baseUrl must be an absolute http(s) URL' }],
    }),
    protocols: list(`Protocols this endpoint speaks natively: ${protocolsText} A Model upstream may only use a protocol listed here.`, str('A protocol name.', { enum: [...PROTOCOLS] }), {
      minItems: 1,
      maxItems: 5,
      'x-kubernetes-list-type': 'set',
    }),
    credentials: obj('Where the provider credential is read from. The operator copies it into the snapshot Secret; it never appears in a CR or in logs.', {
      secretRef: secretKeyRef('The Secret key holding the credential (an API key, sent as the provider expects: Authorization, x-api-key or x-goog-api-key).'),
    }, ['secretRef']),
    headers: stringMap('Extra headers sent on every upstream request, e.g. OpenAI-Beta. Not secret: put credentials in credentials.secretRef.', 'Value of the header.', { maxProperties: 32 }),
    timeouts: obj('Upstream time limits. Unset fields keep their defaults.', {
      connectMs: timeout('TCP and TLS connect.', 10_000),
      firstByteMs: timeout('Until the upstream response headers arrive.', 120_000),
      idleMs: timeout('Longest silence between two body chunks (SSE events).', 120_000),
      totalMs: timeout('The whole exchange, including draining after a client disconnect.', 600_000),
    }),
    onClientDisconnect: str('What happens to the upstream call when the client hangs up mid-stream. continue (default): read the upstream to its end so usage is what the provider bills. abort: stop at once and bill what was seen, flagged estimated.', {
      enum: [...DISCONNECT_ACTIONS],
    }),
    maxResponseBytes: int('Largest JSON answer read from this provider; past it the gateway answers 502 and drops the connection. Default 64 MiB for images, 16 MiB otherwise.', { minimum: 1, maximum: 4_294_967_296 }),
    routing: obj('Retry and ejection defaults for every upstream on this provider; a Model\'s spec.routing overrides them field by field.', routingFields),
  }, ['baseUrl', 'protocols', 'credentials']),
  status: status(),
  columns: [
    { name: 'Base URL', type: 'string', jsonPath: '.spec.baseUrl', description: 'Upstream base URL.' },
    { name: 'Protocols', type: 'string', jsonPath: '.spec.protocols', description: 'Protocols this endpoint speaks.' },
    { name: 'Secret', type: 'string', jsonPath: '.spec.credentials.secretRef.name', description: 'Secret holding the credential.', priority: 1 },
    READY_COLUMN,
    REASON_COLUMN,
    APPLIED_COLUMN,
    AGE_COLUMN,
  ],
};
