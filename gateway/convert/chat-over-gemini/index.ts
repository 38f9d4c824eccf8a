// Chat clients on a gemini model (the unified entry): the chat request as generateContent, and the answer, its stream
// and errors back as chat. Metered by the gemini reader (text rule); the chat usage shown is read from that Usage.
import type { ChatContext } from '../chat-completion.ts';
import type { Conversion } from '../converter.ts';
import { geminiErrorToChat } from './error.ts';
import { chatRequestToGemini } from './request.ts';
import { geminiResponseToChat } from './response.ts';
import { GeminiStreamToChat } from './stream.ts';

/** Converts the request at once; the model is in the upstream path, so the body is serialised once for every upstream. */
export function chatOverGemini(body: Record<string, unknown>, chat: ChatContext): Conversion {
  const upstream = JSON.stringify(chatRequestToGemini(body));
  return {
    body: (upstreamModel) => ((chat.model = upstreamModel), upstream),
    converter: { json: (b) => geminiResponseToChat(b, chat), stream: () => new GeminiStreamToChat(chat), error: geminiErrorToChat },
  };
}
