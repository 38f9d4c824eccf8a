// `data:` URLs as chat clients send images and files: split into media type and base64 payload.

export interface DataUrl {
  mediaType: string;
  /** Base64 payload, as it was in the URL. */
  data: string;
}

const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)((?:;[a-z0-9-]+=[^;,]*)*);base64,/i;

/** A base64 `data:` URL, or undefined for anything else (http URLs, percent-encoded data URLs). */
export function parseDataUrl(url: string): DataUrl | undefined {
  const m = DATA_URL.exec(url);
  if (!m) return undefined;
  return { mediaType: m[1].toLowerCase(), data: url.slice(m[0].length) };
}

/** The URL a chat image part names: `{image_url: {url}}`, or the bare string some clients send. */
export function imagePartUrl(part: Record<string, unknown>): string | undefined {
  const iu = part.image_url;
  if (typeof iu === 'string') return iu;
  if (iu !== null && typeof iu === 'object' && typeof (iu as { url?: unknown }).url === 'string') return (iu as { url: string }).url;
  return undefined;
}

const EXT_TYPES: Record<string, string> = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', pdf: 'application/pdf', heic: 'image/heic' };

/** Guesses a media type from a URL's file extension (for upstreams that want one beside a remote URL). */
export function mediaTypeOfUrl(url: string): string {
  let path = url;
  try {
    path = new URL(url).pathname;
  } catch {
    // not a URL: use it as it is
  }
  const ext = /\.([a-z0-9]+)$/i.exec(path)?.[1]?.toLowerCase();
  return (ext && EXT_TYPES[ext]) || 'image/jpeg';
}
