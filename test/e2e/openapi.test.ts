/**
 * The OpenAPI document against a running `serve`: it is what docs/openapi.json holds; the routes
 * serve lists (GET /api/v1, from its router) are exactly the documented operations; every
 * documented operation is called for real and answers (never "no such endpoint" nor 405), its
 * body valid against the documented schema for its status (ajv, JSON Schema 2020-12, the dialect
 * of OpenAPI 3.1); and every error path — unknown route, wrong method, bad token, bad body, bad
 * content type, foreign Host or Origin, oversized body — answers the one documented Error shape.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { REPO_ROOT } from '../helpers/plugin.js';
import { api, startServe, waitFor } from './serve-harness.js';

type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>;
  components: { schemas: Record<string, unknown> };
};

function validator(doc: Doc): (method: string, template: string, status: number, body: unknown) => string | null {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  const rewrite = (s: unknown): unknown => JSON.parse(JSON.stringify(s).replaceAll('"#/components/schemas/', '"https://podipam.invalid/schemas/'));
  for (const [name, s] of Object.entries(doc.components.schemas)) ajv.addSchema(rewrite(s) as object, `https://podipam.invalid/schemas/${name}`);
  return (method, template, status, body) => {
    const op = doc.paths[template]?.[method.toLowerCase()];
    assert.ok(op, `${method} ${template} is documented`);
    const r = op.responses[String(status)] ?? op.responses['default'];
    const schema = r?.content?.['application/json']?.schema;
    assert.ok(schema, `${method} ${template} documents a JSON answer for ${status}`);
    const v = ajv.compile(rewrite(schema) as object);
    return v(body) ? null : `${method} ${template} → ${status}: ${ajv.errorsText(v.errors)}\n${JSON.stringify(body).slice(0, 400)}`;
  };
}

/** GET /api/v1/overview with `Host: evil.example` (fetch does not let a caller set Host). */
function foreignHost(base: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/api/v1/overview`, { headers: { host: 'evil.example' }, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => {
        assert.match(res.headers['content-type'] ?? '', /^application\/json/);
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
      });
    });
    req.on('error', reject).end();
  });
}

test('OpenAPI: served = docs/openapi.json, every route documented and every documented route served, real answers valid', { timeout: 120_000 }, async () => {
  const s = await startServe();
  try {
    const served = await api(s.url, 'GET', '/api/v1/openapi.json', undefined, '');
    assert.equal(served.status, 200);
    const doc = served.body as Doc;
    assert.deepEqual(doc, JSON.parse(readFileSync(join(REPO_ROOT, 'docs', 'openapi.json'), 'utf8')), 'docs/openapi.json is stale: run npm run docs:openapi');
    const check = validator(doc);
    const documented = new Set(Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)));

    // Every route serve's router holds (its index) is documented, and nothing else is.
    const index = (await api(s.url, 'GET', '/api/v1')).body.routes as string[];
    const routes = new Set(
      index.map((l) =>
        l
          .split(/\s+/)
          .slice(0, 2)
          .join(' ')
          .replace(/:([a-zA-Z]+)/g, '{$1}'),
      ),
    );
    assert.deepEqual([...routes].sort(), [...documented].sort());

    // Every documented operation, called for real, in an order that gives each something to show.
    const called = new Set<string>();
    const samplePath = new Map<string, string>();
    const failures: string[] = [];
    const call = async (method: string, template: string, path: string, body?: unknown, expect?: number): Promise<any> => {
      const r = await api(s.url, method, path, body);
      called.add(`${method} ${template}`);
      if (!samplePath.has(`${method} ${template}`) && r.status < 300) samplePath.set(`${method} ${template}`, path.split('?')[0] as string);
      assert.ok(
        r.status !== 405 && !(r.status === 404 && /no such endpoint/.test(r.body?.error?.message ?? '')),
        `${method} ${path} is served: ${r.status} ${JSON.stringify(r.body)}`,
      );
      if (expect !== undefined) assert.equal(r.status, expect, `${method} ${path}: ${JSON.stringify(r.body)}`);
      if ((r.headers.get('content-type') ?? '').startsWith('application/json')) {
        const bad = check(method, template, r.status, r.body);
        if (bad) failures.push(bad);
      }
      return r.body;
    };
    await call('POST', '/api/v1/pools', '/api/v1/pools', { name: 'small', cidr: '10.99.0.0/24', blockSize: 28 }, 201);
    await call('POST', '/api/v1/nodes', '/api/v1/nodes', { name: 'n1', labels: { zone: 'a' } }, 201);
    const a1 = await call('POST', '/api/v1/allocations', '/api/v1/allocations', { node: 'n1', containerId: 'c1', network: 'oa', pools: ['small'] }, 201);
    await call('POST', '/api/v1/allocations', '/api/v1/allocations', { node: 'n1', containerId: 'c2', network: 'oa', pools: ['small'] }, 201);
    await call('POST', '/api/v1/allocations', '/api/v1/allocations', { node: 'n1', handle: 'oa-handle-3', pools: ['small'] }, 201);
    const ip = a1.ips[0] as string;
    await call('PATCH', '/api/v1/pools/{name}', '/api/v1/pools/small', { nodeSelector: 'all()' }, 200);
    await call('POST', '/api/v1/pools/{name}/resize', '/api/v1/pools/small/resize', { cidr: '10.99.0.0/23' }, 200);
    await call('POST', '/api/v1/pools/{name}/drain', '/api/v1/pools/small/drain', undefined, 200);
    await call('POST', '/api/v1/pools/{name}/undrain', '/api/v1/pools/small/undrain', {}, 200);
    await call('POST', '/api/v1/ipsets', '/api/v1/ipsets', { name: 'set1', pool: 'small', count: 2 }, 201);
    await call('PUT', '/api/v1/reservations/{name}', '/api/v1/reservations/gw', { cidrs: ['10.99.1.250', '10.99.1.240/30'] }, 200);
    await call('POST', '/api/v1/pools', '/api/v1/pools', { name: 'spare', cidr: '10.98.0.0/24' }, 201);
    await call('POST', '/api/v1/nodes', '/api/v1/nodes', { name: 'n2' }, 201);
    await waitFor('the history to see the pods', 10_000, async () =>
      (await api(s.url, 'GET', `/api/v1/history?address=${ip}`)).body.items?.length > 0 ? true : undefined,
    );

    const page = await call('GET', '/', '/', undefined, 200);
    await call('GET', '/index.html', '/index.html', undefined, 200);
    const asset = /\/assets\/([^"]+\.js)"/.exec(String(page))?.[1];
    assert.ok(asset, 'the page links its script');
    await call('GET', '/assets/{file}', `/assets/${asset}`, undefined, 200);
    await call('GET', '/assets/{file}', '/assets/nope.js', undefined, 404);
    await call('GET', '/healthz', '/healthz', undefined, 200);
    await call('GET', '/metrics', '/metrics', undefined, 200);
    await call('GET', '/api/v1/whoami', '/api/v1/whoami', undefined, 200);
    await call('GET', '/api/v1', '/api/v1', undefined, 200);
    await call('GET', '/api/v1/openapi.json', '/api/v1/openapi.json', undefined, 200);
    await call('GET', '/api/v1/overview', '/api/v1/overview', undefined, 200);
    await call('GET', '/api/v1/pools', '/api/v1/pools', undefined, 200);
    await call('GET', '/api/v1/pools/{name}', '/api/v1/pools/small', undefined, 200);
    await call('GET', '/api/v1/pools/{name}', '/api/v1/pools/nope', undefined, 404);
    await call('GET', '/api/v1/pools/{name}/held', '/api/v1/pools/small/held', undefined, 200);
    await call('GET', '/api/v1/pools/{name}/blocks', '/api/v1/pools/small/blocks', undefined, 200);
    await call('GET', '/api/v1/pools/{name}/forecast', '/api/v1/pools/small/forecast?window=1h', undefined, 200);
    await call('GET', '/api/v1/pools/{name}/forecast', '/api/v1/pools/small/forecast?window=1y', undefined, 400);
    const blocks = await call('GET', '/api/v1/blocks', '/api/v1/blocks?pool=small&limit=1', undefined, 200);
    await call('GET', '/api/v1/blocks/{cidr}', `/api/v1/blocks/${encodeURIComponent(blocks.items[0].cidr)}`, undefined, 200);
    await call('GET', '/api/v1/nodes', '/api/v1/nodes?limit=1', undefined, 200);
    await call('GET', '/api/v1/nodes/{name}', '/api/v1/nodes/n1', undefined, 200);
    await call('GET', '/api/v1/allocations', '/api/v1/allocations?pool=small&limit=2', undefined, 200);
    await call('GET', '/api/v1/check', '/api/v1/check?maxAge=0', undefined, 200);
    await call('GET', '/api/v1/pods/{namespace}/{name}', '/api/v1/pods/default/web-0', undefined, 404);
    await call('GET', '/api/v1/pods', '/api/v1/pods?name=web-0', undefined, 200);
    await call('GET', '/api/v1/addresses/{ip}', `/api/v1/addresses/${ip}`, undefined, 200);
    await call('GET', '/api/v1/history', `/api/v1/history?address=${ip}`, undefined, 200);
    await call('GET', '/api/v1/history', `/api/v1/history?address=${ip}&at=now`, undefined, 200);
    await call('GET', '/api/v1/history', '/api/v1/history?since=-1h&limit=2', undefined, 200);
    await call('GET', '/api/v1/ipsets', '/api/v1/ipsets', undefined, 200);
    await call('GET', '/api/v1/ipsets/{name}', '/api/v1/ipsets/set1', undefined, 200);
    await call('GET', '/api/v1/reservations', '/api/v1/reservations', undefined, 200);

    await call('DELETE', '/api/v1/allocations/{handle}', `/api/v1/allocations/${encodeURIComponent(a1.handle)}`, undefined, 200);
    await call('POST', '/api/v1/release', '/api/v1/release', { handle: 'oa-handle-3' }, 200);
    await call('POST', '/api/v1/release', '/api/v1/release', { ip: '10.99.0.200' }, 200);
    await call('DELETE', '/api/v1/ipsets/{name}', '/api/v1/ipsets/set1', undefined, 200);
    await call('DELETE', '/api/v1/reservations/{name}', '/api/v1/reservations/gw', undefined, 200);
    await call('DELETE', '/api/v1/reservations/{name}', '/api/v1/reservations/gw', undefined, 404);
    await call('DELETE', '/api/v1/nodes/{name}', '/api/v1/nodes/n2', undefined, 200);
    await call('DELETE', '/api/v1/pools/{name}', '/api/v1/pools/spare', undefined, 200);
    await call('DELETE', '/api/v1/pools/{name}', '/api/v1/pools/small', undefined, 409);

    assert.deepEqual(
      [...documented].filter((k) => !called.has(k)),
      [],
      'every documented operation was called',
    );
    assert.deepEqual(failures, []);

    // The documented bounds of integer query parameters are the ones enforced: the maximum
    // passes, one more is a 400 naming the parameter.
    let bounds = 0;
    for (const [p, ops] of Object.entries(doc.paths)) {
      const get = ops['get'] as { parameters?: { name: string; in: string; schema: { type?: string; maximum?: number } }[] } | undefined;
      for (const q of (get?.parameters ?? []).filter((x) => x.in === 'query' && x.schema.type === 'integer' && x.schema.maximum !== undefined)) {
        const path = samplePath.get(`GET ${p}`);
        assert.ok(path, `GET ${p} was called`);
        const over = await api(s.url, 'GET', `${path}?${q.name}=${(q.schema.maximum as number) + 1}`);
        assert.deepEqual([over.status, over.body.error?.field], [400, q.name], `GET ${p}?${q.name} above its documented maximum`);
        const at = await api(s.url, 'GET', `${path}?${q.name}=${q.schema.maximum as number}`);
        assert.notEqual(at.body.error?.field, q.name, `GET ${p}?${q.name} at its documented maximum: ${JSON.stringify(at.body)}`);
        bounds++;
      }
    }
    assert.ok(bounds >= 5, `${bounds} bounded query parameters checked`);

    // Every error path answers the one Error shape.
    const errorShape = validator({
      ...doc,
      paths: { '/x': { get: { responses: { default: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } } } } } },
    });
    const raw = async (path: string, init: RequestInit & { headers?: Record<string, string> }): Promise<{ status: number; body: unknown }> => {
      const r = await fetch(s.url + path, { ...init, signal: AbortSignal.timeout(10_000) });
      assert.match(r.headers.get('content-type') ?? '', /^application\/json/, `${path}: JSON`);
      return { status: r.status, body: await r.json() };
    };
    const token = s.installToken ?? '';
    const json = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
    const cases: [string, number, Promise<{ status: number; body: unknown }>][] = [
      ['unknown route', 404, raw('/api/v1/nope', {})],
      ['wrong method', 405, raw('/api/v1/overview', { method: 'DELETE', headers: json })],
      [
        'bad token on a write',
        401,
        raw('/api/v1/pools', { method: 'POST', headers: { ...json, authorization: 'Bearer not-the-token-0123456789' }, body: '{}' }),
      ],
      ['unknown body field', 400, raw('/api/v1/pools', { method: 'POST', headers: json, body: '{"name":"x","cidr":"10.1.0.0/24","blocksize":26}' })],
      ['bad JSON', 400, raw('/api/v1/pools', { method: 'POST', headers: json, body: '{' })],
      ['not JSON', 415, raw('/api/v1/pools', { method: 'POST', headers: { ...json, 'content-type': 'text/plain' }, body: 'x' })],
      ['foreign Origin', 403, raw('/api/v1/pools', { method: 'POST', headers: { ...json, origin: 'http://evil.example' }, body: '{}' })],
      ['foreign Host', 421, foreignHost(s.url)],
      ['body too large', 413, raw('/api/v1/pools', { method: 'POST', headers: json, body: `{"name":"${'x'.repeat(1 << 20)}"}` })],
      ['bad query', 400, raw('/api/v1/nodes?limit=0', {})],
      ['bad path encoding', 400, raw('/api/v1/pools/%E0%A4%A', {})],
    ];
    for (const [what, status, p] of cases) {
      const r = await p;
      assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(errorShape('GET', '/x', r.status, r.body), null, what);
    }
  } finally {
    await s.stop();
  }
});
