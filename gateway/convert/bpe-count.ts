// A compact byte-pair token counter over the rank files js-tiktoken ships. js-tiktoken's own `Tiktoken` keeps two
// maps per encoding (a "1,2,3"-string key per token plus a Uint8Array per token for decoding): ~100 MB of heap for
// o200k and cl100k together, which was most of an idle gateway's memory. Counting needs neither decoding nor
// arrays: one Map from the token's bytes (as a one-byte "binary" string) to its rank, ~10 MB per encoding.
import { readFile } from 'node:fs/promises';

/** The shape of js-tiktoken's rank files: a split pattern, special tokens, and "! <offset> <base64> <base64> …" lines. */
interface RankFile {
  pat_str: string;
  special_tokens: Record<string, number>;
  bpe_ranks: string;
}

export interface BpeCounter {
  /** Tokens of `text` as the encoding splits and merges it; special-token strings count as ordinary text. */
  count(text: string): number;
}

// Tokens decoded per event-loop turn while building: the map builds off the request path without a long block.
const TOKENS_PER_TURN = 5_000;

/**
 * Reads a js-tiktoken rank file (`js-tiktoken/ranks/<name>`) with `fs` rather than `import()`: an imported module
 * stays in the module map for the life of the process, keeping its 1–2 MB source and string resident.
 */
export async function loadBpeCounter(name: 'o200k_base' | 'cl100k_base'): Promise<BpeCounter> {
  const url = import.meta.resolve(`js-tiktoken/ranks/${name}`);
  const source = await readFile(new URL(url), 'utf8');
  const start = source.indexOf('{');
  const end = source.lastIndexOf('}');
  if (start < 0 || end < start) throw new Error(`unexpected rank file format: ${url}`);
  const file = JSON.parse(source.slice(start, end + 1)) as RankFile;
  if (typeof file.pat_str !== 'string' || typeof file.bpe_ranks !== 'string') throw new Error(`unexpected rank file format: ${url}`);
  const ranks = new Map<string, number>();
  const text = file.bpe_ranks;
  let rank = 0;
  let pos = 0;
  let done = 0;
  while (pos < text.length) {
    const lineEnd = nextIndex(text, '\n', pos);
    // "! <offset> <tokens…>": the marker is skipped, the offset numbers the line's first token.
    let at = nextIndex(text, ' ', pos) + 1;
    const offsetEnd = nextIndex(text, ' ', at);
    if (at > 0 && at < lineEnd) rank = Number.parseInt(text.slice(at, Math.min(offsetEnd, lineEnd)), 10);
    at = Math.min(offsetEnd, lineEnd) + 1;
    while (at < lineEnd) {
      const tokenEnd = Math.min(nextIndex(text, ' ', at), lineEnd);
      if (tokenEnd > at) ranks.set(atob(text.slice(at, tokenEnd)), rank++);
      at = tokenEnd + 1;
      if (++done % TOKENS_PER_TURN === 0) await new Promise((r) => setImmediate(r));
    }
    pos = lineEnd + 1;
  }
  return counter(ranks, new RegExp(file.pat_str, 'gu'));
}

function nextIndex(text: string, ch: string, from: number): number {
  const i = text.indexOf(ch, from);
  return i < 0 ? text.length : i;
}

function counter(ranks: Map<string, number>, pattern: RegExp): BpeCounter {
  return {
    count(text: string): number {
      let n = 0;
      pattern.lastIndex = 0;
      for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
        const piece = m[0];
        if (piece.length === 0) {
          pattern.lastIndex++;
          continue;
        }
        n += countPiece(binary(piece), ranks);
      }
      return n;
    },
  };
}

/** The piece's UTF-8 bytes as a one-byte string (the map's key form); ASCII is already that. */
function binary(piece: string): string {
  for (let i = 0; i < piece.length; i++) if (piece.charCodeAt(i) > 0x7f) return Buffer.from(piece, 'utf8').toString('latin1');
  return piece;
}

/** tiktoken's merge: repeatedly join the adjacent pair of lowest rank until no pair is a token; returns the parts. */
function countPiece(bytes: string, ranks: Map<string, number>): number {
  if (bytes.length === 1 || ranks.has(bytes)) return 1;
  // bounds[i]..bounds[i+1] is part i; pair[i] is the rank of parts i and i+1 joined (Infinity: not a token).
  const bounds: number[] = [];
  for (let i = 0; i <= bytes.length; i++) bounds.push(i);
  const pairRank = (i: number): number => (i + 2 < bounds.length ? (ranks.get(bytes.slice(bounds[i], bounds[i + 2])) ?? Infinity) : Infinity);
  const pair: number[] = [];
  for (let i = 0; i < bounds.length - 1; i++) pair.push(pairRank(i));
  for (;;) {
    let min = Infinity;
    let at = -1;
    for (let i = 0; i < pair.length - 1; i++) {
      if (pair[i] < min) {
        min = pair[i];
        at = i;
      }
    }
    if (at < 0) break;
    bounds.splice(at + 1, 1);
    pair.splice(at + 1, 1);
    pair[at] = pairRank(at);
    if (at > 0) pair[at - 1] = pairRank(at - 1);
  }
  return bounds.length - 1;
}
