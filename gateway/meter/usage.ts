// The one normalised usage record every upstream answer is reduced to (docs/contract.md, usage).
export interface Usage {
  /** Uncached prompt tokens. */
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** Part of output; informational. */
  reasoning: number;
  /** Images made. */
  artifacts: number;
  /** True when cache reads come from explicit caching (anthropic protocol, Gemini cached content). */
  explicitCache: boolean;
  /** True only when the upstream gave no usage (or the stream was cut before it did). */
  estimated: boolean;
  /** The provider's own usage object, kept as detail. */
  detail: unknown;
}

export function emptyUsage(): Usage {
  return { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0, artifacts: 0, explicitCache: false, estimated: true, detail: null };
}

/** Whole prompt as the tier rule counts it: input + cache_read + cache_write. */
export function promptTokens(u: Usage): number {
  return u.input + u.cacheRead + u.cacheWrite;
}
