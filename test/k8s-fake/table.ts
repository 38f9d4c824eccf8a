// Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), which `kubectl get` asks for: a CRD's
// additionalPrinterColumns evaluated with the server's JSONPath subset, or the core kinds' usual columns.
import type { KubeObject } from './object-store.ts';
import type { PrinterColumn, ResourceType } from './resources.ts';

interface ColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

type Cell = string | number | boolean | null;

/** JSONPath as printer columns use it: `.a.b`, `[n]`, `[*]`, `['key']` and `[?(@.x.y=="v")]` filters. */
export function jsonPath(obj: unknown, path: string): unknown[] {
  let current: unknown[] = [obj];
  const re = /\.([A-Za-z0-9_$-]+)|\[(\d+)\]|\[\*\]|\['([^']+)'\]|\[\?\(@((?:\.[A-Za-z0-9_$-]+)+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|([^)\s]+))\)\]/g;
  let pos = 0;
  for (let m = re.exec(path); m; m = re.exec(path)) {
    if (m.index !== pos) throw new Error(`unsupported JSONPath "${path}"`);
    pos = re.lastIndex;
    const next: unknown[] = [];
    for (const v of current) {
      if (v === null || typeof v !== 'object') continue;
      const o = v as Record<string, unknown>;
      if (m[1] !== undefined || m[3] !== undefined) {
        const child = o[m[1] ?? m[3]];
        if (child !== undefined) next.push(child);
      } else if (m[2] !== undefined) {
        if (Array.isArray(v) && v[Number(m[2])] !== undefined) next.push(v[Number(m[2])]);
      } else if (m[4] !== undefined) {
        if (!Array.isArray(v)) continue;
        const want = m[6] ?? m[7] ?? m[8];
        for (const item of v) {
          const got = jsonPath(item, m[4])[0];
          const same = got !== undefined && String(got) === want;
          if (m[5] === '==' ? same : !same) next.push(item);
        }
      } else if (Array.isArray(v)) next.push(...v);
      else next.push(...Object.values(o));
    }
    current = next;
  }
  if (pos !== path.length) throw new Error(`unsupported JSONPath "${path}"`);
  return current;
}

/** kubectl's human durations (5s, 3m20s, 4h, 2d3h, ...), which the server puts in date cells. */
export function humanDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 0) return '0s';
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (h < 24 * 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}

const age = (o: KubeObject): string => (o.metadata.creationTimestamp ? humanDuration(Date.now() - Date.parse(o.metadata.creationTimestamp)) : '<unknown>');

function cellOf(col: PrinterColumn, obj: KubeObject): Cell {
  let values: unknown[];
  try {
    values = jsonPath(obj, col.jsonPath);
  } catch {
    return null;
  }
  if (values.length === 0) return null;
  const v = values[0];
  switch (col.type) {
    case 'date':
      return typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? humanDuration(Date.now() - Date.parse(v)) : null;
    case 'integer':
      return typeof v === 'number' ? Math.trunc(v) : null;
    case 'number':
      return typeof v === 'number' ? v : null;
    case 'boolean':
      return typeof v === 'boolean' ? v : null;
    default:
      // Several matches are joined by a space and non-scalars printed as JSON, as the server's printer does.
      return values.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' ');
  }
}

const col = (name: string, type = 'string', description = '', format = ''): ColumnDefinition => ({ name, type, format, description, priority: 0 });
const NAME = col('Name', 'string', 'Name must be unique within a namespace.', 'name');
const AGE = col('Age', 'string', 'CreationTimestamp is a timestamp representing the server time when this object was created.');

const CORE_COLUMNS: Record<string, { columns: ColumnDefinition[]; cells: (o: KubeObject) => Cell[] }> = {
  Namespace: { columns: [NAME, col('Status'), AGE], cells: (o) => [o.metadata.name, (o.status as { phase?: string } | undefined)?.phase ?? 'Active', age(o)] },
  Secret: { columns: [NAME, col('Type'), col('Data', 'integer'), AGE], cells: (o) => [o.metadata.name, (o.type as string) ?? 'Opaque', Object.keys((o.data as object) ?? {}).length, age(o)] },
  ConfigMap: { columns: [NAME, col('Data', 'integer'), AGE], cells: (o) => [o.metadata.name, Object.keys((o.data as object) ?? {}).length + Object.keys((o.binaryData as object) ?? {}).length, age(o)] },
  Lease: { columns: [NAME, col('Holder'), AGE], cells: (o) => [o.metadata.name, (o.spec as { holderIdentity?: string } | undefined)?.holderIdentity ?? '', age(o)] },
  Pod: { columns: [NAME, col('Status'), AGE], cells: (o) => [o.metadata.name, (o.status as { phase?: string } | undefined)?.phase ?? 'Pending', age(o)] },
  CustomResourceDefinition: { columns: [NAME, col('Created At', 'date')], cells: (o) => [o.metadata.name, o.metadata.creationTimestamp ?? null] },
};

/** The Table for objects of one type; each row carries the object (includeObject=Object) or its metadata. */
export function toTable(t: ResourceType, objects: KubeObject[], includeObject: string | null, listMeta: Record<string, unknown>): object {
  let columns: ColumnDefinition[];
  let cells: (o: KubeObject) => Cell[];
  const core = t.printerColumns === undefined ? CORE_COLUMNS[t.kind] : undefined;
  if (core) ({ columns, cells } = core);
  else if (t.printerColumns && t.printerColumns.length > 0) {
    const pcs = t.printerColumns;
    columns = [NAME, ...pcs.map((c) => ({ name: c.name, type: c.type, format: c.format ?? '', description: c.description ?? '', priority: c.priority ?? 0 }))];
    cells = (o) => [o.metadata.name, ...pcs.map((c) => cellOf(c, o))];
  } else {
    columns = [NAME, AGE];
    cells = (o) => [o.metadata.name, age(o)];
  }
  const rowObject = (o: KubeObject) =>
    includeObject === 'None' ? undefined : includeObject === 'Object' ? o : { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata };
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: listMeta,
    columnDefinitions: columns,
    rows: objects.map((o) => ({ cells: cells(o), object: rowObject(o) })),
  };
}
