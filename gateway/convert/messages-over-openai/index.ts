// Messages clients on an openai-only model: the messages request as a chat completion request, and the chat answer,
// stream and errors back as Anthropic messages. Metered as the chat call it became (the upstream's protocol decides).
import type { Conversion } from '../converter.ts';
import { chatErrorToMessages } from './error.ts';
import { messagesRequestToChat } from './request.ts';
import { chatResponseToMessages } from './response.ts';
import type { ChatToMessagesContext } from './response.ts';
import { ChatToMessagesStream } from './stream.ts';
import { estimateChatPromptTokens } from '../prompt-estimate.ts';

/** Converts the request at once (a request chat cannot take is a 400 before any upstream call). */
export function messagesOverOpenai(body: Record<string, unknown>, opts: { drop: readonly string[]; requestId: string; clientModel: string }): Conversion {
  const chat = messagesRequestToChat(body, { drop: opts.drop });
  const c: ChatToMessagesContext = {
    stopSequences: stopSequences(body),
    fallbackId: opts.requestId.replaceAll('-', ''),
    fallbackModel: opts.clientModel,
    // message_start needs input tokens before a chat upstream reports them (LangChain reads them only there).
    estimateInputTokens: () => estimateChatPromptTokens(chat, String(chat.model)),
  };
  return {
    body: (upstreamModel) => ((chat.model = upstreamModel), JSON.stringify(chat)),
    converter: {
      json: (b) => chatResponseToMessages(b, c),
      stream: () => new ChatToMessagesStream(c),
      error: (status, b) => chatErrorToMessages(status, b),
    },
  };
}

function stopSequences(body: Record<string, unknown>): string[] {
  const s = body.stop_sequences;
  return Array.isArray(s) ? s.filter((x): x is string => typeof x === 'string') : [];
}
