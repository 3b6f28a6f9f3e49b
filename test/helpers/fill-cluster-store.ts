/**
 * Fills a cluster store fast, as a big cluster leaves it: two pools (IPv4 /26 and IPv6 /122
 * blocks), `nodes` node records, each node one block of each family with `podsPerNode`
 * dual-stack pods, every pod a handle record — written directly in transactions of
 * MAX_TXN_OPS records with the cluster's own encoders (going through the allocator would cost
 * a round trip per pod). `ipam check` finds such a store clean.
 */
import { encodeAffinity } from '../../src/cluster/records/affinity-record.js';
import { encodeBlock } from '../../src/cluster/records/block-record.js';
import { encodeHandle } from '../../src/cluster/records/handle-record.js';
import { ClusterIpam } from '../../src/cluster/index.js';
import { affinityKey, blockKey, handleKey } from '../../src/cluster/records/keys.js';
import { encodeNodeRecord, nodeKey } from '../../src/model/node-record.js';
import { formatPrefix, parsePrefix, subPrefix, type Prefix } from '../../src/ip/index.js';
import { MAX_TXN_OPS, type Op, type Store } from '../../src/store/index.js';

export const FILL_V4 = parsePrefix('10.0.0.0/13');
export const FILL_V6 = parsePrefix('fd00:10::/48');

export async function fillClusterStore(store: Store, nodes: number, podsPerNode: number): Promise<void> {
  if (podsPerNode > 60) throw new RangeError(`fillClusterStore: podsPerNode must be at most 60 (a /26 block): current value is ${podsPerNode}`);
  const ipam = new ClusterIpam(store);
  await ipam.createPool({ name: 'v4', cidr: formatPrefix(FILL_V4), blockSize: 26 });
  await ipam.createPool({ name: 'v6', cidr: formatPrefix(FILL_V6), blockSize: 122 });
  let ops: Op[] = [];
  const flush = async (): Promise<void> => {
    if (ops.length === 0) return;
    const r = await store.txn([], ops);
    if (!r.succeeded) throw new Error('fillClusterStore: a txn without compares failed');
    ops = [];
  };
  const put = async (key: string, value: string): Promise<void> => {
    ops.push({ type: 'put', key, value });
    if (ops.length === MAX_TXN_OPS) await flush();
  };
  const now = new Date().toISOString();
  for (let n = 0; n < nodes; n++) {
    const node = `node-${String(n).padStart(4, '0')}`;
    await put(nodeKey(node), encodeNodeRecord({ name: node, labels: {}, podCIDRs: [], createdAt: now }));
    const blocks: Prefix[] = [subPrefix(FILL_V4, 26, BigInt(n)), subPrefix(FILL_V6, 122, BigInt(n))];
    const allocations = blocks.map(() => new Map<number, string>());
    for (let p = 0; p < podsPerNode; p++) {
      // Ordinals from 2: 0 is the network address and 1 the gateway.
      const handle = `k8s-pod-network.${n.toString(16).padStart(4, '0')}${p.toString(16).padStart(4, '0')}.eth0`;
      allocations.forEach((m) => m.set(p + 2, handle));
      await put(handleKey(handle), encodeHandle({ node, network: 'k8s-pod-network', blocks: new Map(blocks.map((b) => [formatPrefix(b), 1])) }));
    }
    for (const [i, cidr] of blocks.entries()) {
      await put(blockKey(cidr), encodeBlock({ cidr, affinity: node, allocations: allocations[i] as Map<number, string>, next: podsPerNode + 2 }));
      await put(affinityKey(node, cidr), encodeAffinity({ state: 'confirmed', claimedAt: now }));
    }
  }
  await flush();
}
