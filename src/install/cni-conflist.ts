/**
 * The network config `podipam install-cni` writes, and the one `podipam serve` prints (one
 * builder for both): one interface plugin (bridge or ptp) whose IPAM is podipam on the chosen
 * back end (its keys: src/plugin/README.md), then `portmap` when asked.
 *
 * Every pod gets a default route per family it has an address of: `local` lists them in the
 * IPAM routes (the ranges' families are known here); `cluster` and `agent` answer each address
 * with its block's prefix and gateway, so the bridge routes through that gateway
 * (`isDefaultGateway`), and ptp gets the IPAM routes 0.0.0.0/0 and ::/0, of which the cluster
 * back end returns those of the families the pod got (src/plugin/cluster-backend.ts).
 */
export type Backend = 'local' | 'cluster' | 'agent';
export type InterfacePlugin = 'bridge' | 'ptp';

export const BACKENDS: readonly Backend[] = ['local', 'cluster', 'agent'];
export const INTERFACES: readonly InterfacePlugin[] = ['bridge', 'ptp'];
export const DEFAULT_AGENT_SOCKET = '/run/podipam/agent.sock';

export interface ConflistOptions {
  readonly name: string;
  readonly backend: Backend;
  readonly interface: InterfacePlugin;
  /** bridge only: the Linux bridge name. */
  readonly bridge: string;
  /** Masquerade pod traffic leaving the node (the interface plugin's ipMasq; default true). */
  readonly ipMasq?: boolean;
  /** agent: the agent's socket (the agent serves the cluster back end on `datastore`). */
  readonly agentSocket: string;
  /** agent, cluster, and local with usePodCidr: the datastore URL. */
  readonly datastore?: string;
  /** agent, cluster, and local with usePodCidr: this node's name. */
  readonly nodeName: string;
  /** local: subnets (CIDRs, or "usePodCidr"), one range set each. */
  readonly subnets: readonly string[];
  /** local: host-local's dataDir (default /var/lib/cni/networks). */
  readonly dataDir?: string;
  /** agent, cluster: only these pools (default: every enabled pool selecting the node). */
  readonly pools?: readonly string[];
  /** Chain the `portmap` plugin (hostPort mappings) after the interface plugin. */
  readonly portmap?: boolean;
}

/** The conflist as an object (JSON-encode it with {@link conflistText}). */
export function buildConflist(o: ConflistOptions): Record<string, unknown> {
  return {
    cniVersion: '1.0.0',
    name: o.name,
    plugins: [{ ...interfacePlugin(o), ipam: ipamSection(o) }, ...(o.portmap ? [{ type: 'portmap', capabilities: { portMappings: true } }] : [])],
  };
}

/** The bytes written to disk: stable, two-space indented, newline terminated. */
export function conflistText(o: ConflistOptions): string {
  return `${JSON.stringify(buildConflist(o), null, 2)}\n`;
}

function interfacePlugin(o: ConflistOptions): Record<string, unknown> {
  const ipMasq = o.ipMasq ?? true;
  // The runtime hands the pod's annotations (podipam.io/pools, /ip, /ip-set, /sticky and
  // Calico's) only to an entry declaring this capability; bridge and ptp pass their whole
  // config, runtimeConfig included, on to the IPAM plugin. The local back end ignores them.
  const caps = o.backend === 'local' ? {} : { capabilities: { 'io.kubernetes.cri.pod-annotations': true } };
  if (o.interface === 'ptp') return { type: 'ptp', ipMasq, ...caps };
  // The block gateway as the pod's default route; local gives its routes in the IPAM section.
  return { type: 'bridge', bridge: o.bridge, isGateway: true, ...(o.backend === 'local' ? {} : { isDefaultGateway: true }), ipMasq, ...caps };
}

function ipamSection(o: ConflistOptions): Record<string, unknown> {
  switch (o.backend) {
    // The agent is a transport: it serves the cluster back end named by the other keys (a
    // config with only "agent" is refused until the agent's warm pool exists).
    case 'agent':
      return { type: 'podipam', agent: o.agentSocket, datastore: o.datastore, nodeName: o.nodeName, ...clusterExtras(o) };
    case 'cluster':
      return { type: 'podipam', datastore: o.datastore, nodeName: o.nodeName, ...clusterExtras(o) };
    case 'local': {
      const podCidr = o.subnets.includes('usePodCidr');
      return {
        type: 'podipam',
        ranges: o.subnets.map((subnet) => [{ subnet }]),
        ...(o.dataDir !== undefined ? { dataDir: o.dataDir } : {}),
        ...(podCidr ? { datastore: o.datastore, nodeName: o.nodeName } : {}),
        routes: routesFor(o.subnets),
      };
    }
  }
}

/** The cluster back end's optional keys: pools, and for ptp the default routes (bridge has isDefaultGateway). */
function clusterExtras(o: ConflistOptions): Record<string, unknown> {
  return {
    ...(o.pools && o.pools.length > 0 ? { pools: [...o.pools] } : {}),
    ...(o.interface === 'ptp' ? { routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }] } : {}),
  };
}

/**
 * A default route per family the ranges cover. "usePodCidr" counts as IPv4 only: a route of a
 * family the pod gets no address of would fail the interface plugin on a single-stack node.
 */
function routesFor(subnets: readonly string[]): { dst: string }[] {
  const v4 = subnets.some((s) => !s.includes(':'));
  const v6 = subnets.some((s) => s.includes(':'));
  return [...(v4 ? [{ dst: '0.0.0.0/0' }] : []), ...(v6 ? [{ dst: '::/0' }] : [])];
}
