// The file format's JSON Schema and reference page, generated from the zod schema so they never drift (a test checks).
import { z } from 'zod';
import { snapshotSchema } from './schema.ts';

export function snapshotJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(snapshotSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return { $id: 'https://tollgate.dev/schemas/snapshot.schema.json', title: 'tollgate snapshot / standalone configuration', ...schema };
}

type Node = Record<string, unknown>;

/** A Markdown reference: one table per object, one row per field, with the schema's own descriptions. */
export function configurationReference(): string {
  const root = snapshotJsonSchema();
  const out: string[] = [
    '# Configuration reference',
    '',
    'Generated from `gateway/snapshot/schema.ts` by `npm run schema`; do not edit by hand.',
    'The standalone file (YAML or JSON) and the snapshot the operator compiles share this schema; its JSON Schema is `docs/snapshot.schema.json`.',
    '',
  ];
  const visit = (title: string, node: Node): void => {
    const variants = (node.anyOf ?? node.oneOf) as Node[] | undefined;
    if (variants) {
      variants.forEach((v, i) => visit(variants.length > 1 ? `${title} (variant ${i + 1})` : title, v));
      return;
    }
    if (node.type === 'array' && node.items) return visit(`${title}[]`, node.items as Node);
    if (node.type !== 'object' || !node.properties) return;
    const props = node.properties as Record<string, Node>;
    const required = new Set((node.required as string[] | undefined) ?? []);
    out.push(`## \`${title}\``, '');
    if (typeof node.description === 'string') out.push(node.description, '');
    out.push('| field | type | required | default | description |', '|---|---|---|---|---|');
    for (const [name, p] of Object.entries(props)) {
      out.push(`| \`${name}\` | ${typeName(p)} | ${required.has(name) ? 'yes' : ''} | ${p.default === undefined ? '' : '`' + JSON.stringify(p.default) + '`'} | ${String(p.description ?? '').replaceAll('|', '\\|')} |`);
    }
    out.push('');
    for (const [name, p] of Object.entries(props)) visit(title === '(root)' ? name : `${title}.${name}`, p);
  };
  visit('(root)', root);
  return out.join('\n');
}

function typeName(p: Node): string {
  if (p.enum) return (p.enum as unknown[]).map((e) => `\`${JSON.stringify(e)}\``).join(' \\| ');
  if (p.const !== undefined) return `\`${JSON.stringify(p.const)}\``;
  const variants = (p.anyOf ?? p.oneOf) as Node[] | undefined;
  if (variants) return variants.map(typeName).join(' \\| ');
  if (p.type === 'array') return `${typeName((p.items as Node) ?? {})}[]`;
  if (Array.isArray(p.type)) return p.type.join(' \\| ');
  return String(p.type ?? 'any');
}
