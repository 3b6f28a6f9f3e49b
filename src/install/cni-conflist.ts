/**
 * The network config `podipam install-cni` writes, and the one `podipam serve` prints (one
 * builder for both): one interface plugin (bridge or ptp) whose IPAM is podipam on the chosen
 * back end (its keys: src/plugin/README.md), then `portmap` when asked.
 *
 * The interface plugin follows the back end ({@link defaultInterface}):
 * - `local` (host-local compatible): `bridge` with `isGateway`, as host-local users run it. The
 *   node has ONE subnet, so one gateway on the bridge; the config stays what it always was.
 * - `cluster` and `agent`: `ptp`. These answer each address with its BLOCK's prefix and gateway,
 *   and a node holds several blocks as soon as its first is full, a pod is placed in another
 *   pool (podipam.io/pools) or gets an ip-set address of another pool. ptp gives each pod its
 *   own veth: the block's gateway as a /32 (/128) on the host side, a /32 (/128) host route to
 *   the pod, the pod's default route through the host side — routed per pod as Calico and
 *   Cilium do, so any number of blocks (and pools) coexist on a node, and pods of different
 *   blocks reach each other and the node through it. `bridge` is refused with them
 *   ({@link interfaceRefusal}): the reference bridge plugin keeps one IPv4 address per bridge,
 *   so the node's second IPv4 block fails every pod start there ("cni0" already has an IP
 *   address different from …; `forceAddress` would cut off the first block's pods instead).
 *   A single node-wide gateway would need addresses wider than their block, on-link across
 *   nodes: not the block model.
 *
 * Masquerade: `local` keeps the interface plugin's `ipMasq` (default on, `--no-ip-masq`), as
 * host-local users run it (one node subnet: ptp/bridge NAT what leaves it). `cluster` and
 * `agent` always write `ipMasq: false`: ptp masquerades everything outside the pod's IPAM
 * result network, which is its BLOCK here, so pod-to-pod traffic across blocks (same node or
 * not) would be source-NATted. Their masquerade is podipam's own, relative to every pod pool
 * (src/masq/masquerade-rules.ts, kept by the agent or `podipam masquerade sync`).
 *
 * Every pod gets a default route per family it has an address of: `local` lists them in the
 * IPAM routes (the ranges' families are known here); ptp gets the IPAM routes 0.0.0.0/0 and ::/0,
 * of which the cluster back end returns those of the families the pod got
 * (src/plugin/cluster-backend.ts), through its block's gateway.
 */
export type Backend = 'local' | 'cluster' | 'agent';
export type InterfacePlugin = 'bridge' | 'ptp';

export const BACKENDS: readonly Backend[] = ['local', 'cluster', 'agent'];
export const INTERFACES: readonly InterfacePlugin[] = ['bridge', 'ptp'];
export const DEFAULT_AGENT_SOCKET = '/run/podipam/agent.sock';

export interface ConflistOptions {
  readonly name: string;
  readonly backend: Backend;
  /** Default: {@link defaultInterface} of the back end. */
  readonly interface?: InterfacePlugin;
  /** bridge only: the Linux bridge name. */
  readonly bridge: string;
  /** local: masquerade pod traffic leaving the node subnet (the interface plugin's ipMasq; default true). Ignored by cluster and agent (always false: see the header). */
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

/** The interface plugin a back end gets when none is named: bridge for local, ptp for the block back ends. */
export function defaultInterface(backend: Backend): InterfacePlugin {
  return backend === 'local' ? 'bridge' : 'ptp';
}

/** Why `iface` cannot serve `backend` (a sentence for the operator), or undefined when it can. */
export function interfaceRefusal(backend: Backend, iface: InterfacePlugin): string | undefined {
  if (iface !== 'bridge' || backend === 'local') return undefined;
  return (
    `--interface bridge does not work with --backend ${backend}: each pod address comes with its block's prefix and gateway, ` +
    `and the bridge plugin keeps one IPv4 gateway address per bridge, so once the node holds a second IPv4 block ` +
    `(its first full, or a pod placed in another pool) every pod start there fails ("already has an IP address different from …"); ` +
    `use --interface ptp (the default for ${backend}: a veth per pod, routed by the node), or --backend local for a bridge on one node subnet`
  );
}

/** The conflist as an object (JSON-encode it with {@link conflistText}); throws for a refused interface. */
export function buildConflist(o: ConflistOptions): Record<string, unknown> {
  const refused = interfaceRefusal(o.backend, interfaceOf(o));
  if (refused !== undefined) throw new Error(refused);
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

function interfaceOf(o: ConflistOptions): InterfacePlugin {
  return o.interface ?? defaultInterface(o.backend);
}

function interfacePlugin(o: ConflistOptions): Record<string, unknown> {
  const ipMasq = o.backend === 'local' ? (o.ipMasq ?? true) : false;
  // The runtime hands the pod's annotations (podipam.io/pools, /ip, /ip-set, /sticky and
  // Calico's) only to an entry declaring this capability; bridge and ptp pass their whole
  // config, runtimeConfig included, on to the IPAM plugin. The local back end ignores them.
  const caps = o.backend === 'local' ? {} : { capabilities: { 'io.kubernetes.cri.pod-annotations': true } };
  if (interfaceOf(o) === 'ptp') return { type: 'ptp', ipMasq, ...caps };
  // local only (interfaceRefusal): the subnet's gateway on the bridge; the routes are in the IPAM section.
  return { type: 'bridge', bridge: o.bridge, isGateway: true, ipMasq, ...caps };
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

/** The cluster back end's optional keys: pools; then the default routes (through the block's gateway, ptp's host side). */
function clusterExtras(o: ConflistOptions): Record<string, unknown> {
  return {
    ...(o.pools && o.pools.length > 0 ? { pools: [...o.pools] } : {}),
    routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
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
