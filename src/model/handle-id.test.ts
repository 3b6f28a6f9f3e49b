import { test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../store/index.js';
import { HANDLE } from '../server/http/validate.js';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';
import { cniHandleId, HANDLE_PATTERN, legacyCniHandleId, MAX_HANDLE_LENGTH, parseCniHandleId } from './handle-id.js';
import { legacyHandleOf, legacyRecordMatches } from '../cluster/records/legacy-handle.js';
import { checkHandle } from './handle-id.js';
import { formatAddr } from '../ip/index.js';
import { mulberry32 } from '../util/mulberry32.js';

test('handle ids: attachments whose dotted ids collide get different, readable ids', () => {
  assert.equal(cniHandleId('net.a', 'c1', 'eth0'), 'net.a:c1:eth0');
  assert.equal(cniHandleId('net', 'a.c1', 'eth0'), 'net:a.c1:eth0');
  assert.equal(cniHandleId('net', 'c1', 'a.eth0'), 'net:c1:a.eth0');
  assert.equal(cniHandleId('k8s-pod-network', '0123abcd_x', 'eth0.100'), 'k8s-pod-network:0123abcd_x:eth0.100');
  // Interface names may hold almost anything but "/", ":" and spaces: escaped per UTF-8 byte.
  assert.equal(cniHandleId('net', 'c1', 'é%@'), 'net:c1:%C3%A9%25%40');
  assert.equal(legacyCniHandleId('net.a', 'c1', 'eth0'), legacyCniHandleId('net', 'a.c1', 'eth0'));
});

test('handle ids are injective, and the server API accepts every id the plugin writes', () => {
  const rnd = mulberry32(8);
  const alphabet = ['a', 'b', '.', '-', '_', ':', '%', '1', 'é', '@', '%41', 'A'];
  const part = (first: boolean) => {
    const n = 1 + Math.floor(rnd() * 4);
    let s = first ? 'n' : '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(rnd() * alphabet.length)];
    return s;
  };
  const seen = new Map<string, string>();
  for (let i = 0; i < 5000; i++) {
    const triple = [part(true), part(false), part(false)] as const;
    const id = cniHandleId(...triple);
    const key = JSON.stringify(triple);
    const before = seen.get(id);
    assert.ok(before === undefined || before === key, `${key} and ${before} both give ${id}`);
    seen.set(id, key);
    assert.match(id, HANDLE, id);
    checkHandle('handle', id);
  }
  assert.equal(HANDLE, HANDLE_PATTERN);
  const longest = cniHandleId('n'.repeat(MAX_HANDLE_LENGTH - 7), 'c', 'eth0');
  assert.equal(longest.length, MAX_HANDLE_LENGTH);
  assert.match(longest, HANDLE);
  assert.doesNotMatch(longest + 'x', HANDLE);
  // Old dotted ids stay accepted (records written before the change).
  assert.match('k8s-pod-network.0123abcd.eth0', HANDLE);
});

test('legacy records: only the attachment the record names owns it', () => {
  const rec = (attrs: object) => ({ node: 'n', blocks: new Map(), ...attrs });
  const a = { network: 'net', containerId: 'a.c1', ifname: 'eth0' };
  const b = { network: 'net.a', containerId: 'c1', ifname: 'eth0' };
  assert.equal(legacyRecordMatches(rec(b), b), true);
  assert.equal(legacyRecordMatches(rec(b), a), false);
  // No container named: only a dotted id that splits one way.
  assert.equal(legacyRecordMatches(rec({}), a), false);
  assert.equal(legacyRecordMatches(rec({}), { network: 'net', containerId: 'c1', ifname: 'eth0' }), true);
  assert.equal(legacyRecordMatches(rec({ network: 'other' }), { network: 'net', containerId: 'c1', ifname: 'eth0' }), false);
});

test('ClusterIpam: net.a + c1 and net + a.c1 hold different addresses; releasing one keeps the other', async () => {
  const store = await openStore('memory:');
  try {
    const ipam = new ClusterIpam(store);
    await ipam.createPool({ name: 'v4', cidr: '10.70.0.0/24', blockSize: 28 });
    const one = { network: 'net.a', containerId: 'c1', ifname: 'eth0' };
    const two = { network: 'net', containerId: 'a.c1', ifname: 'eth0' };
    const idOf = (x: typeof one) => cniHandleId(x.network, x.containerId, x.ifname);
    const [a1] = await ipam.assign({ node: 'n1', handle: idOf(one), auto: { 4: 1 }, attrs: one });
    const [a2] = await ipam.assign({ node: 'n1', handle: idOf(two), auto: { 4: 1 }, attrs: two });
    assert.notEqual(formatAddr(a1!.addr), formatAddr(a2!.addr));
    const released = await ipam.releaseHandle(idOf(two), 'n1');
    assert.deepEqual(
      released.map((r) => formatAddr(r.addr)),
      [formatAddr(a2!.addr)],
    );
    assert.deepEqual(
      (await ipam.addressesOf(idOf(one)))?.map((x) => formatAddr(x.addr)),
      [formatAddr(a1!.addr)],
    );

    // A record under the old dotted id is found for its own attachment only.
    await ipam.assign({ node: 'n1', handle: legacyCniHandleId(one.network, one.containerId, one.ifname), auto: { 4: 1 }, attrs: one });
    assert.equal(await legacyHandleOf(store, one), 'net.a.c1.eth0');
    assert.equal(await legacyHandleOf(store, two), undefined);
  } finally {
    await store.close();
  }
});

test('parseCniHandleId gives back the parts of exactly the ids cniHandleId writes', () => {
  for (const [n, c, i] of [
    ['net', 'ab'.repeat(32), 'eth0'],
    ['n:1%', 'c/2', 'e th'],
    ['ü', 'c', 'net1'],
  ] as const) {
    assert.deepEqual(parseCniHandleId(cniHandleId(n, c, i)), { network: n, containerId: c, ifname: i });
  }
  // Not what cniHandleId writes: a legacy dotted id, two or four parts, an escape it would not
  // write (of a safe character, lower-case hex), a "%" that is no escape.
  for (const h of ['net.c1.eth0', 'net:c1', 'a:b:c:d', 'net:%41:eth0', 'n%3a1:c:e', 'net:%zz:eth0', 'net:%E2:eth0']) {
    assert.equal(parseCniHandleId(h), undefined, h);
  }
});
