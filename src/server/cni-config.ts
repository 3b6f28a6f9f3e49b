/**
 * The network config `podipam serve` prints for a node: a bridge conflist whose IPAM is
 * podipam in cluster mode on the server's datastore, then portmap — ready for /etc/cni/net.d.
 * Built by the one conflist builder `podipam install-cni` uses (src/install/cni-conflist.ts):
 * each pod's address comes with its block's prefix and gateway; `isDefaultGateway` puts the
 * gateway on the bridge and routes the pod's traffic through it (to other blocks, other nodes).
 */
import { buildConflist, DEFAULT_AGENT_SOCKET } from '../install/cni-conflist.js';

export interface CniConfigInput {
  readonly datastore: string;
  readonly nodeName: string;
  readonly pools: readonly string[];
  readonly network?: string;
}

export function cniConflist(i: CniConfigInput): string {
  const conf = buildConflist({
    name: i.network ?? 'podipam',
    backend: 'cluster',
    interface: 'bridge',
    bridge: 'cni0',
    ipMasq: true,
    agentSocket: DEFAULT_AGENT_SOCKET,
    datastore: i.datastore,
    nodeName: i.nodeName,
    subnets: [],
    pools: i.pools,
    portmap: true,
  });
  return JSON.stringify(conf, null, 2);
}
