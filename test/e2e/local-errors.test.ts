/**
 * Bad input through the real binary: every case must print the CNI error JSON on stdout with a
 * spec code and a message naming the field and value, exit non-zero, write nothing on stderr
 * (no stack trace), and write nothing outside the network's own directory.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN, type PluginCall, runPluginSync } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';

interface BadCase {
  readonly name: string;
  readonly call: (dataDir: string) => PluginCall;
  readonly code: number;
  readonly msg: RegExp;
  /** Entries the data directory may hold afterwards (default: none at all). */
  readonly leaves?: readonly string[];
  /** What the network directory then holds (host-local's bookkeeping only). */
  readonly netFiles?: readonly string[];
}

const ipam = (dataDir: string, extra: Record<string, unknown> = {}) => ({ type: 'podipam', dataDir, ranges: [[{ subnet: '10.50.0.0/24' }]], ...extra });
const conf = (dataDir: string, extra: Record<string, unknown> = {}, top: Record<string, unknown> = {}) => ({
  cniVersion: '1.0.0',
  name: 'errnet',
  ipam: ipam(dataDir, extra),
  ...top,
});
const add = (config: unknown, more: Partial<PluginCall> = {}): PluginCall => ({ command: 'ADD', containerId: 'c1', ifname: 'eth0', config, ...more });

const CASES: readonly BadCase[] = [
  { name: 'malformed JSON', call: () => add('{"cniVersion": "1.0.0", "name": "errnet", '), code: 6, msg: /^error unmarshall network config: / },
  { name: 'JSON array', call: () => add('[1]'), code: 6, msg: /expected a JSON object, got array/ },
  { name: 'missing name', call: (d) => add({ cniVersion: '1.0.0', ipam: ipam(d) }), code: 7, msg: /^missing network name$/ },
  { name: 'name escaping with ../', call: (d) => add({ ...conf(d), name: '../../etc' }), code: 7, msg: /invalid characters found in network name/ },
  { name: 'name "."', call: (d) => add({ ...conf(d), name: '.' }), code: 7, msg: /invalid characters found in network name/ },
  { name: 'relative dataDir', call: () => add(conf('../escape')), code: 7, msg: /ipam.dataDir: "..\/escape" must be an absolute path/ },
  { name: 'ill-typed dataDir', call: (d) => add(conf(d, { dataDir: ['x'] })), code: 7, msg: /ipam.dataDir: must be a string, got array/ },
  { name: 'missing ipam', call: () => add({ cniVersion: '1.0.0', name: 'errnet' }), code: 7, msg: /IPAM config missing 'ipam' key/ },
  { name: 'ipam not an object', call: () => add({ cniVersion: '1.0.0', name: 'errnet', ipam: [] }), code: 7, msg: /^ipam: must be an object, got array/ },
  { name: 'no ranges', call: (d) => add(conf(d, { ranges: undefined })), code: 7, msg: /^no IP ranges specified$/ },
  { name: 'ill-typed ranges', call: (d) => add(conf(d, { ranges: { subnet: '10.0.0.0/8' } })), code: 7, msg: /^ipam.ranges: must be an array, got object/ },
  {
    name: 'bad CIDR',
    call: (d) => add(conf(d, { ranges: [[{ subnet: '10.50.0.0/33' }]] })),
    code: 7,
    msg: /ipam.ranges\[0\]\[0\].subnet: invalid CIDR address "10.50.0.0\/33"/,
  },
  { name: 'host bits', call: (d) => add(conf(d, { ranges: [[{ subnet: '10.50.0.7/24' }]] })), code: 7, msg: /network address is 10.50.0.0/ },
  {
    name: 'range outside subnet',
    call: (d) => add(conf(d, { ranges: [[{ subnet: '10.50.0.0/24', rangeEnd: '10.51.0.9' }]] })),
    code: 7,
    msg: /RangeEnd 10.51.0.9 not in network 10.50.0.0\/24/,
  },
  {
    name: 'overlapping ranges',
    call: (d) => add(conf(d, { ranges: [[{ subnet: '10.50.0.0/24' }], [{ subnet: '10.50.0.128/25' }]] })),
    code: 7,
    msg: /range set 0 overlaps with 1/,
  },
  {
    name: 'bad gateway',
    call: (d) => add(conf(d, { ranges: [[{ subnet: '10.50.0.0/24', gateway: '10.50.0.300' }]] })),
    code: 7,
    msg: /ipam.ranges\[0\]\[0\].gateway: invalid IP address "10.50.0.300"/,
  },
  { name: 'bad route', call: (d) => add(conf(d, { routes: [{ dst: 'default' }] })), code: 7, msg: /ipam.routes\[0\].dst: invalid CIDR address "default"/ },
  { name: 'unknown cniVersion', call: (d) => add({ ...conf(d), cniVersion: '0.5.0' }), code: 1, msg: /^incompatible CNI versions$/ },
  { name: 'ill-typed cniVersion', call: (d) => add({ ...conf(d), cniVersion: 1 }), code: 6, msg: /cniVersion/ },
  { name: 'unknown verb', call: (d) => ({ ...add(conf(d)), command: 'ATTACH' }), code: 4, msg: /^unknown CNI_COMMAND: ATTACH$/ },
  {
    name: 'missing env',
    call: (d) => add(conf(d), { env: { CNI_CONTAINERID: undefined, CNI_PATH: undefined } }),
    code: 4,
    msg: /^required env variables \[CNI_CONTAINERID,CNI_PATH\] missing$/,
  },
  { name: 'bad ifname', call: (d) => add(conf(d), { ifname: 'eth0:1' }), code: 4, msg: /interface name contains/ },
  { name: 'bad CNI_ARGS pair', call: (d) => add(conf(d), { args: 'IP' }), code: 4, msg: /^ARGS: invalid pair "IP"$/ },
  { name: 'unknown CNI_ARGS', call: (d) => add(conf(d), { args: 'FOO=bar' }), code: 4, msg: /^ARGS: unknown args \["FOO=bar"\]$/ },
  {
    name: 'bad runtimeConfig.ips',
    call: (d) => add(conf(d, {}, { runtimeConfig: { ips: ['10.50.0.5/99'] } })),
    code: 7,
    msg: /runtimeConfig.ips\[0\]: invalid IP address "10.50.0.5\/99"/,
  },
  {
    name: 'CHECK below 0.4.0',
    call: (d) => ({ ...add({ ...conf(d), cniVersion: '0.3.1' }), command: 'CHECK' }),
    code: 1,
    msg: /config version does not allow CHECK/,
  },
  {
    name: 'usePodCidr without datastore',
    call: (d) => add(conf(d, { ranges: [[{ subnet: 'usePodCidr' }]] })),
    code: 7,
    msg: /usePodCidr needs datastore and nodeName/,
  },
  {
    name: 'requested IP outside every range',
    call: (d) => add(conf(d), { args: 'IgnoreUnknown=1;K8S_POD_NAME=x;IP=192.0.2.1' }),
    code: 101,
    msg: /^failed to allocate all requested IPs: 192.0.2.1$/,
    leaves: ['errnet'],
    // host-local allocates the set's address before noticing the leftover request, then undoes
    // it; the round-robin hint keeps its move (identical on disk).
    netFiles: ['last_reserved_ip.0', 'lock'],
  },
  {
    name: 'requested IP is the gateway',
    call: (d) => add(conf(d), { args: 'IP=10.50.0.1' }),
    code: 101,
    msg: /requested ip 10.50.0.1 is subnet's gateway/,
    leaves: ['errnet'],
    netFiles: ['lock'],
  },
];

test('bad input: CNI error JSON, right code, named field, no stack, nothing written outside', () =>
  withTempDir('errors', async (root) => {
    for (const c of CASES) {
      const dataDir = join(root, c.name.replace(/\W+/g, '-'), 'data');
      mkdirSync(dataDir, { recursive: true });
      const r = runPluginSync(PODIPAM_BIN, c.call(dataDir));
      assert.equal(r.code, 1, `${c.name}: exit ${r.code}, stdout ${r.stdout}`);
      assert.equal(r.stderr, '', `${c.name}: stderr ${r.stderr}`);
      const e = JSON.parse(r.stdout) as { code: number; msg: string };
      assert.equal(e.code, c.code, `${c.name}: ${r.stdout}`);
      assert.match(e.msg, c.msg, c.name);
      assert.deepEqual(readdirSync(join(dataDir, '..')), ['data'], `${c.name}: wrote next to the data directory`);
      assert.deepEqual(readdirSync(dataDir), [...(c.leaves ?? [])], `${c.name}: data directory`);
      if (c.netFiles) assert.deepEqual(readdirSync(join(dataDir, 'errnet')).sort(), c.netFiles, c.name);
    }
  }));

test('garbage in the store: junk last_reserved_ip, empty and foreign address files, stray entries', () =>
  withTempDir('garbage', (dataDir) => {
    const dir = join(dataDir, 'errnet');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'last_reserved_ip.0'), '\u0000not an address\n');
    writeFileSync(join(dir, '10.50.0.2'), ''); // e.g. left by a host-local killed mid-write
    mkdirSync(join(dir, '10.50.0.3')); // a directory where a file should be
    writeFileSync(join(dir, '10.50.0.4'), 'someone-else\r\neth9'); // held by an attachment nobody lists
    writeFileSync(join(dir, 'last_reserved_ip.x'), 'x');
    const r = runPluginSync(PODIPAM_BIN, add(conf(dataDir)));
    assert.equal(r.code, 0, r.stdout);
    assert.equal(JSON.parse(r.stdout).ips[0].address, '10.50.0.5/24'); // none of the occupied names is reused
    const del = runPluginSync(PODIPAM_BIN, { ...add(conf(dataDir)), command: 'DEL' });
    assert.equal(del.code, 0, del.stdout);
    assert.deepEqual(readdirSync(dir).sort(), ['10.50.0.2', '10.50.0.3', '10.50.0.4', 'last_reserved_ip.0', 'last_reserved_ip.x', 'lock']);
    // GC removes address files nobody valid holds (the empty and the foreign one); it leaves
    // directories, bookkeeping and names that are not addresses.
    const gc = runPluginSync(PODIPAM_BIN, { command: 'GC', config: { ...conf(dataDir), cniVersion: '1.1.0', 'cni.dev/valid-attachments': [] } });
    assert.equal(gc.code, 0, gc.stdout);
    assert.deepEqual(readdirSync(dir).sort(), ['10.50.0.3', 'last_reserved_ip.0', 'last_reserved_ip.x', 'lock']);
  }));
