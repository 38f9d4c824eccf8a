// The embeddings protocol (OpenAI /embeddings): path, bearer credential, usage reader; never streamed, so its error
// framing is only the openai one for completeness.
import { embeddingsReader } from '../meter/embeddings.ts';
import { bearer } from './adapter.ts';
import { openai } from './openai.ts';

export const embeddings = {
  protocol: 'embeddings' as const,
  paths: { embeddings: '/embeddings' },
  credentialHeaders: bearer,
  reader: embeddingsReader,
  streamError: openai.streamError,
};
