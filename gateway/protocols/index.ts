// Every upstream protocol's adapter, by the protocol name the snapshot uses (the type checks each one conforms).
import type { Protocol } from '../snapshot/schema.ts';
import type { ProtocolAdapter } from './adapter.ts';
import { anthropic } from './anthropic.ts';
import { embeddings } from './embeddings.ts';
import { gemini } from './gemini.ts';
import { images } from './images.ts';
import { openai } from './openai.ts';
import { responses } from './responses.ts';

export const ADAPTERS: Readonly<Record<Protocol, ProtocolAdapter>> = { openai, anthropic, responses, images, gemini, embeddings };
