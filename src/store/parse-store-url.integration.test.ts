import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StoreUrlError } from './errors.js';
import { openStore } from './open-store.js';
import { parseStoreUrl } from './parse-store-url.js';

describe('parseStoreUrl', () => {
  it('reads memory, sqlite and etcd URLs', () => {
    assert.deepEqual(parseStoreUrl('memory:'), { kind: 'memory', name: '' });
    assert.deepEqual(parseStoreUrl('memory:tests'), { kind: 'memory', name: 'tests' });
    assert.deepEqual(parseStoreUrl('sqlite:/var/lib/podipam/x.db'), { kind: 'sqlite', path: '/var/lib/podipam/x.db' });
    assert.deepEqual(parseStoreUrl('sqlite:data/x.db'), { kind: 'sqlite', path: 'data/x.db' });
    assert.deepEqual(parseStoreUrl('sqlite:///abs/x.db'), { kind: 'sqlite', path: '/abs/x.db' });
    assert.deepEqual(parseStoreUrl('SQLITE:./x.db'), { kind: 'sqlite', path: './x.db' });
    assert.deepEqual(parseStoreUrl('etcd://10.0.0.5:2379'), { kind: 'etcd', endpoints: ['10.0.0.5:2379'] });
    assert.deepEqual(parseStoreUrl('etcd://a.example:1,127.0.0.1:2,[::1]:3/'), { kind: 'etcd', endpoints: ['a.example:1', '127.0.0.1:2', '[::1]:3'] });
    assert.deepEqual(parseStoreUrl('etcd://etcd-0'), { kind: 'etcd', endpoints: ['etcd-0:2379'] });
  });

  it('reads etcds URLs with TLS query parameters, and credentials before the hosts', () => {
    assert.deepEqual(parseStoreUrl('etcds://10.0.0.5:2379,10.0.0.6'), { kind: 'etcd', endpoints: ['10.0.0.5:2379', '10.0.0.6:2379'], tls: {} });
    assert.deepEqual(parseStoreUrl('ETCDS://h:1/?ca=/etc/ca.pem&cert=/c.pem&key=/k.pem&servername=etcd.example'), {
      kind: 'etcd',
      endpoints: ['h:1'],
      tls: { ca: '/etc/ca.pem', cert: '/c.pem', key: '/k.pem', servername: 'etcd.example' },
    });
    assert.deepEqual(parseStoreUrl('etcd://root:s3cret@h:1,g:2'), {
      kind: 'etcd',
      endpoints: ['h:1', 'g:2'],
      credentials: { username: 'root', password: 's3cret' },
    });
    // Percent-decoded; the last "@" ends the password, which may hold ":", "@", "/", "?" unencoded.
    assert.deepEqual(parseStoreUrl('etcds://us%40er:p:a@s/s?w%25@h:1?ca=/c%40t.pem'), {
      kind: 'etcd',
      endpoints: ['h:1'],
      tls: { ca: '/c@t.pem' },
      credentials: { username: 'us@er', password: 'p:a@s/s?w%' },
    });
  });

  it('never shows the password of a URL it refuses', () => {
    const cases: [string, RegExp][] = [
      ['etcd://root:hunter2@h:port', /"etcd:\/\/root:\*\*\*@h:port": endpoint "h:port"/],
      ['etcd://root:hunter2%zz@h:1', /"etcd:\/\/root:\*\*\*@h:1": the password is not valid percent-encoding/],
      ['etcd://root:hun?ter2@h:1?ca=/x', /"etcd:\/\/root:\*\*\*@h:1\?ca=\/x": ca given, but etcd:\/\//],
      ['etcds://root:hunter2@h:1?x=1', /unknown query parameter "x"/],
    ];
    for (const [url, reason] of cases) {
      assert.throws(
        () => parseStoreUrl(url),
        (e: unknown) => {
          assert.ok(e instanceof StoreUrlError, `${url}: ${String(e)}`);
          assert.match(e.message, reason);
          assert.ok(!/hunter2|hun\?ter2/.test(e.message + e.url), e.message);
          return true;
        },
      );
    }
  });

  it('rejects malformed URLs with a StoreUrlError naming the URL and the fault', () => {
    const bad: [string, RegExp][] = [
      ['', /no scheme/],
      ['/var/lib/x.db', /no scheme/],
      ['postgres://h/db', /unknown scheme "postgres"/],
      ['sqlite:', /path is empty/],
      ['sqlite://host/x.db', /not a host/],
      ['etcd:', /etcd:\/\/HOST:PORT/],
      ['etcd://', /no etcd endpoint/],
      ['etcd://h:0', /port 0, outside/],
      ['etcd://h:70000', /port 70000/],
      ['etcd://h:2379,', /endpoint ""/],
      ['etcd://user@h:2379', /user "user" without a password/],
      ['etcd://:pw@h:2379', /user name before ":" is empty/],
      ['etcd://u:@h:2379', /user "u" has an empty password/],
      ['etcd://h:2379?ca=/ca.pem', /ca given, but etcd:\/\/ is plain HTTP: write etcds:\/\//],
      ['etcds://h:2379?cafile=/ca.pem', /unknown query parameter "cafile"; known: ca, cert, key, servername/],
      ['etcds://h:2379?ca=/a&ca=/b', /"ca" given twice/],
      ['etcds://h:2379?servername=', /"servername" is empty/],
      ['etcds://', /no etcd endpoint/],
      ['etcds:h', /etcds:\/\/HOST:PORT/],
      ['etcd://h:2379/prefix', /endpoint "h:2379\/prefix"/],
      ['etcd://h:port', /endpoint "h:port"/],
      ['etcd://::1:2379', /endpoint "::1:2379"/],
    ];
    for (const [url, reason] of bad) {
      assert.throws(
        () => parseStoreUrl(url),
        (e: unknown) => {
          assert.ok(e instanceof StoreUrlError, `${url}: ${String(e)}`);
          assert.equal(e.url, url.replace(/:(pw)?@/, ':***@'));
          assert.match(e.message, reason);
          assert.ok(e.message.includes(`"${e.url}"`), e.message);
          return true;
        },
      );
    }
  });
});

describe('openStore', () => {
  it('opens each back end by URL and rejects bad URLs and timeouts', async () => {
    const m = await openStore('memory:');
    assert.equal(m.url, 'memory:');
    const e = await openStore('etcd://127.0.0.1:1', { timeoutMs: 100 });
    assert.equal(e.url, 'etcd://127.0.0.1:1');
    await assert.rejects(openStore('nope:'), StoreUrlError);
    await assert.rejects(openStore('memory:', { timeoutMs: 0 }), RangeError);
  });

  it('loads better-sqlite3 for sqlite: URLs only', async () => {
    const { spawnSync } = await import('node:child_process');
    const probe = (url: string) => {
      const script = `
        const { openStore } = await import(${JSON.stringify(new URL('./open-store.js', import.meta.url).href)});
        const s = await openStore(${JSON.stringify(url)}); await s.close();
        const { createRequire } = await import('node:module');
        const cache = Object.keys(createRequire(import.meta.url).cache);
        console.log(JSON.stringify({ sqlite: cache.some((p) => p.includes('better-sqlite3')) }));`;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', cwd: '/tmp' });
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout) as { sqlite: boolean };
    };
    assert.deepEqual(probe('etcd://127.0.0.1:1'), { sqlite: false });
    const { mkdtempSync, rmSync } = await import('node:fs');
    const dir = mkdtempSync('/tmp/podipam-url-');
    try {
      assert.deepEqual(probe(`sqlite:${dir}/x.db`), { sqlite: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
