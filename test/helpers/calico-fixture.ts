/**
 * Calico IPAM state in Calico's two stored formats, from one description: the `kubectl get
 * ippools.crd.projectcalico.org,ipamblocks…,blockaffinities…,ipamhandles… -o json` List of
 * its Kubernetes datastore, and the key/value pairs of its etcd v3 datastore (libcalico-go's
 * key paths and JSON). Used by the parser unit tests and the import e2e test.
 *
 * CALICO_SCENARIO: three nodes, an IPv4 and an IPv6 pool, dual-stack pods (one Calico handle in
 * a v4 and a v6 block), IPIP / VXLAN / WireGuard tunnel addresses, an empty affine block (not carried over), a block
 * whose affinity is pendingDeletion, a released address cooling down, an empty deleted block.
 * `withMalformed` adds what must become conflicts: an allocation pointing outside the block's
 * attributes and one without a handle_id.
 */

export interface FxAlloc {
  readonly ordinal: number;
  /** Calico's handle_id; absent = the attribute has none. */
  readonly handle?: string;
  readonly namespace?: string;
  readonly pod?: string;
  readonly node?: string;
  /** Calico's attribute type (tunnel addresses). */
  readonly type?: string;
  readonly releasedAt?: string;
  /** Point the allocation at this attribute index instead of its own (a malformed block). */
  readonly attrIndex?: number;
}

export interface FxBlock {
  readonly cidr: string;
  readonly node: string | null;
  readonly allocs: readonly FxAlloc[];
  readonly deleted?: boolean;
  /** The BlockAffinity record's state (default confirmed; none when node is null). */
  readonly affinityState?: 'confirmed' | 'pending' | 'pendingDeletion';
}

export interface FxPool {
  readonly name: string;
  readonly cidr: string;
  readonly blockSize: number;
  readonly nodeSelector: string;
}

export interface FxScenario {
  readonly pools: readonly FxPool[];
  readonly blocks: readonly FxBlock[];
}

/** A 64-hex container id, as containerd makes them, distinct per `n`. */
export function containerId(n: number): string {
  return (n.toString(16).padStart(8, '0') + 'c0ffee').repeat(5).slice(0, 64);
}

const NET = 'k8s-pod-network';
const pod = (n: number, namespace: string, name: string, node: string, ordinal: number): FxAlloc => ({
  ordinal,
  handle: `${NET}.${containerId(n)}`,
  namespace,
  pod: name,
  node,
});

export const CALICO_NODES = ['node-a', 'node-b', 'node-c'] as const;

export function calicoScenario(options: { withMalformed?: boolean } = {}): FxScenario {
  return {
    pools: [
      { name: 'default-ipv4-ippool', cidr: '10.244.0.0/16', blockSize: 26, nodeSelector: 'all()' },
      { name: 'default-ipv6-ippool', cidr: 'fd00:10:244::/64', blockSize: 122, nodeSelector: 'all()' },
    ],
    blocks: [
      {
        cidr: '10.244.0.0/26',
        node: 'node-a',
        allocs: [
          { ordinal: 0, handle: 'ipip-tunnel-addr-node-a', node: 'node-a', type: 'ipipTunnelAddress' },
          pod(1, 'default', 'web-1', 'node-a', 1),
          pod(2, 'kube-system', 'coredns-7db6d8ff4d-x2x7k', 'node-a', 2),
          { ...pod(3, 'default', 'gone-0', 'node-a', 3), releasedAt: '2026-12-01T10:00:00Z' },
        ],
      },
      {
        cidr: '10.244.0.64/26',
        node: 'node-b',
        allocs: [
          { ordinal: 0, handle: 'vxlan-tunnel-addr-node-b', node: 'node-b', type: 'vxlanTunnelAddress' },
          pod(4, 'default', 'db-0', 'node-b', 1),
          pod(5, 'default', 'db-1', 'node-b', 7),
          ...(options.withMalformed
            ? [
                { ...pod(6, 'default', 'bad-0', 'node-b', 9), attrIndex: 42 },
                { ordinal: 10, namespace: 'default', pod: 'nohandle-0', node: 'node-b' },
              ]
            : []),
        ],
      },
      {
        cidr: '10.244.0.128/26',
        node: 'node-c',
        allocs: [
          { ordinal: 0, handle: 'wireguard-tunnel-addr-node-c', node: 'node-c', type: 'wireguardTunnelAddress' },
          pod(7, 'default', 'api-0', 'node-c', 3),
        ],
      },
      // node-c is giving this block up (its affinity is being deleted): imported unaffine.
      { cidr: '10.244.0.192/26', node: 'node-c', affinityState: 'pendingDeletion', allocs: [pod(8, 'batch', 'job-1-abcde', 'node-c', 4)] },
      // An empty block (not carried over: podipam writes the blocks addresses fill).
      { cidr: '10.244.1.0/26', node: 'node-b', allocs: [] },
      // An empty block Calico is deleting.
      { cidr: '10.244.1.64/26', node: null, deleted: true, allocs: [] },
      {
        cidr: 'fd00:10:244::/122',
        node: 'node-a',
        allocs: [pod(1, 'default', 'web-1', 'node-a', 1), pod(2, 'kube-system', 'coredns-7db6d8ff4d-x2x7k', 'node-a', 2)],
      },
      { cidr: 'fd00:10:244::40/122', node: 'node-b', allocs: [pod(4, 'default', 'db-0', 'node-b', 1)] },
      {
        cidr: 'fd00:10:244::80/122',
        node: 'node-c',
        allocs: [pod(7, 'default', 'api-0', 'node-c', 3), { ordinal: 9, handle: 'vxlan-v6-tunnel-addr-node-c', node: 'node-c', type: 'vxlanV6TunnelAddress' }],
      },
    ],
  };
}

/** "10.244.0.64/26" → "10-244-0-64-26" (Calico's CRD object names); "fd00::/122" → "fd00---122". */
function objectName(cidr: string): string {
  return cidr.replace(/[./:]/g, '-');
}

function blockValue(b: FxBlock): Record<string, unknown> {
  const size = 2 ** ((b.cidr.includes(':') ? 128 : 32) - Number(b.cidr.split('/')[1]));
  const allocations: (number | null)[] = Array.from({ length: size }, () => null);
  const attributes: Record<string, unknown>[] = [];
  const seq: Record<string, number> = {};
  for (const a of b.allocs) {
    const secondary: Record<string, string> = {};
    if (a.namespace !== undefined) secondary.namespace = a.namespace;
    if (a.node !== undefined) secondary.node = a.node;
    if (a.pod !== undefined) secondary.pod = a.pod;
    if (a.type !== undefined) secondary.type = a.type;
    else secondary.timestamp = '2026-11-30 08:15:02.123456789 +0000 UTC';
    const attr: Record<string, unknown> = { ...(a.handle !== undefined ? { handle_id: a.handle } : {}), secondary };
    if (a.releasedAt !== undefined) attr.releasedAt = a.releasedAt;
    allocations[a.ordinal] = a.attrIndex ?? attributes.length;
    attributes.push(attr);
    seq[String(a.ordinal)] = attributes.length;
  }
  return {
    cidr: b.cidr,
    affinity: b.node === null ? null : `host:${b.node}`,
    allocations,
    unallocated: allocations.flatMap((v, i) => (v === null ? [i] : [])),
    attributes,
    sequenceNumber: attributes.length,
    sequenceNumberForAllocation: seq,
    deleted: b.deleted ?? false,
  };
}

function handles(s: FxScenario): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  for (const b of s.blocks) {
    for (const a of b.allocs) {
      if (a.handle === undefined) continue;
      const m = out.get(a.handle) ?? {};
      m[b.cidr] = (m[b.cidr] ?? 0) + 1;
      out.set(a.handle, m);
    }
  }
  return out;
}

const meta = (name: string, i: number): Record<string, unknown> => ({
  creationTimestamp: '2026-11-30T08:00:00Z',
  generation: 1,
  name,
  resourceVersion: String(1000 + i),
  uid: `4f1c2a9e-0000-4000-8000-${String(i).padStart(12, '0')}`,
});

/** The kubectl List of Calico's KDD objects, as JSON text. */
export function calicoKddList(s: FxScenario): string {
  const items: Record<string, unknown>[] = [];
  let i = 0;
  const api = 'crd.projectcalico.org/v1';
  for (const p of s.pools) {
    items.push({
      apiVersion: api,
      kind: 'IPPool',
      metadata: { ...meta(p.name, i++), annotations: { 'projectcalico.org/metadata': '{"creationTimestamp":null}' } },
      spec: {
        allowedUses: ['Workload', 'Tunnel'],
        blockSize: p.blockSize,
        cidr: p.cidr,
        ipipMode: p.cidr.includes(':') ? 'Never' : 'Always',
        natOutgoing: true,
        nodeSelector: p.nodeSelector,
        vxlanMode: 'Never',
      },
    });
  }
  for (const b of s.blocks) {
    const v = blockValue(b);
    items.push({ apiVersion: api, kind: 'IPAMBlock', metadata: { ...meta(objectName(b.cidr), i++), annotations: {} }, spec: { ...v, strictAffinity: false } });
  }
  for (const b of s.blocks) {
    if (b.node === null) continue;
    items.push({
      apiVersion: api,
      kind: 'BlockAffinity',
      metadata: { ...meta(`${b.node}-${objectName(b.cidr)}`, i++), labels: { 'projectcalico.org/node': b.node } },
      spec: { cidr: b.cidr, deleted: 'false', node: b.node, state: b.affinityState ?? 'confirmed', type: 'host' },
    });
  }
  for (const [id, block] of handles(s)) {
    items.push({ apiVersion: api, kind: 'IPAMHandle', metadata: meta(id.toLowerCase(), i++), spec: { block, deleted: false, handleID: id } });
  }
  return `${JSON.stringify({ apiVersion: 'v1', items, kind: 'List', metadata: { resourceVersion: '' } }, null, 4)}\n`;
}

/** Calico's etcd v3 keys and values under `prefix` (default /calico). */
export function calicoEtcdPairs(s: FxScenario, prefix = '/calico'): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  const seg = (cidr: string): string => cidr.replace('/', '-');
  const ver = (cidr: string): string => (cidr.includes(':') ? 'ipv6' : 'ipv4');
  for (const p of s.pools) {
    out.push({
      key: `${prefix}/resources/v3/projectcalico.org/ippools/${p.name}`,
      value: JSON.stringify({
        kind: 'IPPool',
        apiVersion: 'projectcalico.org/v3',
        metadata: { name: p.name, uid: 'b7d3f1c2-1111-4000-8000-000000000001', creationTimestamp: '2026-11-30T08:00:00Z' },
        spec: {
          cidr: p.cidr,
          vxlanMode: 'Never',
          ipipMode: p.cidr.includes(':') ? 'Never' : 'Always',
          natOutgoing: true,
          blockSize: p.blockSize,
          nodeSelector: p.nodeSelector,
          allowedUses: ['Workload', 'Tunnel'],
        },
      }),
    });
  }
  for (const b of s.blocks) {
    out.push({ key: `${prefix}/ipam/v2/assignment/${ver(b.cidr)}/block/${seg(b.cidr)}`, value: JSON.stringify(blockValue(b)) });
    if (b.node !== null) {
      out.push({
        key: `${prefix}/ipam/v2/host/${b.node}/${ver(b.cidr)}/block/${seg(b.cidr)}`,
        value: JSON.stringify({ state: b.affinityState ?? 'confirmed', deleted: false }),
      });
    }
  }
  for (const [id, block] of handles(s)) out.push({ key: `${prefix}/ipam/v2/handle/${id}`, value: JSON.stringify({ block, deleted: false }) });
  return out;
}

/** What calicoScenario() must plan into, written out by hand: blocks, and [ip, block, kind, handle, node, namespace, pod] per address. */
export const CALICO_SCENARIO_EXPECTED = {
  blocks: [
    { cidr: '10.244.0.0/26', pool: 'default-ipv4-ippool', affinity: 'node-a' },
    { cidr: '10.244.0.64/26', pool: 'default-ipv4-ippool', affinity: 'node-b' },
    { cidr: '10.244.0.128/26', pool: 'default-ipv4-ippool', affinity: 'node-c' },
    { cidr: '10.244.0.192/26', pool: 'default-ipv4-ippool', affinity: null },
    { cidr: 'fd00:10:244::/122', pool: 'default-ipv6-ippool', affinity: 'node-a' },
    { cidr: 'fd00:10:244::40/122', pool: 'default-ipv6-ippool', affinity: 'node-b' },
    { cidr: 'fd00:10:244::80/122', pool: 'default-ipv6-ippool', affinity: 'node-c' },
  ],
  addresses: [
    ['10.244.0.0', '10.244.0.0/26', 'node', 'calico-tunnel@node-a:ipip', 'node-a', undefined, undefined],
    ['10.244.0.1', '10.244.0.0/26', 'pod', `k8s-pod-network:${containerId(1)}:eth0`, 'node-a', 'default', 'web-1'],
    ['10.244.0.2', '10.244.0.0/26', 'pod', `k8s-pod-network:${containerId(2)}:eth0`, 'node-a', 'kube-system', 'coredns-7db6d8ff4d-x2x7k'],
    ['10.244.0.64', '10.244.0.64/26', 'node', 'calico-tunnel@node-b:vxlan', 'node-b', undefined, undefined],
    ['10.244.0.65', '10.244.0.64/26', 'pod', `k8s-pod-network:${containerId(4)}:eth0`, 'node-b', 'default', 'db-0'],
    ['10.244.0.71', '10.244.0.64/26', 'pod', `k8s-pod-network:${containerId(5)}:eth0`, 'node-b', 'default', 'db-1'],
    ['10.244.0.128', '10.244.0.128/26', 'node', 'calico-tunnel@node-c:wireguard', 'node-c', undefined, undefined],
    ['10.244.0.131', '10.244.0.128/26', 'pod', `k8s-pod-network:${containerId(7)}:eth0`, 'node-c', 'default', 'api-0'],
    ['10.244.0.196', '10.244.0.192/26', 'pod', `k8s-pod-network:${containerId(8)}:eth0`, 'node-c', 'batch', 'job-1-abcde'],
    ['fd00:10:244::1', 'fd00:10:244::/122', 'pod', `k8s-pod-network:${containerId(1)}:eth0`, 'node-a', 'default', 'web-1'],
    ['fd00:10:244::2', 'fd00:10:244::/122', 'pod', `k8s-pod-network:${containerId(2)}:eth0`, 'node-a', 'kube-system', 'coredns-7db6d8ff4d-x2x7k'],
    ['fd00:10:244::41', 'fd00:10:244::40/122', 'pod', `k8s-pod-network:${containerId(4)}:eth0`, 'node-b', 'default', 'db-0'],
    ['fd00:10:244::83', 'fd00:10:244::80/122', 'pod', `k8s-pod-network:${containerId(7)}:eth0`, 'node-c', 'default', 'api-0'],
    ['fd00:10:244::89', 'fd00:10:244::80/122', 'node', 'calico-tunnel@node-c:vxlan-v6', 'node-c', undefined, undefined],
  ],
} as const;
