/**
 * `podipam serve` on loopback as a hostile web page and a DNS-rebinding attacker see it (real
 * process, real HTTP): foreign Host → 421, foreign Origin on writes → 403, non-JSON bodies →
 * 415, writes without the per-install token → 401; the token is made once (0600) in the data
 * directory and printed with the dashboard URL; --allowed-host adds a name. Also: exact
 * capacities and odd pool CIDRs through the API.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { makeTempDir } from '../helpers/tmp.js';
import { api, runCli, startServe, type ServeProcess } from './serve-harness.js';

let s: ServeProcess;
before(async () => {
  s = await startServe({ args: ['--no-controller', '--allowed-host', 'podipam.test'] });
});
after(async () => {
  await s?.stop();
});

interface Raw {
  readonly status: number;
  readonly body: any;
}

/** A request with exactly these headers (fetch would set Host and Origin itself). */
function raw(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Raw> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: Number(u.port), method, path, headers: { host: u.host, ...headers }, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: text && (res.headers['content-type'] ?? '').includes('json') ? JSON.parse(text) : text }),
      );
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

test('serve guard: the install token is made once, private, and printed with the dashboard URL', () => {
  const file = join(s.dataDir, 'serve.token');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const token = readFileSync(file, 'utf8').trim();
  assert.match(token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(s.installToken, token);
  assert.match(s.stdout(), new RegExp(`dashboard and API on http://127\\.0\\.0\\.1:\\d+/\\?token=${token} `));
  assert.match(s.stdout(), /writes need the install token in .*serve\.token/);
});

test('serve guard: the probes of issue 8 are refused and write nothing', async () => {
  const port = new URL(s.url).port;
  const token = s.installToken as string;
  // A page on evil.example posting text/plain (no preflight), with and without the token.
  for (const auth of [{}, { authorization: `Bearer ${token}` }] as Record<string, string>[]) {
    const rel = await raw('POST', '/api/v1/release', { origin: 'http://evil.example', 'content-type': 'text/plain', ...auth }, '{"handle":"x.y.eth0"}');
    assert.equal(rel.status, 403, JSON.stringify(rel.body));
    assert.equal(rel.body.error.code, 'cross_origin');
    const pool = await raw(
      'POST',
      '/api/v1/pools',
      { origin: 'http://evil.example', 'content-type': 'text/plain', ...auth },
      '{"name":"evil","cidr":"10.66.0.0/16"}',
    );
    assert.equal(pool.status, 403);
  }
  // Same-origin but text/plain: 415; JSON without the token: 401.
  assert.equal(
    (await raw('POST', '/api/v1/pools', { 'content-type': 'text/plain', authorization: `Bearer ${token}` }, '{"name":"evil","cidr":"10.66.0.0/16"}')).status,
    415,
  );
  const anon = await raw('POST', '/api/v1/pools', { 'content-type': 'application/json' }, '{"name":"evil","cidr":"10.66.0.0/16"}');
  assert.equal(anon.status, 401);
  assert.match(anon.body.error.message, /install token/);
  // DNS rebinding: the page's own name resolving to 127.0.0.1.
  for (const [method, path] of [
    ['GET', '/api/v1/pools'],
    ['GET', '/'],
    ['DELETE', '/api/v1/pools/default-ipv4'],
    ['GET', '/metrics'],
  ] as const) {
    const r = await raw(method, path, { host: `evil.example:${port}`, authorization: `Bearer ${token}` });
    assert.equal(r.status, 421, `${method} ${path}`);
    assert.equal(r.body.error.code, 'host_not_allowed');
  }
  const pools = await api(s.url, 'GET', '/api/v1/pools');
  assert.deepEqual(
    pools.body.items.map((p: any) => p.name),
    ['default-ipv4', 'default-ipv6'],
    'nothing was written',
  );
  // The real thing passes: own origin, JSON, the token; and a name given with --allowed-host.
  assert.equal(
    (
      await raw(
        'POST',
        '/api/v1/pools',
        { origin: s.url, 'content-type': 'application/json', authorization: `Bearer ${token}` },
        '{"name":"mine","cidr":"10.67.0.0/16"}',
      )
    ).status,
    201,
  );
  assert.equal((await raw('GET', '/api/v1/pools/mine', { host: `podipam.test:${port}` })).status, 200);
  assert.equal((await raw('DELETE', '/api/v1/pools/mine', { host: `localhost:${port}`, authorization: `Bearer ${token}` })).status, 200);
});

test('serve guard: reads stay open without a token; simulate without one stops with a clear message', async () => {
  assert.equal((await api(s.url, 'GET', '/api/v1/overview', undefined, '')).status, 200);
  const who = await api(s.url, 'GET', '/api/v1/whoami', undefined, '');
  assert.equal(who.body.role, 'read');
  assert.equal((await api(s.url, 'GET', '/api/v1/whoami')).body.role, 'admin', 'the install token is admin');
  // An empty --data-dir: no serve.token to find, no $PODIPAM_ADMIN_TOKEN (the harness clears it).
  const empty = makeTempDir('serve-guard-no-token');
  try {
    const sim = await runCli(['simulate', '--server', s.url, '--data-dir', empty.path, '--nodes', '1', '--pods', '1']);
    assert.equal(sim.code, 1, sim.stdout + sim.stderr);
    assert.match(sim.stderr, /only read.*\$PODIPAM_ADMIN_TOKEN.*--data-dir/);
  } finally {
    empty.remove();
  }
});

test('serve guard: deeply nested JSON is a 400 naming the limit', async () => {
  const deep = `{"name":"p","cidr":${'['.repeat(20000)}${']'.repeat(20000)}}`;
  const r = await api(s.url, 'POST', '/api/v1/pools', deep);
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.match(r.body.error.message, /deeper than 64 levels/);
  assert.doesNotMatch(s.stderr(), /Maximum call stack/);
});

test('serve api: capacities are exact (a string beyond 2^53) and odd pool CIDRs are refused naming the field', async () => {
  const pools = (await api(s.url, 'GET', '/api/v1/pools')).body.items;
  const v4 = pools.find((p: any) => p.name === 'default-ipv4');
  const v6 = pools.find((p: any) => p.name === 'default-ipv6');
  assert.equal(v4.capacity, 62464); // usable addresses: 1024 blocks x 61
  assert.equal(v6.capacity, '4574792530279968800768'); // 2^66 blocks x 62
  assert.equal(v6.blockSlots, '73786976294838206464');
  const ov = (await api(s.url, 'GET', '/api/v1/overview')).body;
  assert.equal(ov.totals.capacity, '4574792530279968863232');
  const m = await api(s.url, 'GET', '/metrics');
  assert.match(m.body, /^podipam_pool_capacity_addresses\{pool="default-ipv6",family="6"\} 4\.574792530279969e\+21$/m);
  for (const [cidr, what] of [
    ['224.0.0.0/4', /multicast/],
    ['127.0.0.0/8', /loopback/],
    ['ff00::/8', /multicast/],
    ['::ffff:10.0.0.0/104', /IPv4-mapped/],
    ['0.0.0.0/8', /unspecified/],
  ] as const) {
    const r = await api(s.url, 'POST', '/api/v1/pools', { name: 'odd', cidr });
    assert.equal(r.status, 400, `${cidr}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.field, 'cidr');
    assert.match(r.body.error.message, what);
  }
});

test('serve guard: a second start reuses the token; a bad --allowed-host is a usage error', async () => {
  const again = await startServe({ dataDir: s.dataDir, args: ['--no-controller', '--no-default-pools'] });
  try {
    assert.equal(again.installToken, s.installToken);
  } finally {
    await again.stop();
  }
  const bad = await runCli(['serve', '--listen', '127.0.0.1:0', '--data-dir', s.dataDir, '--allowed-host', 'evil.example:80']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /invalid --allowed-host "evil\.example:80"/);
});
