import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResultCache, encodeCacheFile } from './result-cache.js';
import { parseResult } from './go-result.js';

// What libcni's cacheAdd writes for this attachment, spelled out from libcni/api.go: cachedInfo's
// fields in declaration order, []byte as standard base64, netns/cniArgs/capabilityArgs/result
// omitempty, result and capabilityArgs re-marshalled as map[string]interface{} (sorted keys),
// Go's HTML-safe escaping, compact, no newline.
const CONFIG = '{"cniVersion":"1.0.0","name":"net1","plugins":[{"type":"bridge"}]}\n';
const EXPECTED =
  '{"kind":"cniCacheV1","containerId":"c1","config":"' +
  Buffer.from(CONFIG).toString('base64') +
  '","ifName":"eth0","networkName":"net1","netns":"/var/run/netns/x","cniArgs":[["K8S_POD_NAME","p\\u003c1\\u003e"],["IgnoreUnknown","1"]],' +
  '"capabilityArgs":{"ips":["10.1.0.9/24"],"portMappings":[{"containerPort":80,"hostPort":8080,"protocol":"tcp"}]},' +
  '"result":{"cniVersion":"1.0.0","interfaces":[{"mac":"aa:bb:cc:dd:ee:ff","name":"eth0","sandbox":"/var/run/netns/x"}],' +
  '"ips":[{"address":"10.1.0.9/24","gateway":"10.1.0.1","interface":0}],"routes":[{"dst":"0.0.0.0/0"}]}}';

// A plugin's stdout as a Go plugin prints it (struct order, indented, empty dns).
const STDOUT = JSON.stringify(
  {
    cniVersion: '1.0.0',
    interfaces: [{ name: 'eth0', mac: 'aa:bb:cc:dd:ee:ff', sandbox: '/var/run/netns/x' }],
    ips: [{ interface: 0, address: '10.1.0.9/24', gateway: '10.1.0.1' }],
    routes: [{ dst: '0.0.0.0/0' }],
    dns: {},
  },
  null,
  4,
);

/** The value as JSON would carry it (undefined members gone). */
const plain = (v: unknown): any => JSON.parse(JSON.stringify(v));

const ENTRY = {
  containerId: 'c1',
  network: 'net1',
  ifname: 'eth0',
  config: Buffer.from(CONFIG),
  netns: '/var/run/netns/x',
  cniArgs: [
    ['K8S_POD_NAME', 'p<1>'],
    ['IgnoreUnknown', '1'],
  ] as [string, string][],
  capabilityArgs: { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }], ips: ['10.1.0.9/24'] },
  result: parseResult(STDOUT, '1.0.0'),
};

test('encodeCacheFile writes the bytes libcni writes', () => {
  assert.equal(encodeCacheFile(ENTRY), EXPECTED);
});

test('encodeCacheFile leaves out empty netns, cniArgs and capabilityArgs (omitempty)', () => {
  const s = encodeCacheFile({ ...ENTRY, netns: '', cniArgs: [], capabilityArgs: {} });
  assert.equal(
    s,
    EXPECTED.replace(',"netns":"/var/run/netns/x"', '')
      .replace(/,"cniArgs":.*?\]\],/, ',')
      .replace(/"capabilityArgs":\{.*?\}\]\},/, ''),
  );
});

test('ResultCache writes <dir>/results/<net>-<id>-<ifname>, 0600 in a 0700 dir, and reads it back', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-cache-'));
  try {
    const c = new ResultCache(dir);
    c.write(ENTRY);
    const file = join(dir, 'results', 'net1-c1-eth0');
    assert.equal(readFileSync(file, 'utf8'), EXPECTED);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, 'results')).mode & 0o777, 0o700);
    const got = c.get('net1', 'c1', 'eth0')!;
    assert.deepEqual(got.cniArgs, ENTRY.cniArgs);
    assert.equal(got.config.toString(), CONFIG);
    // Converted to the config's version on the way out (GetAsVersion), 1.0.0 -> 0.4.0 adds "version".
    assert.deepEqual(plain(c.result('net1', '0.4.0', 'c1', 'eth0')).ips, [{ version: '4', interface: 0, address: '10.1.0.9/24', gateway: '10.1.0.1' }]);
    c.delete('net1', 'c1', 'eth0');
    c.delete('net1', 'c1', 'eth0');
    assert.equal(c.get('net1', 'c1', 'eth0'), undefined);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('ResultCache reads libcni legacy files (the bare result) and lists only cniCacheV1 entries', () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-cache-'));
  try {
    const c = new ResultCache(dir);
    mkdirSync(join(dir, 'results'), { recursive: true });
    writeFileSync(join(dir, 'results', 'old-c9-eth0'), '{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.9.0.2/24"}],"dns":{}}');
    writeFileSync(join(dir, 'results', 'junk-c9-eth0'), 'not json');
    c.write(ENTRY);
    c.write({ ...ENTRY, containerId: 'c10', ifname: 'eth1' });
    assert.deepEqual(plain(c.result('old', '1.0.0', 'c9', 'eth0')).ips, [{ address: '10.9.0.2/24' }]);
    assert.deepEqual(
      c.list().map((a) => `${a.network}/${a.containerId}/${a.ifname}`),
      ['net1/c1/eth0', 'net1/c10/eth1'],
    );
    assert.deepEqual(
      c.list('c1').map((a) => a.containerId),
      ['c1'],
    );
    assert.deepEqual(c.list('c9'), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('parseResult: fills a missing cniVersion from the config and rejects garbage', () => {
  assert.equal(parseResult('{"ips":[{"address":"10.0.0.2/24"}]}', '1.0.0').cniVersion, '1.0.0');
  assert.throws(() => parseResult('hello', '1.0.0'), /not JSON/);
  assert.throws(() => parseResult('{"cniVersion":"7.0.0"}', '1.0.0'), /unsupported CNI result version "7.0.0"/);
  assert.throws(() => parseResult('{"cniVersion":"1.0.0","ips":[{"gateway":"10.0.0.1"}]}', '1.0.0'), /"address" missing/);
});
