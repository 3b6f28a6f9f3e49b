/**
 * The HTTP plumbing on a real loopback socket (port 0): the request guard (Host, Origin,
 * content type), the per-install token, engine errors as logged 500s, bounded JSON nesting.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createHttpServer, type HandlerSpec } from './http-server.js';
import { hostPolicy } from './request-guard.js';
import { Router } from './router.js';

const INSTALL = 'install-token-0123456789abcdef';
let server: Server;
let port: number;
const logged: string[] = [];
const writes: unknown[] = [];

before(async () => {
  const r = new Router<HandlerSpec>();
  r.add('GET', '/api/v1/pools', { run: () => ({ items: [{ capacity: 1n << 72n, small: 65536n }] }) });
  r.add('POST', '/api/v1/pools', { status: 201, run: async (c) => (writes.push(await c.body()), { created: true }) });
  r.add('POST', '/api/v1/bug', {
    run: () => {
      const o = undefined as unknown as { x: { y: number } };
      return o.x.y; // a TypeError raised by the engine: our bug, not the client's
    },
  });
  r.add('POST', '/api/v1/bad-value', {
    run: () => {
      throw new RangeError("Cannot use 'blockSize' 12 for 10.0.0.0/16: an IPv4 block size must be an integer from 20 to 32");
    },
  });
  server = createHttpServer({
    router: r,
    tokens: { install: INSTALL },
    hostPolicy: hostPolicy('127.0.0.1', ['podipam.example.com']),
    onServerError: (e) => logged.push(`${e.status} ${e.message}\n${e.cause instanceof Error ? e.cause.stack : ''}`),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as AddressInfo).port;
});
after(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

interface Answer {
  readonly status: number;
  readonly body: any;
  readonly text: string;
}

/** A raw request, so Host and Origin are exactly what the test says (fetch would set them). */
function call(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { host: `127.0.0.1:${port}`, ...headers }, timeout: 5000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

const json = { 'content-type': 'application/json' };
const admin = { authorization: `Bearer ${INSTALL}` };

test('http server: a Host that is not this server is refused with 421 (DNS rebinding)', async () => {
  for (const host of [`evil.example:${port}`, 'evil.example', `127.0.0.1.evil.example:${port}`, `localhost.evil.example`, `podipam.example.com@evil.example`]) {
    const r = await call('GET', '/api/v1/pools', { host });
    assert.equal(r.status, 421, host);
    assert.equal(r.body.error.code, 'host_not_allowed');
    assert.match(r.body.error.message, /--allowed-host NAME/);
  }
  const w = await call('POST', '/api/v1/pools', { host: `evil.example:${port}`, ...json, ...admin }, '{"name":"p"}');
  assert.equal(w.status, 421);
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`, 'podipam.example.com', `podipam.example.com.:${port}`]) {
    assert.equal((await call('GET', '/api/v1/pools', { host })).status, 200, host);
  }
  assert.equal(writes.length, 0);
});

test('http server: a mutating call from another origin is refused with 403; its own origin passes', async () => {
  for (const origin of ['http://evil.example', `http://evil.example:${port}`, 'null', `http://localhost:${port + 1}`, `file://`]) {
    const r = await call('POST', '/api/v1/pools', { origin, ...json, ...admin }, '{"name":"p"}');
    assert.equal(r.status, 403, origin);
    assert.equal(r.body.error.code, 'cross_origin');
  }
  assert.equal(writes.length, 0, 'nothing refused was written');
  assert.equal((await call('POST', '/api/v1/pools', { origin: `http://127.0.0.1:${port}`, ...json, ...admin }, '{"name":"own"}')).status, 201);
  // A cross-origin GET is not refused (the browser keeps the answer from the page: no CORS headers).
  assert.equal((await call('GET', '/api/v1/pools', { origin: 'http://evil.example' })).status, 200);
});

test('http server: a body that is not application/json is refused with 415, even when it is JSON', async () => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '']) {
    const headers: Record<string, string> = { ...admin };
    if (type) headers['content-type'] = type;
    const r = await call('POST', '/api/v1/pools', headers, '{"name":"p"}');
    assert.equal(r.status, 415, type);
    assert.equal(r.body.error.code, 'unsupported_media_type');
  }
  assert.equal((await call('POST', '/api/v1/pools', { 'content-type': 'application/json; charset=utf-8', ...admin }, '{"name":"p2"}')).status, 201);
  assert.deepEqual(writes.slice(-1), [{ name: 'p2' }]);
});

test('http server: with the install token, reads are open and writes need the token', async () => {
  const anon = await call('POST', '/api/v1/pools', json, '{"name":"p"}');
  assert.equal(anon.status, 401);
  assert.match(anon.body.error.message, /install token/);
  assert.equal((await call('POST', '/api/v1/pools', { ...json, authorization: 'Bearer wrong-0123456789abcdef' }, '{"name":"p"}')).status, 401);
  assert.equal((await call('GET', '/api/v1/pools', {})).status, 200);
});

test('http server: our own failures are 500 and logged with a stack; a bad value is 400 with our message', async () => {
  logged.length = 0;
  const bug = await call('POST', '/api/v1/bug', admin);
  assert.equal(bug.status, 500);
  assert.equal(bug.body.error.code, 'internal');
  assert.doesNotMatch(bug.text, /at .*\.js:\d+/, 'no stack trace to the client');
  assert.equal(logged.length, 1);
  assert.match(logged[0] as string, /^500 .*Cannot read properties of undefined/);
  assert.match(logged[0] as string, /http-server\.test\.js:\d+/, 'the log has the stack');
  const bad = await call('POST', '/api/v1/bad-value', admin);
  assert.equal(bad.status, 400);
  assert.match(bad.body.error.message, /^Cannot use 'blockSize' 12/);
  assert.equal(logged.length, 1, 'client mistakes are not logged as failures');
});

test('http server: deeply nested JSON is a 400 naming the limit, not a stack overflow', async () => {
  for (const deep of [
    `{"name":${'['.repeat(20000)}${']'.repeat(20000)}}`,
    `{"a":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`,
    `{"a":${'['.repeat(65)}${']'.repeat(65)}}`,
  ]) {
    const r = await call('POST', '/api/v1/pools', { ...json, ...admin }, deep);
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_json');
    assert.match(r.body.error.message, /deeper than 64 levels/);
  }
  // Brackets inside strings do not count; 64 levels pass.
  assert.equal(
    (await call('POST', '/api/v1/pools', { ...json, ...admin }, `{"s":"${'['.repeat(100)}\\"[","a":${'['.repeat(63)}${']'.repeat(63)}}`)).status,
    201,
  );
});

test('http server: bigint values are exact: numbers up to 2^53 - 1, decimal strings beyond', async () => {
  const r = await call('GET', '/api/v1/pools', {});
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.items, [{ capacity: '4722366482869645213696', small: 65536 }]);
});
