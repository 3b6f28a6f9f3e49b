import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listNetworks, loadNetwork } from './load-network.js';
import { ConfigError, NetworkNotFoundError } from './errors.js';

function confDir(files: Record<string, string | object>): { dir: string; done: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-confdir-'));
  for (const [name, body] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), typeof body === 'string' ? body : JSON.stringify(body));
  }
  return { dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

const list = (name: string, type: string, extra: object = {}) => ({ cniVersion: '1.0.0', name, plugins: [{ type }], ...extra });

test('loadNetwork takes the first .conflist in lexical order whose name matches', () => {
  const d = confDir({
    '20-b.conflist': list('net', 'second'),
    '10-a.conflist': list('other', 'x'),
    '15-a.conflist': list('net', 'first'),
    '05.conf': { cniVersion: '0.4.0', name: 'net', type: 'legacy' },
  });
  try {
    const l = loadNetwork(d.dir, 'net');
    assert.equal(l.plugins[0]!.type, 'first');
    assert.equal(l.file, join(d.dir, '15-a.conflist'));
    assert.equal(l.bytes.toString(), JSON.stringify(list('net', 'first')));
  } finally {
    d.done();
  }
});

test('loadNetwork up-converts a legacy .conf/.json as libcni does (keys sorted, compact)', () => {
  const legacy = '{"type":"bridge","name":"old","cniVersion":"0.4.0","ipam":{"type":"host-local","subnet":"10.1.0.0/24"}, "zz":"<&>"}';
  // 05.conf names no network: libcni skips it (no match) rather than failing.
  const d = confDir({ 'a.conflist': list('new', 'x'), '05.conf': { type: 'nameless' }, '10.json': { name: 'nope', type: 't' }, '20.conf': legacy });
  try {
    const l = loadNetwork(d.dir, 'old');
    assert.equal(l.cniVersion, '0.4.0');
    assert.equal(l.plugins.length, 1);
    // ConfListFromConf: json.Marshal(map{name, cniVersion, plugins: [rawConfig]}), Go's key order and escaping.
    assert.equal(
      l.bytes.toString(),
      '{"cniVersion":"0.4.0","name":"old","plugins":[{"cniVersion":"0.4.0","ipam":{"subnet":"10.1.0.0/24","type":"host-local"},"name":"old","type":"bridge","zz":"\\u003c\\u0026\\u003e"}]}',
    );
  } finally {
    d.done();
  }
});

test('loadNetwork appends <dir>/<name>/*.conf plugins unless loadOnlyInlinedPlugins', () => {
  const d = confDir({
    'a.conflist': list('n1', 'inline'),
    'b.conflist': list('n2', 'inline', { loadOnlyInlinedPlugins: true }),
    'n1/1.conf': { type: 'extra' },
    'n2/1.conf': { type: 'extra' },
  });
  try {
    assert.deepEqual(
      loadNetwork(d.dir, 'n1').plugins.map((p) => p.type),
      ['inline', 'extra'],
    );
    assert.deepEqual(
      loadNetwork(d.dir, 'n2').plugins.map((p) => p.type),
      ['inline'],
    );
  } finally {
    d.done();
  }
});

test('loadNetwork: cniVersions picks the highest version we implement', () => {
  const d = confDir({ 'a.conflist': { name: 'v', cniVersion: '0.4.0', cniVersions: ['1.0.0', '9.9.9', '0.3.1'], plugins: [{ type: 'x' }] } });
  try {
    assert.equal(loadNetwork(d.dir, 'v').cniVersion, '1.0.0');
  } finally {
    d.done();
  }
});

test('loadNetwork: a missing network is NetworkNotFoundError naming the dir and the network', () => {
  const d = confDir({ 'a.conflist': list('here', 'x') });
  try {
    assert.throws(
      () => loadNetwork(d.dir, 'absent'),
      (e: unknown) => e instanceof NetworkNotFoundError && !e.noConfigs && e.message === `no net configuration with name "absent" in ${d.dir}`,
    );
    assert.throws(
      () => loadNetwork(join(d.dir, 'nowhere'), 'absent'),
      (e: unknown) => e instanceof NetworkNotFoundError && e.noConfigs && /no net configurations found/.test(e.message),
    );
  } finally {
    d.done();
  }
});

test('loadNetwork: invalid and unreadable configs are ConfigError naming the file and the field', () => {
  const cases: [string | object, string, RegExp][] = [
    ['{"name": "x", "plugins": [', '', /invalid JSON/],
    [{ plugins: [{ type: 'x' }] }, 'name', /missing/],
    [{ name: 'x', plugins: [{ type: 'a' }, { ipam: {} }] }, 'plugins[1].type', /missing 'type'/],
    [{ name: 'x', plugins: [{ type: 7 }] }, 'plugins[0].type', /must be a string, got 7/],
    [{ name: 'x', plugins: [] }, 'plugins', /no plugins in list/],
    [{ name: 'x', plugins: {} }, 'plugins', /must be an array/],
    [{ name: 'x', cniVersion: 1, plugins: [{ type: 'a' }] }, 'cniVersion', /must be a string/],
    [{ name: 'x', cniVersion: '1.x', plugins: [{ type: 'a' }] }, 'cniVersion', /invalid version "1.x"/],
    [{ name: 'x', disableCheck: 'maybe', plugins: [{ type: 'a' }] }, 'disableCheck', /true or false/],
    [{ name: 'bad name', plugins: [{ type: 'a' }] }, 'name', /invalid network name/],
    [{ name: 'x', plugins: [{ type: 'a', capabilities: { portMappings: 'yes' } }] }, 'plugins[0].capabilities', /object of booleans/],
  ];
  for (const [body, field, why] of cases) {
    const d = confDir({ '10-bad.conflist': body });
    try {
      assert.throws(
        () => loadNetwork(d.dir, 'x'),
        (e: unknown) =>
          e instanceof ConfigError &&
          e.file === join(d.dir, '10-bad.conflist') &&
          e.field === field &&
          why.test(e.message) &&
          e.message.startsWith(join(d.dir, '10-bad.conflist')),
        `${JSON.stringify(body)} → ${field}`,
      );
    } finally {
      d.done();
    }
  }
  const d = confDir({});
  try {
    symlinkSync('/nonexistent/podipam', join(d.dir, '00.conflist'));
    assert.throws(
      () => loadNetwork(d.dir, 'x'),
      (e: unknown) => e instanceof ConfigError && e.file === join(d.dir, '00.conflist') && /cannot read/.test(e.message),
    );
  } finally {
    d.done();
  }
});

test('listNetworks: each name once, the file that would win', () => {
  const d = confDir({
    'b.conflist': list('one', 'b'),
    'a.conflist': list('one', 'a'),
    'c.conflist': list('two', 'c'),
    'z.conf': { name: 'three', type: 'z' },
    'y.conf': { name: 'one', type: 'y' },
  });
  try {
    assert.deepEqual(
      listNetworks(d.dir).map((l) => `${l.name}:${l.plugins[0]!.type}`),
      ['one:a', 'two:c', 'three:z'],
    );
  } finally {
    d.done();
  }
});
