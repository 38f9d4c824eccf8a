// Upstream error bodies can quote the credential they were sent ("Incorrect API key provided: sk-prov…"). Before
// such a body leaves the gateway (to the client or a log), every configured provider credential and anything that
// looks like a token is blanked. Only error bodies pass through here, never the success path.

const MASK = '[redacted]';
// OpenAI-style secret keys (also quoted partly masked), bearer tokens, Google API keys, Anthropic keys.
const TOKEN_LIKE = /\b(?:sk-[A-Za-z0-9_\-*.…]{3,}|AIza[0-9A-Za-z_-]{10,})|\bBearer\s+[A-Za-z0-9._~+/=*-]{4,}/g;
// A provider that masks the middle of a key still shows its start: that much of a credential is blanked too.
const SHOWN_PREFIX = 8;

/** `text` with every credential in `secrets` (whole, or its first characters) and every token-looking word masked. */
export function redactSecrets(text: string, secrets: Iterable<string | undefined>): string {
  let out = text;
  for (const s of secrets) {
    if (!s || s.length < 4) continue;
    out = out.replaceAll(s, MASK);
    if (s.length > SHOWN_PREFIX * 2) out = out.replaceAll(s.slice(0, SHOWN_PREFIX), MASK);
  }
  return out.replace(TOKEN_LIKE, (m) => (m.startsWith('Bearer') ? `Bearer ${MASK}` : MASK));
}

/** The same for a body as bytes; the bytes are returned untouched when nothing had to go. */
export function redactBody(body: Buffer, secrets: Iterable<string | undefined>): Buffer {
  const text = body.toString('utf8');
  const out = redactSecrets(text, secrets);
  return out === text ? body : Buffer.from(out);
}
