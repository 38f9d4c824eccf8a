// Chat clients on an anthropic model (the unified entry): the chat request as a Messages request, and the message,
// its stream and errors back as chat. Metered by the anthropic reader; the chat usage shown is read from that Usage.
import type { ChatContext } from '../chat-completion.ts';
import type { Conversion } from '../converter.ts';
import { messagesErrorToChat } from './error.ts';
import { chatRequestToMessages } from './request.ts';
import { messagesResponseToChat } from './response.ts';
import { MessagesStreamToChat } from './stream.ts';

/** Converts the request at once, before any upstream is called: a request Anthropic cannot take is a 400 here. */
export function chatOverAnthropic(body: Record<string, unknown>, chat: ChatContext): Conversion {
  const upstream = chatRequestToMessages(body, { model: chat.model });
  return {
    // The fallback model name follows the upstream picked (failover may change it).
    body: (upstreamModel) => ((chat.model = upstream.model = upstreamModel), JSON.stringify(upstream)),
    converter: { json: (b) => messagesResponseToChat(b, chat), stream: () => new MessagesStreamToChat(chat), error: messagesErrorToChat },
  };
}
