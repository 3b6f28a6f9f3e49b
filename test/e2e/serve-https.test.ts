/**
 * `podipam serve --tls-cert FILE --tls-key FILE` (real process, certificates made with openssl
 * by the test): the dashboard and the API over HTTPS verified against the test CA, nothing in
 * plain HTTP on that port, the Host and Origin guards and the install token still applied,
 * the same from $PODIPAM_TLS_CERT / $PODIPAM_TLS_KEY; a key file group or other may read, a
 * key that is not the certificate's, a missing file, or one flag without the other: exit 2
 * before anything is opened, naming the file.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, existsSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SERVER_NAME, makeTestCerts, type TestCerts } from '../helpers/test-certs.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';
import { runCli, startServe, type ServeProcess } from './serve-harness.js';

let tmp: TempDir;
let certs: TestCerts;
before(() => {
  tmp = makeTempDir('serve-https');
  certs = makeTestCerts(tmp.path);
  for (const k of [certs.serverKey, certs.clientKey]) chmodSync(k, 0o600);
});
after(() => tmp?.remove());

interface Raw {
  readonly status: number;
  readonly text: string;
  readonly body: any;
}

/** One HTTPS request to `s` verified against the test CA, with exactly these headers. */
function tlsCall(s: ServeProcess, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Raw> {
  const u = new URL(s.url);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: Number(u.port),
        method,
        path,
        servername: SERVER_NAME,
        ca: readFileSync(certs.caFile),
        headers: { host: `${SERVER_NAME}:${u.port}`, ...headers },
        timeout: 10_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text, body: (res.headers['content-type'] ?? '').includes('json') && text ? JSON.parse(text) : undefined }),
        );
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

async function withHttps(args: string[], env: Record<string, string>, fn: (s: ServeProcess) => Promise<void>): Promise<void> {
  const s = await startServe({ args: ['--no-controller', '--allowed-host', SERVER_NAME, ...args], env });
  try {
    await fn(s);
  } finally {
    await s.stop();
  }
}

test('serve https: dashboard and API over TLS, no plain HTTP, Host/Origin guard and install token applied', { timeout: 60_000 }, () =>
  withHttps(['--tls-cert', certs.serverCert, '--tls-key', certs.serverKey], {}, async (s) => {
    assert.match(s.dashboardUrl, /^https:\/\/127\.0\.0\.1:\d+\/\?token=/);
    const page = await tlsCall(s, 'GET', '/');
    assert.equal(page.status, 200);
    assert.match(page.text, /<html/i);
    const script = /<script src="(\/assets\/app-[A-Za-z0-9]+\.js)">/.exec(page.text);
    assert.ok(script, 'the page names its bundled script');
    const js = await tlsCall(s, 'GET', script[1]!);
    assert.equal(js.status, 200);
    const health = await tlsCall(s, 'GET', '/healthz');
    assert.equal(health.status, 200, health.text);
    const pools = await tlsCall(s, 'GET', '/api/v1/pools');
    assert.equal(pools.status, 200);
    const json = { 'content-type': 'application/json' };
    const token = { authorization: `Bearer ${s.installToken}` };
    const newPool = JSON.stringify({ name: 'tls', cidr: '10.77.0.0/16' });
    assert.equal((await tlsCall(s, 'POST', '/api/v1/pools', json, newPool)).status, 401, 'a write without the install token');
    const evil = await tlsCall(s, 'POST', '/api/v1/pools', { ...json, ...token, origin: 'https://evil.example' }, newPool);
    assert.equal(evil.status, 403);
    assert.equal(evil.body.error.code, 'cross_origin');
    const rebound = await tlsCall(s, 'GET', '/api/v1/pools', { host: `evil.example:${new URL(s.url).port}` });
    assert.equal(rebound.status, 421);
    const own = await tlsCall(s, 'POST', '/api/v1/pools', { ...json, ...token, origin: `https://${SERVER_NAME}:${new URL(s.url).port}` }, newPool);
    assert.equal(own.status, 201, own.text);
    assert.ok((await tlsCall(s, 'GET', '/api/v1/pools')).body.items.some((p: { name: string }) => p.name === 'tls'));
    // A client that does not trust the certificate's CA is refused by the TLS handshake.
    await assert.rejects(
      new Promise((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: Number(new URL(s.url).port),
            path: '/healthz',
            servername: SERVER_NAME,
            ca: readFileSync(certs.otherCaFile),
            timeout: 10_000,
          },
          resolve,
        );
        req.on('error', reject);
        req.end();
      }),
      /certificate/i,
    );
    // Plain HTTP on the TLS port gets no HTTP answer from the API.
    const plain = await new Promise<string>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port: Number(new URL(s.url).port), path: '/api/v1/pools', timeout: 10_000 }, (res) =>
        resolve(`HTTP ${res.statusCode}`),
      );
      req.on('error', (e) => resolve(`error ${e.message}`));
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.end();
    });
    assert.doesNotMatch(plain, /^HTTP 200/, plain);
  }),
);

test('serve https: $PODIPAM_TLS_CERT and $PODIPAM_TLS_KEY do the same as the flags', { timeout: 60_000 }, () =>
  withHttps([], { PODIPAM_TLS_CERT: certs.serverCert, PODIPAM_TLS_KEY: certs.serverKey }, async (s) => {
    assert.match(s.url, /^https:/);
    assert.equal((await tlsCall(s, 'GET', '/healthz')).status, 200);
  }),
);

test('serve https: a readable key, a foreign key, a missing file or half the pair is exit 2 naming the file', { timeout: 90_000 }, async () => {
  const dataDir = join(tmp.path, 'refused');
  const loose = join(tmp.path, 'loose.key');
  copyFileSync(certs.serverKey, loose);
  chmodSync(loose, 0o640);
  const cases: [string[], RegExp][] = [
    [['--tls-cert', certs.serverCert, '--tls-key', loose], new RegExp(`refusing --tls-key ${loose.replace(/\./g, '\\.')}: its mode is 0640.*chmod 600`)],
    [
      ['--tls-cert', certs.serverCert, '--tls-key', certs.clientKey],
      new RegExp(`--tls-key ${certs.clientKey.replace(/\./g, '\\.')} is not the key of --tls-cert`),
    ],
    [['--tls-cert', join(tmp.path, 'nope.crt'), '--tls-key', certs.serverKey], /cannot read --tls-cert .*nope\.crt: ENOENT/],
    [['--tls-cert', certs.serverKey, '--tls-key', certs.serverKey], /--tls-cert .*server\.key is not a PEM X\.509 certificate/],
    [['--tls-cert', certs.serverCert], /HTTPS needs both --tls-cert and --tls-key.*got only --tls-cert/],
    [['--tls-key', certs.serverKey], /HTTPS needs both --tls-cert and --tls-key.*got only --tls-key/],
  ];
  for (const [args, message] of cases) {
    const r = await runCli(['serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, '--gc-interval', '0', '--no-controller', ...args], {}, 30_000);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.doesNotMatch(r.stderr, /^\s+at /m, 'no stack trace');
    assert.doesNotMatch(r.stderr, /BEGIN (EC )?PRIVATE KEY/, 'never the key');
  }
  assert.equal(existsSync(join(dataDir, 'podipam.db')), false, 'nothing was opened');
});
