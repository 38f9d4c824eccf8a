// bench/limits.ts runs in its own process (it starts its own upstream, floor and gateways); its result comes back as
// the last line of its output after this marker.
import type { LimitsResult } from './benchmarks-doc.ts';

export const RESULT_MARK = 'LIMITS_RESULT ';

export function parseLimitsResult(output: string): LimitsResult | undefined {
  const line = output.split('\n').findLast((l) => l.startsWith(RESULT_MARK));
  return line === undefined ? undefined : (JSON.parse(line.slice(RESULT_MARK.length)) as LimitsResult);
}
