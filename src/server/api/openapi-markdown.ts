/**
 * A readable page of the HTTP API (docs/http-api.md) from the OpenAPI document serve answers
 * (docs/openapi.json): per tag, each route with its token, parameters, request body fields and
 * answers. Pure: the document in, Markdown out, the same text for the same document, so a test
 * can compare the checked-in page with it (`npm run docs:cli` rewrites both reference pages).
 */

type Json = Record<string, unknown>;

function obj(v: unknown): Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {};
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
}

/** A schema in a few words: `string`, `integer ≥ 0`, `"a" \| "b"`, `object`, `array of string`. */
function typeOf(schema: Json): string {
  if ('const' in schema) return JSON.stringify(schema['const']);
  if (Array.isArray(schema['enum'])) return (schema['enum'] as unknown[]).map((e) => JSON.stringify(e)).join(' or ');
  if (typeof schema['$ref'] === 'string') return schema['$ref'].replace('#/components/schemas/', '');
  if (Array.isArray(schema['oneOf'])) return (schema['oneOf'] as unknown[]).map((s) => typeOf(obj(s))).join(' or ');
  const t = Array.isArray(schema['type']) ? (schema['type'] as unknown[]).join(' or ') : String(schema['type'] ?? 'any');
  if (t === 'array') return `array of ${typeOf(obj(schema['items']))}`;
  const bounds = [
    schema['minimum'] !== undefined ? `≥ ${String(schema['minimum'])}` : '',
    schema['maximum'] !== undefined ? `≤ ${String(schema['maximum'])}` : '',
  ].filter((b) => b !== '');
  return [t, ...bounds].join(' ');
}

function fieldsTable(schema: Json): string[] {
  const props = obj(schema['properties']);
  const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as string[]) : []);
  const names = Object.keys(props);
  if (names.length === 0) return [`Body: ${typeOf(schema)}.`, ''];
  const out = ['| field | type | required | meaning |', '|---|---|---|---|'];
  for (const n of names) {
    const p = obj(props[n]);
    out.push(`| \`${n}\` | ${cell(typeOf(p))} | ${required.has(n) ? 'yes' : ''} | ${cell(String(p['description'] ?? ''))} |`);
  }
  return [...out, ''];
}

function route(method: string, path: string, op: Json): string[] {
  const out = [`### ${method.toUpperCase()} ${path}`, ''];
  if (typeof op['summary'] === 'string') out.push(`${op['summary']}.`, '');
  const security = Array.isArray(op['security']) ? (op['security'] as unknown[]) : [];
  const token = typeof op['x-podipam-token'] === 'string' ? op['x-podipam-token'] : 'read';
  out.push(
    security.length === 0
      ? 'Token: none.'
      : `Token: ${token === 'admin' ? 'admin (or the per-install token on loopback)' : 'read or admin (open on loopback without tokens)'}.`,
    '',
  );
  const params = Array.isArray(op['parameters']) ? (op['parameters'] as unknown[]).map(obj) : [];
  if (params.length > 0) {
    out.push('| parameter | in | type | required | meaning |', '|---|---|---|---|---|');
    for (const p of params) {
      out.push(
        `| \`${String(p['name'])}\` | ${String(p['in'])} | ${cell(typeOf(obj(p['schema'])))} | ${p['required'] === true ? 'yes' : ''} | ${cell(String(p['description'] ?? ''))} |`,
      );
    }
    out.push('');
  }
  const body = obj(obj(obj(obj(op['requestBody'])['content'])['application/json'])['schema']);
  if (Object.keys(body).length > 0) out.push('Request body (`application/json`):', '', ...fieldsTable(body));
  const responses = obj(op['responses']);
  out.push('| answer | when |', '|---|---|');
  for (const [code, r] of Object.entries(responses)) {
    const content = Object.keys(obj(obj(r)['content']));
    const type = content.length > 0 && content[0] !== 'application/json' ? ` (\`${content.join('`, `')}\`)` : '';
    out.push(`| ${code} | ${cell(String(obj(r)['description'] ?? ''))}${type} |`);
  }
  return [...out, ''];
}

/** docs/http-api.md for the OpenAPI document `doc`. */
export function openApiMarkdown(doc: Json): string {
  const info = obj(doc['info']);
  const out = [
    '# HTTP API reference',
    '',
    '<!-- Generated from docs/openapi.json by `npm run docs:cli`; do not edit. -->',
    '',
    `${String(info['title'] ?? 'API')} (version ${String(info['version'] ?? '?')}). ${String(info['description'] ?? '')}`,
    '',
    'The machine-readable contract is [openapi.json](openapi.json) (OpenAPI 3.1), also served at',
    '`GET /api/v1/openapi.json`; `GET /api/v1` lists the routes. It is generated from the route',
    'table that validates request bodies (`src/server/api/api-docs.ts`), so it cannot drift from',
    'what serve does: `npm run docs:openapi` rewrites it and a test fails while it is stale. Who',
    'may call what (tokens, `Host` and `Origin` checks): [security.md](security.md).',
    '',
  ];
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(obj(doc['paths']))) {
    for (const [method, op] of Object.entries(obj(ops))) {
      const tags = obj(op)['tags'];
      const tag = Array.isArray(tags) && typeof tags[0] === 'string' ? tags[0] : 'other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), ...route(method, path, obj(op))]);
    }
  }
  out.push(`Sections: ${[...byTag.keys()].map((t) => `[${t}](#${t})`).join(', ')}.`, '');
  for (const [tag, lines] of byTag) out.push(`## ${tag}`, '', ...lines);
  return `${out.join('\n').replace(/\n+$/, '')}\n`;
}
