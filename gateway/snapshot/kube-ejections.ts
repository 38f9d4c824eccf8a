// The ejected upstream targets a gateway pod reports on its report Lease (one annotation), and how the operator
// reads them back. Bounded on both sides: a pod lists at most MAX_REPORTED targets with short fields and says how
// many there were in all; the operator ignores anything malformed rather than trust a pod's annotation.

/** JSON `{ total, targets: [{ provider, model, state }] }`; absent or empty when nothing is ejected. */
export const EJECTED_ANNOTATION = 'tollgate.dev/ejected-upstreams';
export const MAX_REPORTED = 16;
const MAX_FIELD = 200;

export interface EjectedTarget {
  provider: string;
  /** The upstream model id sent to the provider. */
  model: string;
  /** `ejected` while its cooldown runs, `half_open` once it waits for a probe to prove it works. */
  state: 'ejected' | 'half_open';
}

export interface EjectedReport {
  /** Every target this pod has out of rotation, of which `targets` lists at most MAX_REPORTED. */
  total: number;
  targets: EjectedTarget[];
}

/** The annotation's value: '' when nothing is ejected, so a healthy pod's Lease stays as small as before. */
export function encodeEjected(targets: Iterable<EjectedTarget>): string {
  const listed: EjectedTarget[] = [];
  let total = 0;
  for (const t of targets) {
    total++;
    if (listed.length < MAX_REPORTED) listed.push({ provider: t.provider.slice(0, MAX_FIELD), model: t.model.slice(0, MAX_FIELD), state: t.state });
  }
  if (total === 0) return '';
  listed.sort((a, b) => (a.provider === b.provider ? (a.model < b.model ? -1 : 1) : a.provider < b.provider ? -1 : 1));
  return JSON.stringify({ total, targets: listed });
}

/** Reads a pod's annotation; anything malformed reads as nothing reported. */
export function decodeEjected(text: string | undefined): EjectedReport {
  const none: EjectedReport = { total: 0, targets: [] };
  if (!text) return none;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return none;
  }
  if (typeof v !== 'object' || v === null || !Array.isArray((v as EjectedReport).targets)) return none;
  const targets: EjectedTarget[] = [];
  for (const t of (v as { targets: unknown[] }).targets.slice(0, MAX_REPORTED)) {
    const x = t as Partial<EjectedTarget> | null;
    if (typeof x?.provider !== 'string' || typeof x.model !== 'string' || (x.state !== 'ejected' && x.state !== 'half_open')) continue;
    targets.push({ provider: x.provider.slice(0, MAX_FIELD), model: x.model.slice(0, MAX_FIELD), state: x.state });
  }
  const total = Number((v as EjectedReport).total);
  return { total: Number.isInteger(total) && total >= targets.length ? Math.min(total, 1_000_000) : targets.length, targets };
}
