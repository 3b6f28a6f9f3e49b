/**
 * Multus-style pods for tests and benches (test/e2e/multus-networks.test.ts, bench/multus.ts):
 * every pod attaches NETWORKS networks, each one CNI call through the native shim to the agent
 * of the pod's node, as Multus calls its delegates — one after another within a pod (ADD in
 * order, DEL in reverse order), pods in parallel, INFLIGHT pods at a time.
 *
 * Network i is named `net-i`; network 0 is the default network on `eth0`, network i > 0 is on
 * `net<i>` (Multus's names). Every call of a pod carries the same CNI_CONTAINERID (the sandbox),
 * CNI_NETNS and CNI_ARGS naming the pod (K8S_POD_NAMESPACE/NAME/UID/INFRA_CONTAINER_ID), and its
 * network's config on stdin. Pods are placed round robin over the nodes (pod p on node p % N).
 *
 * A run answers every attachment's result (or its failure); `checkAttachments` checks them:
 * a valid CNI 1.0.0 result with one address and its gateway, inside its network's pool,
 * distinct within the pod and across the run.
 */
import { join } from 'node:path';
import type { Addr } from '../../src/ip/addr.js';
import { formatAddr, parseAddr } from '../../src/ip/addr.js';
import { type Prefix, parseCidr, parsePrefix, prefixContains, prefixOf } from '../../src/ip/prefix.js';
import { type RunningAgent, SHIM_BIN, startAgent } from './agent.js';
import { type PluginCall, runCliSync, runPlugin } from './plugin.js';
import { ClusterIpam } from '../../src/cluster/index.js';
import { openStore } from '../../src/store/index.js';

export interface MultusSize {
  readonly pods: number;
  readonly networks: number;
  readonly inFlight: number;
  readonly nodes: number;
}

/** `<PREFIX>_PODS`, `_NETWORKS`, `_IN_FLIGHT`, `_NODES` from the environment over `defaults`; a bad value throws naming it. */
export function multusSize(prefix: string, defaults: MultusSize): MultusSize {
  const knob = (name: string, dflt: number, max: number): number => {
    const key = `${prefix}_${name}`;
    const raw = process.env[key];
    if (raw === undefined || raw === '') return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${key}=${JSON.stringify(raw)}: must be an integer from 1 to ${max}`);
    return n;
  };
  return {
    pods: knob('PODS', defaults.pods, 4096),
    networks: knob('NETWORKS', defaults.networks, 64),
    inFlight: knob('IN_FLIGHT', defaults.inFlight, 256),
    nodes: knob('NODES', defaults.nodes, 16),
  };
}

/** The interface Multus gives network `i` of a pod. */
export const ifnameOf = (i: number): string => (i === 0 ? 'eth0' : `net${i}`);

export interface MultusPool {
  readonly name: string;
  readonly cidr: string;
  readonly prefix: Prefix;
}

/**
 * Creates the pools, in this process through the cluster service the CLI's `pool create` calls
 * (one datastore session, not a CLI process per pool): `pool-net-i` (10.(64+i).0.0/16) for every
 * network, or one `pool-shared` (10.40.0.0/14) for all of them. Returns the pool of each
 * network, by index.
 */
export async function createMultusPools(url: string, networks: number, shared: boolean): Promise<MultusPool[]> {
  const store = await openStore(url);
  try {
    const ipam = new ClusterIpam(store);
    const make = async (name: string, cidr: string): Promise<MultusPool> => {
      await ipam.createPool({ name, cidr, nodeSelector: 'all()', disabled: false });
      return { name, cidr, prefix: parsePrefix(cidr) };
    };
    if (shared) {
      const p = await make('pool-shared', '10.40.0.0/14');
      return Array.from({ length: networks }, () => p);
    }
    const pools: MultusPool[] = [];
    for (let i = 0; i < networks; i++) pools.push(await make(`pool-net-${i}`, `10.${64 + i}.0.0/16`));
    return pools;
  } finally {
    await store.close();
  }
}

export interface MultusNode {
  readonly name: string;
  readonly agent: RunningAgent;
  /** The node's private directory (socket, hint files, warm data). */
  readonly dir: string;
}

/**
 * One agent per simulated node, each with its own socket and directory under `dir`, on the
 * datastore `url`; `o.warm` adds a warm pool over `warm.pools` (max idle = capacity). PODIPAM_TRACE passes through.
 * `o.agentArgs`: more agent flags; `o.nodeArgs`: flags for the agents' node (a bench's `--cpu-prof`).
 * `o.asShipped` (the benches): each agent runs its own default warm-up (not the tests' short one)
 * and starts after the one before is ready — each simulated node's agent warms up with the
 * machine's CPUs, as a real node's has its own (started together on one machine, three warm-ups
 * each got a third of a CPU and left most of the request path unoptimised: src/agent/warm-up.ts).
 * The tests start them together, with the short warm-up.
 */
export async function startMultusNodes(
  url: string,
  dir: string,
  nodes: number,
  prefix: string,
  o: {
    readonly warm?: { readonly pools: readonly string[]; readonly minIdle: number; readonly capacity: number };
    readonly agentArgs?: readonly string[];
    readonly nodeArgs?: readonly string[];
    readonly asShipped?: boolean;
  } = {},
): Promise<MultusNode[]> {
  const env = process.env.PODIPAM_TRACE ? { PODIPAM_TRACE: process.env.PODIPAM_TRACE } : {};
  const start = async (i: number): Promise<MultusNode> => {
    const name = `${prefix}-${i}`;
    const d = join(dir, name);
    const args = ['--node', name, '--datastore', url, ...(o.agentArgs ?? [])];
    const warm = o.warm;
    if (warm) {
      const cap = String(warm.capacity);
      args.push(
        '--data-dir',
        join(d, 'data'),
        '--pools',
        warm.pools.join(','),
        '--min-idle',
        String(warm.minIdle),
        '--max-idle',
        cap,
        '--capacity',
        cap,
        '--cooldown',
        '1s',
      );
    }
    const agent = await startAgent(join(d, 'agent.sock'), args, env, { nodeArgs: o.nodeArgs ?? [], ...(o.asShipped ? { warmUp: null } : {}) });
    return { name, dir: d, agent };
  };
  if (!o.asShipped) return Promise.all(Array.from({ length: nodes }, (_, i) => start(i)));
  const started: MultusNode[] = [];
  for (let i = 0; i < nodes; i++) started.push(await start(i));
  return started;
}

/** The CNI call of network `net` of pod `pod` on `node` (cluster mode naming `pool`, or the node's warm pool). */
export function multusCall(url: string, node: MultusNode, pool: MultusPool | 'warm', command: string, pod: number, net: number): PluginCall {
  const ipam =
    pool === 'warm'
      ? { type: 'podipam', agent: node.agent.socket }
      : { type: 'podipam', datastore: url, nodeName: node.name, pools: [pool.name], cacheDir: join(node.dir, 'cache') };
  const cid = `multus${String(pod).padStart(5, '0')}${'0'.repeat(52)}`;
  return {
    command,
    containerId: cid,
    ifname: ifnameOf(net),
    netns: `/var/run/netns/multus-pod-${pod}`,
    args: `IgnoreUnknown=true;K8S_POD_NAMESPACE=multus;K8S_POD_NAME=pod-${pod};K8S_POD_INFRA_CONTAINER_ID=${cid};K8S_POD_UID=00000000-0000-4000-8000-${String(pod).padStart(12, '0')}`,
    config: { cniVersion: '1.0.0', name: `net-${net}`, ipam },
    env: { PODIPAM_AGENT_SOCKET: node.agent.socket, PODIPAM_PLUGIN: '' },
  };
}

export interface MultusRun {
  /** Wall time of the whole set (ms). */
  readonly ms: number;
  /** Per pod, the time from its first call to its last answer (ms). */
  readonly podMs: number[];
  /** Per pod, per network, the stdout of an answer with exit 0 (ADD: the result; DEL: ''). */
  readonly answers: string[][];
  /** Calls that did not exit 0: which, and what they printed. */
  readonly failures: string[];
}

/**
 * Every pod's networks, `command` (ADD and VERSION: net 0, 1, …; DEL: the reverse), `size.inFlight` pods at a
 * time, each through `plugin` (default the native shim); a pod whose call fails stops there (as
 * Multus does), the failure recorded.
 */
export async function runMultusPods(
  size: MultusSize,
  call: (command: string, pod: number, net: number) => PluginCall,
  command: 'ADD' | 'DEL' | 'VERSION',
  plugin: string = SHIM_BIN,
): Promise<MultusRun> {
  const answers = Array.from({ length: size.pods }, () => new Array<string>(size.networks));
  const podMs = new Array<number>(size.pods).fill(0);
  const failures: string[] = [];
  let next = 0;
  const t0 = performance.now();
  const lane = async (): Promise<void> => {
    for (let pod = next++; pod < size.pods; pod = next++) {
      const p0 = performance.now();
      for (let k = 0; k < size.networks; k++) {
        const net = command === 'ADD' ? k : size.networks - 1 - k;
        const c = call(command, pod, net);
        const r = await runPlugin(plugin, c);
        if (r.code !== 0) {
          failures.push(`${command} pod ${pod} net-${net} (${c.ifname}): exit ${r.code}: ${r.stdout}${r.stderr}`);
          break;
        }
        answers[pod]![net] = r.stdout;
      }
      podMs[pod] = performance.now() - p0;
    }
  };
  await Promise.all(Array.from({ length: Math.min(size.inFlight, size.pods) }, lane));
  return { ms: performance.now() - t0, podMs, answers, failures };
}

/**
 * What is wrong with a run's ADD answers, at most `limit` lines (empty: every attachment is a
 * CNI 1.0.0 result with one address in its network's pool and a gateway in the same prefix,
 * the pod's addresses distinct, no address held twice across the run). Also the addresses.
 */
export function checkAttachments(run: MultusRun, pools: readonly MultusPool[], limit = 20): { problems: string[]; addresses: number } {
  const problems: string[] = [];
  const holder = new Map<string, string>();
  const add = (p: string): void => void (problems.length < limit && problems.push(p));
  run.answers.forEach((nets, pod) => {
    const own = new Set<string>();
    for (let net = 0; net < pools.length; net++) {
      const what = `pod ${pod} net-${net}`;
      const out = nets[net];
      if (out === undefined) {
        add(`${what}: no answer`);
        continue;
      }
      let r: { cniVersion?: unknown; ips?: { address?: unknown; gateway?: unknown }[] };
      try {
        r = JSON.parse(out) as typeof r;
      } catch {
        add(`${what}: not JSON: ${out}`);
        continue;
      }
      const ip = r.ips?.[0];
      if (r.cniVersion !== '1.0.0' || r.ips?.length !== 1 || typeof ip?.address !== 'string' || typeof ip.gateway !== 'string') {
        add(`${what}: not a CNI 1.0.0 result with one address and its gateway: ${out}`);
        continue;
      }
      let a: Addr;
      try {
        const c = parseCidr(ip.address);
        a = c.addr;
        if (!prefixContains(prefixOf(a, c.len), parseAddr(ip.gateway))) add(`${what}: gateway ${ip.gateway} outside ${ip.address}`);
      } catch (e) {
        add(`${what}: ${(e as Error).message}: ${out}`);
        continue;
      }
      const text = formatAddr(a);
      const pool = pools[net]!;
      if (!prefixContains(pool.prefix, a)) add(`${what}: ${text} is not in its pool ${pool.name} (${pool.cidr})`);
      if (own.has(text)) add(`${what}: ${text} twice in the pod`);
      own.add(text);
      const before = holder.get(text);
      if (before !== undefined) add(`${what}: ${text} already held by ${before}`);
      holder.set(text, what);
    }
  });
  return { problems, addresses: holder.size };
}

/** What the datastore says after the DELs: the pools' allocations (minus warm idle ones) and `ipam check`. */
export function leftHeld(url: string): { allocated: number; check: string } {
  const show = runCliSync(url, ['ipam', 'show', '--json']);
  if (show.code !== 0) throw new Error(`ipam show: exit ${show.code}: ${show.stderr}`);
  const pools = (JSON.parse(show.stdout) as { items: { allocated: number | string; idle?: number | string }[] }).items;
  const allocated = pools.reduce((n, p) => n + Number(p.allocated) - Number(p.idle ?? 0), 0);
  const check = runCliSync(url, ['ipam', 'check', '--json']);
  return { allocated, check: check.code === 0 ? check.stdout.trim() : `exit ${check.code}: ${check.stdout}${check.stderr}` };
}
