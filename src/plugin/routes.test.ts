/**
 * Routes are normalised one way (src/model/route.ts) whichever back end serves the network:
 * canonical dst (host bits kept) and gw, the CNI 1.1.0 integer keys (mtu, table, …) kept and
 * printed from 1.1.0 on, other keys dropped — through the whole plugin path (dispatch).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dispatch } from './dispatch.js';
import { CniError } from '../cni/errors.js';
import { openStore } from '../store/index.js';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';

const dir = mkdtempSync(join(tmpdir(), 'podipam-routes-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const routesIn = [
  { dst: '10.1.2.3/8', gw: '10.0.0.1', mtu: 1400, table: 100, foo: 1 },
  { dst: '0:0::0/0', gw: 'FD00::1', advmss: 1300, priority: 5, scope: 253 },
];
const routesOut = [
  { dst: '10.1.2.3/8', gw: '10.0.0.1', mtu: 1400, table: 100 },
  { dst: '::/0', gw: 'fd00::1', advmss: 1300, priority: 5, scope: 253 },
];

async function add(version: string, ipam: Record<string, unknown>, containerId: string): Promise<{ routes?: unknown }> {
  const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: containerId, CNI_NETNS: '/var/run/netns/x', CNI_IFNAME: 'eth0', CNI_PATH: '/usr/lib/cni' };
  const out = await dispatch(env, () =>
    JSON.stringify({ cniVersion: version, name: 'routes-net', type: 'podipam', ipam: { type: 'podipam', routes: routesIn, ...ipam } }),
  );
  return JSON.parse(out) as { routes?: unknown };
}

let seq = 0;
async function clusterIpam(dualStack = true): Promise<Record<string, unknown>> {
  const url = `memory:routes-test-${++seq}`;
  const s = await openStore(url);
  await new ClusterIpam(s).createPool({ name: 'v4', cidr: '10.60.0.0/16' });
  if (dualStack) await new ClusterIpam(s).createPool({ name: 'v6', cidr: 'fd00:60::/64' });
  return { datastore: url, nodeName: 'node-a', cacheDir: '' };
}

test("routes with mtu/table/… come out the same from the local and the cluster back end (the cluster's of the families the pod got)", async () => {
  const local = { ranges: [[{ subnet: '10.0.0.0/24' }]], dataDir: join(dir, 'local') };
  const cluster = await clusterIpam();
  assert.deepEqual((await add('1.1.0', local, 'l1')).routes, routesOut);
  assert.deepEqual((await add('1.1.0', cluster, 'c1')).routes, routesOut);
  // Before 1.1.0 only dst and gw are printed, by both.
  const plain = routesOut.map((r) => ({ dst: r.dst, gw: r.gw }));
  assert.deepEqual((await add('1.0.0', local, 'l2')).routes, plain);
  assert.deepEqual((await add('1.0.0', cluster, 'c2')).routes, plain);
  // The cluster back end's families come from its pools: a pod with no IPv6 address gets no
  // IPv6 route (ptp refuses a route of a family the pod has no address of).
  assert.deepEqual((await add('1.1.0', await clusterIpam(false), 'c3')).routes, routesOut.slice(0, 1));
});

test('a route integer key that is not an integer is refused (code 7) by both back ends, naming the field', async () => {
  const bad = [{ dst: '0.0.0.0/0', table: 'main' }];
  const local = { ranges: [[{ subnet: '10.0.0.0/24' }]], dataDir: join(dir, 'local2'), routes: bad };
  const cluster = { ...(await clusterIpam()), routes: bad };
  for (const ipam of [local, cluster]) {
    await assert.rejects(add('1.1.0', ipam, 'x1'), (e: unknown) => {
      assert.ok(e instanceof CniError, String(e));
      assert.equal(e.code, 7);
      assert.match(e.msg, /routes\[0\]\.table/);
      return true;
    });
  }
});
