// Label and field selectors in the API server's string syntax.

type Requirement = (labels: Record<string, string>) => boolean;

export function parseLabelSelector(s: string | null | undefined): Requirement {
  if (!s) return () => true;
  const reqs: Requirement[] = [];
  // Split on commas that are not inside a set "(a,b)".
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  for (const raw of parts) {
    const p = raw.trim();
    let m: RegExpMatchArray | null;
    if ((m = p.match(/^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/))) {
      const [, key, op, list] = m;
      const set = new Set(list.split(',').map((x) => x.trim()));
      reqs.push(op === 'in' ? (l) => key in l && set.has(l[key]) : (l) => !(key in l) || !set.has(l[key]));
    } else if ((m = p.match(/^([^\s!=]+)\s*!=\s*(\S*)$/))) {
      const [, key, value] = m;
      reqs.push((l) => l[key] !== value);
    } else if ((m = p.match(/^([^\s!=]+)\s*==?\s*(\S*)$/))) {
      const [, key, value] = m;
      reqs.push((l) => l[key] === value);
    } else if ((m = p.match(/^!([^\s!=]+)$/))) {
      const key = m[1];
      reqs.push((l) => !(key in l));
    } else if ((m = p.match(/^([^\s!=]+)$/))) {
      const key = m[1];
      reqs.push((l) => key in l);
    } else throw new Error(`unable to parse requirement: "${p}"`);
  }
  return (labels) => reqs.every((r) => r(labels));
}

/**
 * Field selectors: metadata.name and metadata.namespace on every kind, plus the Event fields `kubectl describe`
 * asks for (involvedObject.*, regarding.*, type, reason). Other fields are refused as the server refuses them.
 */
const FIELD = /^(metadata\.name|metadata\.namespace|involvedObject\.[A-Za-z]+|regarding\.[A-Za-z]+|type|reason)\s*(!=|==|=)\s*(.*)$/;

export function parseFieldSelector(s: string | null | undefined): (obj: { metadata: { name: string; namespace?: string } }) => boolean {
  if (!s) return () => true;
  const reqs = s.split(',').map((p) => {
    const m = p.trim().match(FIELD);
    if (!m) throw new Error(`field label not supported: "${p.trim()}"`);
    const [, field, op, value] = m;
    const path = field.split('.');
    const pick = (o: unknown) => {
      let cur = o;
      for (const k of path) cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[k] : undefined;
      return cur === undefined || cur === null ? '' : String(cur);
    };
    return op === '!=' ? (o: unknown) => pick(o) !== value : (o: unknown) => pick(o) === value;
  });
  return (obj) => reqs.every((r) => r(obj));
}
