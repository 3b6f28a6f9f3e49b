import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniError } from '../cni/errors.js';
import { dispatch } from './dispatch.js';
import { cniErrorOf as toCniError } from '../cni/cni-error-of.js';
import { goMarshalIndent } from '../cni/go-json.js';

const base = { CNI_CONTAINERID: 'c1', CNI_NETNS: '/var/run/netns/x', CNI_IFNAME: 'eth0', CNI_PATH: '/usr/lib/cni' };
const call = (command: string, conf: unknown, extra: Record<string, string> = {}) =>
  dispatch({ ...base, CNI_COMMAND: command, ...extra }, () => (typeof conf === 'string' ? conf : JSON.stringify(conf)));

async function rejects(p: Promise<unknown>, code: number, msg: string | RegExp, details?: string) {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof CniError, String(e));
    assert.equal(e.code, code);
    if (typeof msg === 'string') assert.equal(e.msg, msg);
    else assert.match(e.msg, msg);
    if (details !== undefined) assert.equal(e.details, details);
    return true;
  });
}

test('VERSION ignores stdin and lists every version, compact with a newline', async () => {
  const out = await dispatch({ CNI_COMMAND: 'VERSION' }, () => {
    throw new Error('stdin must not be read');
  });
  assert.equal(out, '{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}\n');
});

test('version checks: unknown version code 1 with details; CHECK < 0.4.0; GC/STATUS < 1.1.0', async () => {
  const conf = (v: string) => ({ cniVersion: v, name: 'n', ipam: { type: 'podipam', ranges: [[{ subnet: '10.0.0.0/24' }]] } });
  await rejects(
    call('ADD', conf('9.9.9')),
    1,
    'incompatible CNI versions',
    'config is "9.9.9", plugin supports ["0.1.0" "0.2.0" "0.3.0" "0.3.1" "0.4.0" "1.0.0" "1.1.0"]',
  );
  await rejects(call('CHECK', conf('0.3.1')), 1, 'config version does not allow CHECK');
  await rejects(call('CHECK', conf('2.0.0')), 1, 'plugin version does not allow CHECK');
  await rejects(call('CHECK', conf('x.y')), 6, /cniVersion "x.y"/);
  await rejects(call('GC', conf('1.0.0')), 1, 'config version does not allow GC');
  await rejects(call('STATUS', conf('0.4.0')), 1, 'config version does not allow STATUS');
});

test('env and verb errors come before anything is read or written', async () => {
  await rejects(
    dispatch({ CNI_COMMAND: 'ADD' }, () => '{}'),
    4,
    'required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing',
  );
  await rejects(call('FROB', { name: 'n' }), 4, 'unknown CNI_COMMAND: FROB');
  await rejects(call('ADD', { name: 'n' }, { CNI_CONTAINERID: 'a b' }), 4, 'invalid characters in containerID', 'a b');
  await rejects(call('ADD', { name: 'n' }, { CNI_IFNAME: 'a/b' }), 4, 'interface name contains / or : or whitespace characters');
  await rejects(call('ADD', '{"name":'), 6, /^error unmarshall network config/);
  await rejects(call('ADD', { cniVersion: '1.0.0', name: 'n' }), 7, "IPAM config missing 'ipam' key");
  // Only the agent runs the warm pool: outside one (the shim's standalone fallback) it is code 11.
  await rejects(call('ADD', { cniVersion: '1.0.0', name: 'n', ipam: { agent: '/run/a.sock' } }), 11, /the warm pool lives in the podipam agent/);
});

test('ADD, CHECK, DEL and GC through the edge on a temp dataDir', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-edge-'));
  try {
    const conf = { cniVersion: '1.1.0', name: 'edge', ipam: { type: 'podipam', dataDir: dir, ranges: [[{ subnet: '10.5.0.0/29' }]] } };
    const out = await call('ADD', conf);
    assert.equal(JSON.parse(out).ips[0].address, '10.5.0.2/29');
    assert.equal(await call('CHECK', conf), '');
    await call('ADD', conf, { CNI_CONTAINERID: 'c2' });
    await call('GC', { ...conf, 'cni.dev/valid-attachments': [{ containerID: 'c2', ifname: 'eth0' }] });
    assert.deepEqual(readdirSync(join(dir, 'edge')).sort(), ['10.5.0.3', 'last_reserved_ip.0', 'lock']);
    await rejects(call('GC', conf), 7, /cni.dev\/valid-attachments/);
    await rejects(call('CHECK', conf), 102, 'host-local: Failed to find address added by container c1');
    assert.equal(await call('DEL', conf, { CNI_CONTAINERID: 'c2' }), '');
    assert.equal(await call('STATUS', conf), '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('toCniError: CniError kept, errno errors code 5, anything else 999 — message only', () => {
  const e = new CniError(7, 'x');
  assert.equal(toCniError(e), e);
  const io = Object.assign(new Error("EACCES: permission denied, open '/x'"), { code: 'EACCES' });
  assert.equal(toCniError(io).code, 5);
  assert.equal(toCniError(new TypeError('boom')).code, 999);
  assert.equal(toCniError('str').msg, 'str');
  const text = goMarshalIndent(toCniError(new Error('bad <thing>')).toJSON() as Record<string, string | number>);
  assert.equal(text, '{\n    "code": 999,\n    "msg": "bad \\u003cthing\\u003e"\n}');
  assert.ok(!text.includes('at '));
});
