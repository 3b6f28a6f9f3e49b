/**
 * The OpenAPI 3.1 document of serve's API, generated from the routes the router serves and the
 * route table (api-docs.ts) that also validates request bodies: one source, never a hand-kept
 * copy. `documentRoutes` refuses a router and a table that differ; `openApiDocument` is pure.
 * Served at GET /api/v1/openapi.json; `npm run docs:openapi` writes docs/openapi.json.
 */
import { routeKey, type JsonSchema, type RouteDoc } from '../http/route-doc.js';
import type { HandlerSpec } from '../http/http-server.js';
import type { RouteEntry } from '../http/router.js';
import { SCHEMAS } from './api-schemas.js';

/** Throws naming every route served without a doc and every doc with no route. */
export function documentRoutes(routes: readonly RouteEntry<HandlerSpec>[], docs: Readonly<Record<string, RouteDoc>>): void {
  const served = new Set(routes.map((r) => routeKey(r.method, r.pattern)));
  const undocumented = [...served].filter((k) => docs[k] === undefined);
  const unserved = Object.keys(docs).filter((k) => !served.has(k));
  if (undocumented.length > 0 || unserved.length > 0) {
    throw new Error(
      `the API's route table (src/server/api/api-docs.ts) and its routes differ: served but not documented: ${undocumented.join(', ') || 'none'}; documented but not served: ${unserved.join(', ') || 'none'}`,
    );
  }
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'a bad request: the field or parameter named, with the value',
  401: 'no token, or a token this server does not know',
  403: 'the token may not do this (a write needs the admin token), or another Origin',
  404: 'no such resource',
  409: 'refused by the state of the store (a conflict, an exhausted pool, a resource in use)',
  413: 'the request body is too large',
  415: 'a request body that is not application/json',
  421: 'a Host header this server does not answer',
  503: 'unavailable: the datastore does not answer, contention, or the history is off; retry later',
};

function operationId(method: string, pattern: string): string {
  const parts = pattern.split('/').filter((s) => s !== '' && s !== 'api' && s !== 'v1');
  const words = parts.map((p) =>
    p.startsWith(':')
      ? `By${cap(p.slice(1))}`
      : p
          .split(/[^a-zA-Z0-9]/)
          .map(cap)
          .join(''),
  );
  return method.toLowerCase() + (words.join('') || (pattern === '/' ? 'Root' : 'Index'));
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** The document for `routes` (in the router's order), described by `docs`. */
export function openApiDocument(
  routes: readonly RouteEntry<HandlerSpec>[],
  docs: Readonly<Record<string, RouteDoc>>,
  version: string,
): Record<string, unknown> {
  documentRoutes(routes, docs);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const doc = docs[routeKey(r.method, r.pattern)] as RouteDoc;
    const path = r.pattern.replace(/:([a-zA-Z]+)/g, '{$1}');
    const access = r.handler.access ?? (r.method === 'GET' ? 'read' : 'admin');
    const parameters = [
      ...Object.entries(doc.params ?? {}).map(([name, description]) => ({ name, in: 'path', required: true, description, schema: { type: 'string' } })),
      ...Object.entries(doc.query ?? {}).map(([name, p]) => ({
        name,
        in: 'query',
        required: p.required ?? false,
        description: p.description,
        schema: p.schema,
      })),
    ];
    const success =
      'contentType' in doc.response && typeof doc.response.contentType === 'string'
        ? {
            description: doc.summary,
            content: { [doc.response.contentType]: { schema: (doc.response.schema as JsonSchema | undefined) ?? { type: 'string' } } },
          }
        : { description: doc.summary, content: { 'application/json': { schema: doc.response } } };
    const errors = new Set<number>([
      ...(parameters.length > 0 || doc.body ? [400] : []),
      ...(access !== 'public' ? [401] : []),
      ...(access === 'admin' ? [403, 415] : []),
      ...(doc.errors ?? []),
    ]);
    const responses: Record<string, unknown> = { [String(r.handler.status ?? 200)]: success };
    for (const s of [...errors].sort((a, b) => a - b))
      responses[String(s)] = { description: STATUS_TEXT[s] ?? 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    responses['default'] = {
      description: 'any other error (5xx: a failure of the server, logged with its stack)',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
    (paths[path] ??= {})[r.method.toLowerCase()] = {
      operationId: operationId(r.method, r.pattern),
      tags: [doc.tag],
      summary: doc.summary,
      ...(doc.description !== undefined ? { description: doc.description } : {}),
      security: access === 'public' ? [] : [{ bearer: [] }],
      ...(access !== 'public' ? { 'x-podipam-token': access } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(doc.body ? { requestBody: { required: true, content: { 'application/json': { schema: doc.body } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'podipam serve API',
      version,
      description:
        'Pools, blocks, nodes, allocations, checks and the allocation history of podipam. Reads need the read (or admin) token, writes the admin token (or the per-install token on loopback). Every error answers {"error": {"code", "message", "field"?}}. Counts past 2^53 - 1 are decimal strings.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    paths,
    components: {
      schemas: SCHEMAS,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'the read or admin token (serve --token-file), or the per-install token in DIR/serve.token' },
      },
    },
  };
}
