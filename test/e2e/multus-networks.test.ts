/**
 * Multus-style pods in cluster mode: every pod attaches 16 networks (net-0 on eth0, net-1…net-15
 * on net1…net15), each one CNI call through the native shim to its node's agent (3 nodes, each
 * its own agent, socket and directory) on a 3-member etcd; each pod's calls one after another
 * (Multus's delegates), 32 pods at a time. First every network on its own pool, then all 16 on
 * one shared pool. Every attachment is answered with a valid result in its network's pool, a
 * pod's addresses are distinct and no address is held twice; DEL of everything leaves nothing
 * held (`ipam check` clean). No time is asserted beyond each pod starting within kubelet's
 * 4-minute sandbox timeout (bench/multus.ts measures the 128 × 16 set).
 *
 * Knobs: PODIPAM_MULTUS_PODS (32), _NETWORKS (16), _IN_FLIGHT (32), _NODES (3).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { requireShim } from '../helpers/agent.js';
import { type EtcdCluster, startEtcd } from '../helpers/etcd.js';
import {
  type MultusNode,
  type MultusPool,
  checkAttachments,
  createMultusPools,
  leftHeld,
  multusCall,
  multusSize,
  runMultusPods,
  startMultusNodes,
} from '../helpers/multus-pods.js';
import { type TempDir, makeTempDir } from '../helpers/tmp.js';

const SIZE = multusSize('PODIPAM_MULTUS', { pods: 32, networks: 16, inFlight: 32, nodes: 3 });
/** kubelet's sandbox creation timeout: a pod's networks must all be up within it. */
const SANDBOX_TIMEOUT_MS = 240_000;

let etcd: EtcdCluster;
let dir: TempDir;
let nodes: MultusNode[] = [];

before(async () => {
  requireShim();
  etcd = await startEtcd({ members: 3 });
  dir = makeTempDir('multus');
  nodes = await startMultusNodes(etcd.url, dir.path, SIZE.nodes, 'node');
});

after(async () => {
  for (const n of nodes) await n.agent.kill();
  await etcd?.stop();
  dir?.remove();
});

async function podsOnPools(t: { diagnostic(m: string): void }, pools: readonly MultusPool[], label: string): Promise<void> {
  const call = (command: string, pod: number, net: number) => multusCall(etcd.url, nodes[pod % nodes.length]!, pools[net]!, command, pod, net);
  const add = await runMultusPods(SIZE, call, 'ADD');
  const attachments = SIZE.pods * SIZE.networks;
  t.diagnostic(
    `${label}: ${SIZE.pods} pods × ${SIZE.networks} networks = ${attachments} ADDs, ${SIZE.inFlight} pods in flight, ${SIZE.nodes} nodes: ${(add.ms / 1000).toFixed(2)} s wall (slowest pod ${(Math.max(...add.podMs) / 1000).toFixed(2)} s)`,
  );
  assert.deepEqual(add.failures.slice(0, 10), [], `${add.failures.length} ADDs failed`);
  const { problems, addresses } = checkAttachments(add, pools);
  assert.deepEqual(problems, []);
  assert.equal(addresses, attachments, 'one distinct address per attachment');
  const slow = add.podMs.filter((ms) => ms >= SANDBOX_TIMEOUT_MS).length;
  assert.equal(slow, 0, `${slow} pods took longer than kubelet's sandbox timeout`);
  const held = leftHeld(etcd.url);
  assert.equal(held.allocated, attachments, 'the datastore holds exactly the attachments');

  const del = await runMultusPods(SIZE, call, 'DEL');
  t.diagnostic(`${label}: ${attachments} DELs: ${(del.ms / 1000).toFixed(2)} s wall`);
  assert.deepEqual(del.failures.slice(0, 10), [], `${del.failures.length} DELs failed`);
  const left = leftHeld(etcd.url);
  assert.equal(left.allocated, 0, 'nothing allocated after DEL');
  assert.deepEqual(JSON.parse(left.check), { leaks: [], problems: [] });
}

test(
  `Multus-style pods: ${SIZE.pods} pods × ${SIZE.networks} networks, each network its own pool, through the shim to ${SIZE.nodes} agents on a 3-member etcd`,
  { timeout: 600_000 },
  async (t) => {
    await podsOnPools(t, await createMultusPools(etcd.url, SIZE.networks, false), 'own pools');
  },
);

test(`Multus-style pods: ${SIZE.pods} pods × ${SIZE.networks} networks on one shared pool: a pod's addresses distinct`, { timeout: 600_000 }, async (t) => {
  await podsOnPools(t, await createMultusPools(etcd.url, SIZE.networks, true), 'shared pool');
});
