import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HandlerSpec } from '../http/http-server.js';
import type { RouteEntry } from '../http/router.js';
import { documentRoutes, openApiDocument } from './openapi-document.js';
import { ROUTE_DOCS } from './api-docs.js';
import { apiRouter, openApiText } from './api-router.js';

const run = (): unknown => ({});
const routes: RouteEntry<HandlerSpec>[] = [
  { method: 'GET', pattern: '/api/v1/pools/:name', handler: { run } },
  { method: 'POST', pattern: '/api/v1/pools', handler: { run, status: 201 } },
  { method: 'GET', pattern: '/healthz', handler: { run, access: 'public' } },
];

test('documentRoutes: a route served undocumented and a doc with no route are both named', () => {
  const docs = { 'GET /api/v1/pools/:name': ROUTE_DOCS['GET /api/v1/pools/:name']!, 'GET /api/v1/gone': ROUTE_DOCS['GET /healthz']! };
  assert.throws(
    () => documentRoutes(routes, docs),
    /served but not documented: POST \/api\/v1\/pools, GET \/healthz; documented but not served: GET \/api\/v1\/gone/,
  );
});

test('openApiDocument: paths, parameters, bodies, statuses and tokens come from the routes and their docs', () => {
  const docs = Object.fromEntries(routes.map((r) => [`${r.method} ${r.pattern}`, ROUTE_DOCS[`${r.method} ${r.pattern}`]!]));
  const doc = openApiDocument(routes, docs, '1.2.3') as { openapi: string; info: { version: string }; paths: Record<string, Record<string, any>> };
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, '1.2.3');
  const get = doc.paths['/api/v1/pools/{name}']?.['get'];
  assert.deepEqual(
    get.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`),
    ['path:name'],
  );
  assert.deepEqual(Object.keys(get.responses), ['200', '400', '401', '404', 'default']);
  assert.deepEqual(get.security, [{ bearer: [] }]);
  const post = doc.paths['/api/v1/pools']?.['post'];
  assert.equal(
    post.requestBody.content['application/json'].schema,
    ROUTE_DOCS['POST /api/v1/pools']?.body,
    'the schema that validates the body is the one documented',
  );
  assert.deepEqual(Object.keys(post.responses), ['201', '400', '401', '403', '409', '415', 'default']);
  assert.equal(post['x-podipam-token'], 'admin');
  assert.deepEqual(doc.paths['/healthz']?.['get'].security, []);
});

test('apiRouter: every route serve registers is in the table, and the text is stable', () => {
  assert.doesNotThrow(() => openApiText());
  assert.equal(openApiText(), openApiText());
  assert.ok(apiRouter);
});
