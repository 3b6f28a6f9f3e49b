/**
 * The domain model's rules (src/model) hold the same at every edge: the cluster back end,
 * usePodCidr in the local back end, the service itself and the HTTP API of a running
 * `bin/podipam serve` refuse the node name `Node_A` alike (a Kubernetes node name is a
 * lower-case DNS subdomain), and the API releases a handle of the full 1024 characters the
 * plugin can write. (The API takes no routes; routes: src/plugin/routes.test.ts.)
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { CniError } from '../../src/cni/errors.js';
import type { NetConf } from '../../src/cni/types.js';
import { createClusterBackend } from '../../src/plugin/cluster-backend.js';
import { loadLocalConfig } from '../../src/plugin/local-conf.js';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { cniHandleId, legacyCniHandleId, MAX_HANDLE_LENGTH } from '../../src/model/handle-id.js';
import { api, startServe, type ServeProcess } from './serve-harness.js';

let s: ServeProcess;
before(async () => {
  s = await startServe();
});
after(async () => {
  await s?.stop();
});

const RULE = /invalid node name "Node_A": must be a DNS subdomain \(lower-case letters, digits, '-' and '\.'/;

function netConf(name: string, ipam: Record<string, unknown>): NetConf {
  const raw = { cniVersion: '1.0.0', name, type: 'podipam', ipam: { type: 'podipam', ...ipam } };
  return { cniVersion: '1.0.0', name, type: 'podipam', ipam: raw.ipam, raw };
}

async function cniFails(p: Promise<unknown>, code: number, msg: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof CniError, String(e));
    assert.equal(e.code, code);
    assert.match(e.msg, msg);
    return true;
  });
}

test('Node_A is refused alike by the cluster back end, usePodCidr, the service and the API', async () => {
  // Cluster back end (the plugin's cluster mode): code 7 naming ipam.nodeName and the rule.
  await cniFails(
    createClusterBackend(netConf('net', { datastore: s.datastore, nodeName: 'Node_A', cacheDir: '' })),
    7,
    new RegExp(`^ipam\\.nodeName "Node_A": ${RULE.source}`),
  );
  // usePodCidr (the local back end reading the node's pod CIDR): code 7 naming ipam.nodeName.
  await cniFails(
    loadLocalConfig(netConf('net', { ranges: [[{ subnet: 'usePodCidr' }]], datastore: s.datastore, nodeName: 'Node_A', dataDir: s.dataDir })),
    7,
    new RegExp(`^ipam\\.nodeName: ${RULE.source}`),
  );
  // The service itself.
  const store = await openStore(s.datastore);
  try {
    await assert.rejects(
      new ClusterIpam(store).assign({ node: 'Node_A', handle: 'h1', auto: 'each-family' }),
      (e: unknown) => e instanceof TypeError && RULE.test(e.message),
    );
  } finally {
    await store.close();
  }
  // The API: registering the node and allocating for it.
  const node = await api(s.url, 'POST', '/api/v1/nodes', { name: 'Node_A' });
  assert.equal(node.status, 400, JSON.stringify(node.body));
  assert.match(node.body.error.message, /RFC 1123.*got "Node_A"/);
  const alloc = await api(s.url, 'POST', '/api/v1/allocations', { node: 'Node_A', containerId: 'c1' });
  assert.equal(alloc.status, 400, JSON.stringify(alloc.body));
  assert.match(alloc.body.error.message, /"node".*RFC 1123.*got "Node_A"/);
  // And the lower-case name is accepted everywhere.
  assert.equal((await api(s.url, 'POST', '/api/v1/nodes', { name: 'node-a' })).status, 201);
});

test('the API releases a 1024-character handle the plugin wrote, and refuses a longer one it could not have', async () => {
  const network = 'net';
  const containerId = 'c'.repeat(MAX_HANDLE_LENGTH - cniHandleId(network, '', 'eth0').length);
  const handle = cniHandleId(network, containerId, 'eth0');
  assert.equal(handle.length, MAX_HANDLE_LENGTH);
  // The plugin's cluster mode writes it (ADD under that handle).
  const backend = await createClusterBackend(netConf(network, { datastore: s.datastore, nodeName: 'node-b', cacheDir: '' }));
  const added = await backend.add({
    containerId,
    ifname: 'eth0',
    cniArgs: new Map(),
    conf: netConf(network, { datastore: s.datastore, nodeName: 'node-b', cacheDir: '' }),
  });
  assert.equal(added.ips.length, 2);
  const listed = await api(s.url, 'GET', '/api/v1/allocations?node=node-b');
  assert.equal(listed.status, 200, JSON.stringify(listed.body));
  assert.ok(
    listed.body.items.some((a: { handle: string }) => a.handle === handle),
    'the API lists the handle the plugin wrote',
  );
  // POST /release takes it whole.
  const rel = await api(s.url, 'POST', '/api/v1/release', { handle });
  assert.equal(rel.status, 200, JSON.stringify(rel.body));
  assert.deepEqual([...rel.body.released].sort(), added.ips.map((ip) => ip.address.split('/')[0]).sort());
  // The API builds handles the same way and refuses what the plugin would refuse.
  const tooLong = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-b', network, containerId: `${containerId}x` });
  assert.equal(tooLong.status, 400, JSON.stringify(tooLong.body));
  assert.match(tooLong.body.error.message, /handle of 1025 characters: at most 1024/);
  await cniFails(
    backend.add({
      containerId: `${containerId}x`,
      ifname: 'eth0',
      cniArgs: new Map(),
      conf: netConf(network, { datastore: s.datastore, nodeName: 'node-b', cacheDir: '' }),
    }),
    7,
    /handle of 1025 characters: at most 1024/,
  );
  // A legacy dotted id keeps whatever the interface name held (CNI allows "@", "+", …): releasable too.
  const legacy = await api(s.url, 'POST', '/api/v1/release', { handle: legacyCniHandleId(network, 'c9', 'veth@1+') });
  assert.equal(legacy.status, 200, JSON.stringify(legacy.body));
  assert.deepEqual(legacy.body.released, []);
  for (const bad of ['a/b', 'a b', 'x'.repeat(MAX_HANDLE_LENGTH + 1)]) {
    assert.equal((await api(s.url, 'POST', '/api/v1/release', { handle: bad })).status, 400, bad);
  }
  const exact = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-b', network, containerId });
  assert.equal(exact.status, 201, JSON.stringify(exact.body));
  assert.equal(exact.body.handle, handle);
});
