/**
 * The network config `podipam serve` prints for a node: a bridge conflist whose IPAM is
 * podipam in cluster mode on the server's datastore — ready for /etc/cni/net.d.
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
