/**
 * The result cache is libcni's: a result our client caches is the file libcni's cacheAdd writes
 * (same path, same JSON document, byte for byte, spelled out here from libcni/api.go rather than
 * from our encoder), and an attachment that libcni added (plugins run as libcni runs them, its
 * cache file written as libcni writes it) is DELeted by `podipam net del` with the cached
 * result, CNI_ARGS and netns — leaving nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BRIDGE_BIN, PODIPAM_BIN, runPluginSync } from '../helpers/plugin.js';
import { Scratch, requirePrerequisites, sh, testSubnet } from './runtime-harness.js';

/** Go's encoding of a map[string]interface{}: keys sorted, recursively (test-side, independent). */
function sortedJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${sortedJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** A pass-through plugin: prints its prevResult as its result, records it and its CNI_ARGS. */
const PASS =
  'printf \'%s\' "$in" > /dev/null; echo "$CNI_ARGS" > "$(dirname "$0")/../args.$CNI_COMMAND"; [ "$CNI_COMMAND" = ADD ] && printf \'%s\' "$in" | node -e \'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s).prevResult;process.stdout.write(JSON.stringify(r));require("fs").writeFileSync(process.argv[1],JSON.stringify(r))})\' "$(dirname "$0")/../printed.json"; exit 0';

test('a result cached by podipam net add is the file libcni writes (path, mode, bytes)', async () => {
  requirePrerequisites();
  const s = new Scratch('rt-cache');
  try {
    const br = s.bridge(1);
    s.script('pass', PASS);
    const name = `cache-${s.tag}`;
    const conf = `{\n  "cniVersion": "1.0.0",\n  "name": "${name}",\n  "plugins": [\n    {"type": "bridge", "bridge": "${br}", "ipam": {"type": "podipam", "ranges": [[{"subnet": "${testSubnet(241)}"}]], "dataDir": "${s.dataDir}"}},\n    {"type": "pass", "capabilities": {"portMappings": true}}\n  ]\n}\n`;
    writeFileSync(join(s.confDir, '10-cache.conflist'), conf);
    const ns = s.netns(1);
    const id = `k${s.tag}`;
    const o = ['--conf-dir', s.confDir, '--bin-dir', s.binDirs.join(':'), '--cache-dir', s.cacheDir];
    const add = spawnSync(
      PODIPAM_BIN,
      [
        'net',
        'add',
        name,
        '--container',
        id,
        '--netns',
        ns.path,
        '--args',
        'K8S_POD_NAME=web-1;NOTE=web<1>;IgnoreUnknown=1',
        '--cap',
        'portMappings=[{"hostPort":8080,"containerPort":80,"protocol":"tcp"}]',
        ...o,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(add.status, 0, add.stderr);
    assert.equal(readFileSync(join(s.root.path, 'args.ADD'), 'utf8'), 'K8S_POD_NAME=web-1;NOTE=web<1>;IgnoreUnknown=1\n');

    const file = join(s.cacheDir, 'results', `${name}-${id}-eth0`);
    const printed = JSON.parse(readFileSync(join(s.root.path, 'printed.json'), 'utf8'));
    // types100.Result re-marshalled: the empty dns dropped (Result.MarshalJSON), then a Go map.
    if (printed.dns && Object.keys(printed.dns).length === 0) delete printed.dns;
    const expected =
      `{"kind":"cniCacheV1","containerId":"${id}","config":"${Buffer.from(conf).toString('base64')}","ifName":"eth0","networkName":"${name}",` +
      `"netns":"${ns.path}","cniArgs":[["K8S_POD_NAME","web-1"],["NOTE","web\\u003c1\\u003e"],["IgnoreUnknown","1"]],` +
      `"capabilityArgs":{"portMappings":[{"containerPort":80,"hostPort":8080,"protocol":"tcp"}]},"result":${sortedJson(printed)}}`;
    assert.equal(readFileSync(file, 'utf8'), expected);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(s.cacheDir, 'results')).mode & 0o777, 0o700);

    const del = spawnSync(PODIPAM_BIN, ['net', 'del', name, '--container', id, ...o], { encoding: 'utf8' });
    assert.equal(del.status, 0, del.stderr);
    // CNI_ARGS came back from the cache (the del had no --args).
    assert.equal(readFileSync(join(s.root.path, 'args.DEL'), 'utf8'), 'K8S_POD_NAME=web-1;NOTE=web<1>;IgnoreUnknown=1\n');
    assert.deepEqual(s.linksIn(ns.name), []);
    assert.deepEqual(s.reservations(name), []);
    assert.deepEqual(s.cachedFiles(), []);
  } finally {
    await s.cleanup();
  }
});

test('an attachment libcni added (its cache file as libcni writes it) is DELeted by podipam net del, leaving nothing', async () => {
  requirePrerequisites();
  const s = new Scratch('rt-interop');
  try {
    const br = s.bridge(1);
    s.script('pass', PASS);
    const name = `lib-${s.tag}`;
    const bridgeConf = { type: 'bridge', bridge: br, ipam: { type: 'podipam', ranges: [[{ subnet: testSubnet(242) }]], dataDir: s.dataDir } };
    const conf = JSON.stringify({ cniVersion: '1.0.0', name, plugins: [bridgeConf, { type: 'pass' }] });
    writeFileSync(join(s.confDir, '10-lib.conflist'), conf);
    const ns = s.netns(1);
    const id = `l${s.tag}`;
    // libcni's AddNetworkList: each plugin with name/cniVersion injected, prevResult chained.
    const env = { CNI_PATH: s.binDirs.join(':') };
    const r1 = runPluginSync(BRIDGE_BIN, {
      command: 'ADD',
      containerId: id,
      ifname: 'eth0',
      netns: ns.path,
      args: 'IgnoreUnknown=1;K8S_POD_NAME=p',
      env,
      config: { ...bridgeConf, name, cniVersion: '1.0.0' },
    });
    assert.equal(r1.code, 0, r1.stdout);
    const r2 = runPluginSync(join(s.binDir, 'pass'), {
      command: 'ADD',
      containerId: id,
      ifname: 'eth0',
      netns: ns.path,
      args: 'IgnoreUnknown=1;K8S_POD_NAME=p',
      env,
      config: { type: 'pass', name, cniVersion: '1.0.0', prevResult: JSON.parse(r1.stdout) },
    });
    assert.equal(r2.code, 0, r2.stderr);
    const result = JSON.parse(r2.stdout);
    if (result.dns && Object.keys(result.dns).length === 0) delete result.dns;
    mkdirSync(join(s.cacheDir, 'results'), { recursive: true, mode: 0o700 });
    writeFileSync(
      join(s.cacheDir, 'results', `${name}-${id}-eth0`),
      `{"kind":"cniCacheV1","containerId":"${id}","config":"${Buffer.from(conf).toString('base64')}","ifName":"eth0","networkName":"${name}","netns":"${ns.path}","cniArgs":[["IgnoreUnknown","1"],["K8S_POD_NAME","p"]],"result":${sortedJson(result)}}`,
      { mode: 0o600 },
    );
    assert.equal(s.reservations(name).length, 1);

    const list = spawnSync(PODIPAM_BIN, ['net', 'list', '--cache-dir', s.cacheDir, '--json'], { encoding: 'utf8' });
    const rows = JSON.parse(list.stdout);
    assert.deepEqual(
      rows.map((r: { network: string; containerId: string; ifname: string; addresses: string[] }) => [r.network, r.containerId, r.ifname, r.addresses]),
      [[name, id, 'eth0', [result.ips[0].address]]],
    );

    const o = ['--conf-dir', s.confDir, '--bin-dir', s.binDirs.join(':'), '--cache-dir', s.cacheDir];
    const del = spawnSync(PODIPAM_BIN, ['net', 'del', name, '--container', id, ...o], { encoding: 'utf8' });
    assert.equal(del.status, 0, del.stderr);
    const passDel = JSON.parse(readFileSync(join(s.root.path, 'stdin.DEL.pass'), 'utf8'));
    assert.deepEqual(passDel.prevResult.ips, result.ips, 'DEL did not get the cached result as prevResult');
    assert.equal(readFileSync(join(s.root.path, 'args.DEL'), 'utf8'), 'IgnoreUnknown=1;K8S_POD_NAME=p\n');
    assert.deepEqual(s.linksIn(ns.name), []);
    assert.deepEqual(s.portsOf(br), []);
    assert.deepEqual(s.reservations(name), []);
    assert.deepEqual(s.cachedFiles(), []);
  } finally {
    await s.cleanup();
  }
});

test('a legacy cache file (the bare result, older libcni) still feeds DEL its prevResult', async () => {
  requirePrerequisites([]);
  const s = new Scratch('rt-legacy');
  try {
    s.script('rec', 'exit 0');
    const net = s.writeList('10-rec.conflist', { cniVersion: '0.4.0', name: `old-${s.tag}`, plugins: [{ type: 'rec' }] });
    mkdirSync(join(s.cacheDir, 'results'), { recursive: true });
    writeFileSync(join(s.cacheDir, 'results', `old-${s.tag}-c1-eth0`), '{"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.9.9.9/24"}],"dns":{}}');
    await s.runtime().del(net, { containerId: 'c1', netns: '', ifname: 'eth0' });
    const stdin = JSON.parse(sh('cat', [join(s.root.path, 'stdin.DEL.rec')]).out);
    assert.deepEqual(stdin.prevResult, { cniVersion: '0.4.0', ips: [{ version: '4', address: '10.9.9.9/24' }], dns: {} });
    assert.deepEqual(s.cachedFiles(), []);
  } finally {
    await s.cleanup();
  }
});
