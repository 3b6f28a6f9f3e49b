/**
 * Tokens on every mutating route of `podipam serve`: each POST/PATCH/DELETE route is called
 * with no token (401), with the read token (403) — and the datastore, read back with the admin
 * token, is unchanged after each refusal — then with the admin token (success). The list of
 * routes walked is checked against the routes the server registers, so a new mutating route
 * fails this test until it is added here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ApiDeps } from '../../src/server/api/api-deps.js';
import type { HandlerSpec } from '../../src/server/http/http-server.js';
import { Router, type Method } from '../../src/server/http/router.js';
import { addReadRoutes } from '../../src/server/api/routes-read.js';
import { addStaticRoutes } from '../../src/server/api/routes-static.js';
import { addWriteRoutes } from '../../src/server/api/routes-write.js';
import { makeTempDir } from '../helpers/tmp.js';
import { startServe } from './serve-harness.js';

const READ = 'read-walk-0123456789abcdef';
const ADMIN = 'admin-walk-0123456789abcdef';

/** Every non-GET route the server registers, as "METHOD /pattern". */
function mutatingRoutes(): string[] {
  const seen: string[] = [];
  const recorder = new (class extends Router<HandlerSpec> {
    override add(method: Method, pattern: string, handler: HandlerSpec): this {
      if (method !== 'GET') seen.push(`${method} ${pattern}`);
      return super.add(method, pattern, handler);
    }
  })();
  const deps = {} as ApiDeps; // registration only: no handler runs
  addStaticRoutes(recorder, deps);
  addReadRoutes(recorder, deps);
  addWriteRoutes(recorder, deps);
  return seen.sort();
}

interface Call {
  readonly route: string;
  readonly path: string;
  readonly body?: unknown;
  readonly status: number;
}

// In an order where each admin call succeeds: create, change, use, release, delete.
const WALK: readonly Call[] = [
  { route: 'POST /api/v1/pools', path: '/api/v1/pools', body: { name: 'walk4', cidr: '10.61.0.0/24' }, status: 201 },
  { route: 'POST /api/v1/nodes', path: '/api/v1/nodes', body: { name: 'walk-node' }, status: 201 },
  { route: 'POST /api/v1/allocations', path: '/api/v1/allocations', body: { node: 'walk-node', containerId: 'w1', pools: ['walk4'] }, status: 201 },
  { route: 'POST /api/v1/allocations', path: '/api/v1/allocations', body: { node: 'walk-node', containerId: 'w2', pools: ['walk4'] }, status: 201 },
  { route: 'DELETE /api/v1/allocations/:handle', path: '/api/v1/allocations/podipam:w1:eth0', status: 200 },
  { route: 'POST /api/v1/release', path: '/api/v1/release', body: { handle: 'podipam:w2:eth0' }, status: 200 },
  { route: 'POST /api/v1/pools/:name/resize', path: '/api/v1/pools/walk4/resize', body: { cidr: '10.61.0.0/23' }, status: 200 },
  { route: 'POST /api/v1/pools/:name/drain', path: '/api/v1/pools/walk4/drain', status: 200 },
  { route: 'POST /api/v1/pools/:name/undrain', path: '/api/v1/pools/walk4/undrain', status: 200 },
  { route: 'PATCH /api/v1/pools/:name', path: '/api/v1/pools/walk4', body: { disabled: true }, status: 200 },
  { route: 'DELETE /api/v1/nodes/:name', path: '/api/v1/nodes/walk-node', status: 200 },
  { route: 'DELETE /api/v1/pools/:name', path: '/api/v1/pools/walk4', status: 200 },
];

test(
  'serve auth: every mutating route refuses no token (401) and the read token (403) without writing, and works with the admin token',
  { timeout: 60_000 },
  async () => {
    assert.deepEqual([...new Set(WALK.map((c) => c.route))].sort(), mutatingRoutes(), 'the walk covers exactly the mutating routes the server registers');

    const d = makeTempDir('serve-walk');
    writeFileSync(join(d.path, 'tokens'), `read=${READ}\nadmin=${ADMIN}\n`, { mode: 0o600 });
    const s = await startServe({ args: ['--token-file', join(d.path, 'tokens'), '--no-controller'] });
    const host = new URL(s.url).host;
    /** A request as a well-behaved client sends it: JSON content type, Host of the listen address. */
    const call = async (method: string, path: string, body: unknown, token: string | undefined): Promise<{ status: number; body: any }> => {
      const headers: Record<string, string> = { 'content-type': 'application/json', host };
      if (token !== undefined) headers.authorization = `Bearer ${token}`;
      const res = await fetch(s.url + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      const text = await res.text();
      return { status: res.status, body: (res.headers.get('content-type') ?? '').includes('json') && text !== '' ? JSON.parse(text) : text };
    };
    /** What the datastore holds, as the admin reads it. */
    const state = async (): Promise<string> => {
      const parts = [];
      for (const p of ['/api/v1/pools', '/api/v1/nodes', '/api/v1/allocations', '/api/v1/blocks']) {
        const r = await call('GET', p, undefined, ADMIN);
        assert.equal(r.status, 200, `GET ${p}: ${JSON.stringify(r.body)}`);
        parts.push(JSON.stringify(r.body));
      }
      return parts.join('\n');
    };
    try {
      for (const c of WALK) {
        const method = c.route.split(' ')[0]!;
        const before = await state();
        const anon = await call(method, c.path, c.body, undefined);
        assert.equal(anon.status, 401, `${c.route} without a token: ${JSON.stringify(anon.body)}`);
        assert.equal(anon.body.error.code, 'unauthorized', c.route);
        const wrong = await call(method, c.path, c.body, 'not-a-token-0123456789');
        assert.equal(wrong.status, 401, `${c.route} with an unknown token: ${JSON.stringify(wrong.body)}`);
        const reader = await call(method, c.path, c.body, READ);
        assert.equal(reader.status, 403, `${c.route} with the read token: ${JSON.stringify(reader.body)}`);
        assert.equal(reader.body.error.code, 'forbidden', c.route);
        assert.equal(await state(), before, `${c.route}: a refused request changed the datastore`);
        const admin = await call(method, c.path, c.body, ADMIN);
        assert.equal(admin.status, c.status, `${c.route} with the admin token: ${JSON.stringify(admin.body)}`);
        assert.notEqual(await state(), before, `${c.route} with the admin token changed nothing`);
      }
      const pools = (await call('GET', '/api/v1/pools', undefined, ADMIN)).body.items as { name: string }[];
      assert.ok(pools.length > 0 && !pools.some((p) => p.name === 'walk4'), `the walk left pool walk4: ${pools.map((p) => p.name).join(', ')}`);
    } finally {
      await s.stop();
      d.remove();
    }
  },
);
