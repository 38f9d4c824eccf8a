// Chat tool-call ids for Gemini function calls: Gemini 2.x gives none, and Gemini 2.5/3 attach a thought signature that
// must come back on the same call in the next turn. Chat has no field for it, so it rides inside the id (as LiteLLM does).

const SIGNATURE_MARK = '__thought__';

/** A stable id: Gemini's own when it gives one, else derived from the response id and the call's position. */
export function geminiToolCallId(responseId: string, position: number, ownId: unknown, signature: unknown): string {
  const id = typeof ownId === 'string' && ownId !== '' ? ownId : `call_${responseId.replace(/[^A-Za-z0-9_-]/g, '')}_${position}`;
  return typeof signature === 'string' && signature !== '' ? id + SIGNATURE_MARK + signature : id;
}

export function splitToolCallId(id: string): { id: string; signature?: string } {
  const at = id.indexOf(SIGNATURE_MARK);
  if (at < 0) return { id };
  return { id: id.slice(0, at), signature: id.slice(at + SIGNATURE_MARK.length) };
}
