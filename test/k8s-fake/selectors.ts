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

/** Field selectors: the API server supports metadata.name and metadata.namespace on every kind. */
export function parseFieldSelector(s: string | null | undefined): (obj: { metadata: { name: string; namespace?: string } }) => boolean {
  if (!s) return () => true;
  const reqs = s.split(',').map((p) => {
    const m = p.trim().match(/^(metadata\.name|metadata\.namespace)\s*(!=|==|=)\s*(.*)$/);
    if (!m) throw new Error(`field label not supported: "${p.trim()}"`);
    const [, field, op, value] = m;
    const pick = field === 'metadata.name' ? (o: { metadata: { name: string } }) => o.metadata.name : (o: { metadata: { namespace?: string } }) => o.metadata.namespace ?? '';
    return op === '!=' ? (o: { metadata: { name: string; namespace?: string } }) => pick(o) !== value : (o: { metadata: { name: string; namespace?: string } }) => pick(o) === value;
  });
  return (obj) => reqs.every((r) => r(obj));
}
