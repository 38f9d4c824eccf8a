// Chat clients on an openai model through the unified entry: bytes pass through both ways, only upstream errors are
// normalised to the chat shape (all four keys present).
export { openaiErrorToChat as chatOverOpenaiError } from './error.ts';
