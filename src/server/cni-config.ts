/**
 * The network config `podipam serve` prints for a node: a bridge conflist whose IPAM is
 * podipam in cluster mode on the server's datastore — ready for /etc/cni/net.d. Each pod's
 * address comes with its block's prefix and gateway; `isDefaultGateway` puts the gateway on
 * the bridge and routes the pod's traffic through it (to other blocks, other nodes).
 */
export interface CniConfigInput {
  readonly datastore: string;
  readonly nodeName: string;
  readonly pools: readonly string[];
  readonly network?: string;
}

export function cniConflist(i: CniConfigInput): string {
  const conf = {
    cniVersion: '1.0.0',
    name: i.network ?? 'podipam',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        isDefaultGateway: true,
        ipMasq: true,
        ipam: {
          type: 'podipam',
          datastore: i.datastore,
          nodeName: i.nodeName,
          ...(i.pools.length > 0 ? { pools: [...i.pools] } : {}),
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
  return JSON.stringify(conf, null, 2);
}
