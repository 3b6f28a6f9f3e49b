/**
 * Fuzzing of the HTTP API through the real server in process (startServer on a memory
 * store, admin token): every mutating route sent valid bodies mutated field by field, random
 * JSON, random bytes, odd content types and random path parameters; every read route random
 * query strings. Every answer is JSON within its bound: a success, or a 4xx with
 * `{"error": {"code", "message"}}` — never a 5xx (nothing logged as a failure of ours), never
 * a stack trace; a 400 after one field was replaced names that field. The server then still
 * answers /healthz and its store passes `ipam check`. Seeds printed; see test/helpers/fuzz.ts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { Log, LogFields } from '../../log/logger.js';
import { startServer, type RunningServer } from '../start-server.js';
import { anyBytes, anyText, bounded, fc, fuzz, mutateAt, oddValue, pathsOf } from '../../../test/helpers/fuzz.js';

const FILE = 'api-bodies.fuzz';
const ADMIN = 'admin-token-for-the-api-fuzz-0123456789';
let server: RunningServer;
const failures: string[] = [];
const logged = (_f: LogFields, line: string): void => {
  if (/→ 5\d\d/.test(line)) failures.push(line);
};
const failureLog: Log = { debug: logged, info: logged, warn: logged, error: logged, child: () => failureLog };

before(async () => {
  server = await startServer({
    host: '127.0.0.1',
    port: 0,
    datastoreUrl: 'memory:api-fuzz',
    tokens: { admin: ADMIN, read: 'read-token-for-the-api-fuzz-0123456789' },
    defaultPools: [
      { name: 'default-ipv4', cidr: '10.244.0.0/16' },
      { name: 'default-ipv6', cidr: 'fd00:10:244::/56' },
    ] as never,
    log: failureLog,
  });
});
after(() => server?.close());

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly type: string;
}

function call(method: string, path: string, body: Buffer | undefined, contentType: string | undefined): Promise<Answer> {
  const u = new URL(server.url);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: u.host, authorization: `Bearer ${ADMIN}` };
    if (contentType !== undefined) headers['content-type'] = contentType;
    if (body !== undefined) headers['content-length'] = String(body.length);
    const req = request({ host: u.hostname, port: Number(u.port), method, path, headers, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, type: res.headers['content-type'] ?? '' }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

const ROUTES: readonly { method: string; path: string; body?: Record<string, unknown> }[] = [
  { method: 'POST', path: '/api/v1/pools', body: { name: 'fz', cidr: '10.60.0.0/16', blockSize: 26, nodeSelector: 'all()', disabled: false } },
  { method: 'PATCH', path: '/api/v1/pools/:p', body: { disabled: true } },
  { method: 'DELETE', path: '/api/v1/pools/:p' },
  { method: 'POST', path: '/api/v1/nodes', body: { name: 'node-fz', labels: { zone: 'a' } } },
  { method: 'DELETE', path: '/api/v1/nodes/:p' },
  {
    method: 'POST',
    path: '/api/v1/allocations',
    body: { node: 'n1', network: 'net', containerId: 'c0ffee', ifname: 'eth0', pools: ['default-ipv4'], ips: ['10.244.0.77'] },
  },
  { method: 'POST', path: '/api/v1/allocations', body: { node: 'n1', handle: 'net.c0ffee.eth0' } },
  { method: 'DELETE', path: '/api/v1/allocations/:p' },
  { method: 'POST', path: '/api/v1/release', body: { ip: '10.244.0.77' } },
  { method: 'POST', path: '/api/v1/release', body: { handle: 'net.c0ffee.eth0' } },
  { method: 'PUT', path: '/api/v1/reservations/:p', body: { cidrs: ['10.244.0.78', '10.244.1.0/28'] } },
  { method: 'DELETE', path: '/api/v1/reservations/:p' },
];

/** Percent-encodes text as a client would (a lone surrogate goes as U+FFFD, as in UTF-8). */
const enc = (s: string): string => encodeURIComponent(Buffer.from(s, 'utf8').toString('utf8'));

const param = fc.oneof(
  fc.constantFrom('fz', 'default-ipv4', 'node-fz', 'net.c0ffee.eth0', 'n1', '..', '%2e%2e', '%00', '%ff', '%', 'a%2Fb'),
  anyText(20).map(enc),
);

type Mutation = { path: (string | number)[]; change: { kind: 'set'; value: unknown } | { kind: 'delete' } };
const writeCase = fc.constantFrom(...ROUTES).chain((route) => {
  const paths = route.body ? pathsOf(route.body) : [];
  const mutation: fc.Arbitrary<Mutation> = fc.record({
    path:
      paths.length > 0
        ? fc.oneof(
            fc.constantFrom(...paths),
            anyText(8).map((k) => [k]),
          )
        : anyText(8).map((k) => [k]),
    change: fc.oneof(
      { weight: 4, arbitrary: oddValue().map((value) => ({ kind: 'set' as const, value })) },
      { weight: 1, arbitrary: fc.constant({ kind: 'delete' as const }) },
    ),
  });
  const body = fc.oneof(
    {
      weight: 6,
      arbitrary: fc
        .array(mutation, { maxLength: 3 })
        .map((ms) => ({ ms, bytes: Buffer.from(JSON.stringify(ms.reduce<unknown>((t, m) => mutateAt(t, m.path, m.change), route.body ?? {}))) })),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => ({ ms: [] as Mutation[], bytes: Buffer.from(JSON.stringify(v)) })) },
    { weight: 1, arbitrary: anyBytes(200).map((bytes) => ({ ms: [] as Mutation[], bytes })) },
    { weight: 1, arbitrary: fc.integer({ min: 60, max: 100 }).map((d) => ({ ms: [] as Mutation[], bytes: Buffer.from(`${'['.repeat(d)}${']'.repeat(d)}`) })) },
    { weight: 1, arbitrary: fc.constant({ ms: [] as Mutation[], bytes: undefined as Buffer | undefined }) },
  );
  const contentType = fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    fc.constantFrom(undefined, 'text/plain', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'multipart/form-data'),
    anyText(20).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
  );
  return fc.record({ route: fc.constant(route), param, body, contentType });
});

const ERROR_STATUSES = new Set([400, 404, 405, 409, 413, 415]);

function checkError(a: Answer, what: string): { code: string; message: string; field?: string } | undefined {
  assert.ok(a.status < 500, `${what}: ${a.status} ${a.text}`);
  assert.match(a.type, /application\/json/, `${what}: JSON answer`);
  const body = JSON.parse(a.text) as { error?: { code?: unknown; message?: unknown; field?: string } };
  assert.doesNotMatch(a.text, /\\n\s+at |node:internal|file:\/\//, `${what}: no stack trace`);
  if (a.status < 400) return undefined;
  assert.ok(ERROR_STATUSES.has(a.status), `${what}: an expected client-error status, got ${a.status} ${a.text}`);
  assert.equal(typeof body.error?.code, 'string', `${what}: error.code`);
  assert.equal(typeof body.error?.message, 'string', `${what}: error.message`);
  return body.error as { code: string; message: string; field?: string };
}

test('fuzz the mutating API routes through the real server: 2xx or a 4xx JSON error naming the field, never a 5xx', { timeout: 180_000 }, async (t) => {
  const statuses = new Map<number, number>();
  await fuzz(t, { runs: 600, file: FILE }, writeCase, async ({ route, param: p, body, contentType }) => {
    const path = route.path.replace(':p', p);
    const what = `${route.method} ${path} ${body.bytes?.toString('utf8').slice(0, 200) ?? '(no body)'} [${contentType}]`;
    const a = await bounded(what, 15_000, call(route.method, path, body.bytes, body.bytes === undefined ? undefined : contentType));
    statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    const err = checkError(a, what);
    const only = body.ms.length === 1 ? body.ms[0]! : undefined;
    // A path parameter that is no valid name is refused first, naming itself: the body is not read then.
    const paramOk = !route.path.includes(':p') || ['fz', 'default-ipv4', 'node-fz', 'net.c0ffee.eth0', 'n1'].includes(p);
    if (
      err &&
      err.code === 'invalid_field' &&
      paramOk &&
      only &&
      only.change.kind === 'set' &&
      typeof only.path[0] === 'string' &&
      route.body &&
      only.path[0] in route.body
    ) {
      const field = only.path[0];
      assert.ok(err.field === field || err.message.includes(field), `${what}: the error names "${field}": ${a.text}`);
    }
  });
  const line = [...statuses]
    .sort((x, y) => x[0] - y[0])
    .map(([s, n]) => `${s}=${n}`)
    .join(' ');
  t.diagnostic(`statuses: ${line}`);
  console.log(`api fuzz statuses: ${line}`);
  assert.ok((statuses.get(200) ?? 0) + (statuses.get(201) ?? 0) > 0, 'some calls succeeded');
  assert.deepEqual(failures, [], 'no 5xx logged');
});

test('fuzz the read routes with random query strings: never a 5xx', { timeout: 120_000 }, (t) => {
  const reads = [
    '/api/v1/overview',
    '/api/v1/pools',
    '/api/v1/pools/default-ipv4',
    '/api/v1/pools/default-ipv4/blocks',
    '/api/v1/blocks',
    '/api/v1/nodes',
    '/api/v1/allocations',
    '/api/v1/check',
    '/api/v1/blocks/10.244.0.0%2F26',
  ];
  const key = fc.constantFrom('limit', 'after', 'q', 'pool', 'node', 'handle', 'maxAge', 'x');
  const value = fc.oneof(fc.constantFrom('0', '-1', '1', '5000', '5001', '1e3', '', 'default-ipv4', 'n1', '10.244.0.0/26', '%00', '%ff'), anyText(20).map(enc));
  const q = fc.array(fc.tuple(key, value), { maxLength: 4 }).map((kv) => kv.map(([k, v]) => `${k}=${v}`).join('&'));
  return fuzz(t, { runs: 300, file: FILE }, fc.tuple(fc.constantFrom(...reads), q), async ([path, query]) => {
    const full = `${path}?${query}`;
    const a = await bounded(full, 15_000, call('GET', full, undefined, undefined));
    checkError(a, `GET ${full}`);
  });
});

test('after the fuzz: /healthz answers and ipam check runs', async () => {
  assert.equal((await call('GET', '/healthz', undefined, undefined)).status, 200);
  const c = await call('GET', '/api/v1/check?maxAge=0', undefined, undefined);
  assert.equal(c.status, 200, c.text);
  assert.deepEqual(failures, []);
});
