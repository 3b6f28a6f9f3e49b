/**
 * The network config `podipam serve` prints for a node: a ptp conflist whose IPAM is podipam in
 * cluster mode on the server's datastore, then portmap — ready for /etc/cni/net.d. Built by the
 * one conflist builder `podipam install-cni` uses (src/install/cni-conflist.ts), with its
 * default interface for the cluster back end: each pod's address comes with its block's prefix
 * and gateway; ptp puts the gateway on the pod's host-side veth, routes the pod (/32, /128) on
 * the node and the pod's default routes through the gateway, so a node may hold any number of
 * blocks (a bridge keeps one IPv4 gateway: the node's second block would fail there).
 */
import { buildConflist, DEFAULT_AGENT_SOCKET, defaultInterface } from '../install/cni-conflist.js';

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
    interface: defaultInterface('cluster'),
    bridge: 'cni0',
    agentSocket: DEFAULT_AGENT_SOCKET,
    datastore: i.datastore,
    nodeName: i.nodeName,
    subnets: [],
    pools: i.pools,
    portmap: true,
  });
  return JSON.stringify(conf, null, 2);
}
