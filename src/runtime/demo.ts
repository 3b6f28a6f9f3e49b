/**
 * `podipam demo`: N pods on this machine through the real chain — each pod a network namespace,
 * attached (in parallel, as containerd does) to a loopback network and to a pod network made of
 * the reference `bridge` plugin with podipam as its IPAM — then their addresses printed, a ping
 * from every pod to the next one, and everything torn down: pods DELeted, namespaces, bridge
 * and temp dirs removed, also when interrupted (the caller aborts `signal` on Ctrl-C).
 *
 * The IPAM back end is pluggable (`DEMO_BACKENDS`): `local` (host-local layout in a temp dir),
 * `cluster` (block IPAM on a temp SQLite store), `agent` (a `podipam agent` the demo starts on a
 * socket in its temp dir and stops at the end, serving the native shim installed as `podipam`).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { formatAddr, parseCidr, parsePrefix } from '../ip/index.js';
import { parseConfList, type NetworkConfigList } from './conf-list.js';
import { CniRuntime } from './cni-runtime.js';
import { attachNetworks, detachNetworks, type PodNetwork } from './attach-networks.js';
import { findPlugin } from './find-plugin.js';
import { resultAddresses } from './go-result.js';
import { createNetns, deleteNetns, execInNetns } from './netns.js';

/** What a back end gives the demo: the `ipam` section, and how to clean up after it. */
export interface DemoIpam {
  readonly ipam: Record<string, unknown>;
  /** The binary installed as `podipam` in the demo's bin dir (default bin/podipam). */
  readonly plugin?: string;
  /** Cleans up; may return one line for the demo to print (what the back end did). */
  close(): Promise<string | void>;
}

/** A demo back end: prepares its IPAM for `subnet` using scratch directory `dir`. */
export type DemoBackend = (dir: string, subnet: string) => Promise<DemoIpam>;

export const DEMO_BACKENDS: Readonly<Record<string, DemoBackend>> = {
  local: async (dir, subnet) => ({ ipam: { type: 'podipam', ranges: [[{ subnet }]], dataDir: join(dir, 'ipam') }, close: async () => {} }),
  cluster: async (dir, subnet) => {
    const datastore = `sqlite:${join(dir, 'demo.db')}`;
    const [{ openStore }, { ClusterIpam }] = await Promise.all([import('../store/index.js'), import('../cluster/index.js')]);
    const store = await openStore(datastore);
    try {
      await new ClusterIpam(store).createPool({ name: 'demo', cidr: subnet, blockSize: undefined, nodeSelector: 'all()', disabled: false });
    } finally {
      await store.close();
    }
    return { ipam: { type: 'podipam', datastore, nodeName: 'demo', pools: ['demo'], cacheDir: join(dir, 'cluster') }, close: async () => {} };
  },
  agent: async (dir, subnet) => {
    // The native shim forwards to the agent; without it (no C compiler at build time) bin/podipam
    // forwards calls that name an agent just the same.
    const shim = fileURLToPath(new URL('../../bin/podipam-cni', import.meta.url));
    const agent = await startDemoAgent(join(dir, 'run', 'agent.sock'), join(dir, 'agent'));
    return {
      ipam: { type: 'podipam', agent: agent.socket, ranges: [[{ subnet }]], dataDir: join(dir, 'ipam') },
      plugin: existsSync(shim) ? shim : undefined,
      close: () => agent.stop(),
    };
  },
};

/** A `podipam agent` of the demo's own, on a socket in its scratch dir; stop() ends it (SIGTERM, then SIGKILL). */
async function startDemoAgent(socket: string, dataDir: string): Promise<{ socket: string; stop(): Promise<string> }> {
  const { callAgent } = await import('../wire/agent-client.js');
  // Its own process group: a Ctrl-C at the terminal must reach the demo (which then tears down
  // through the agent), not the agent itself. --no-masquerade: the demo never touches the host's nat table.
  const child = spawn(process.execPath, [PODIPAM_BIN, 'agent', '--socket', socket, '--data-dir', dataDir, '--metrics-listen', 'off', '--no-masquerade'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  const stop = async () => {
    if (gone) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
  };
  for (let i = 0; ; i++) {
    if (gone) throw new Error(`podipam agent exited before it was ready: ${stderr.trim()}`);
    try {
      const a = await callAgent(socket, { kind: 'status' }, { connectTimeoutMs: 1000, answerTimeoutMs: 2000 });
      if (a.status === 0) break;
    } catch {
      // not listening yet
    }
    if (i >= 200) {
      await stop();
      throw new Error(`podipam agent on ${socket} not ready after 10 s: ${stderr.trim()}`);
    }
    await sleep(50);
  }
  const served = async (): Promise<string> => {
    try {
      const a = await callAgent(socket, { kind: 'status' }, { connectTimeoutMs: 1000, answerTimeoutMs: 2000 });
      const st = JSON.parse(a.body.toString('utf8')) as { requests: Record<string, Record<string, number>> };
      const n = (verb: string) => st.requests[verb]?.ok ?? 0;
      return `podipam agent (pid ${child.pid}) served ${n('ADD')} ADD and ${n('DEL')} DEL calls; stopped`;
    } catch (e) {
      return `podipam agent: no status (${(e as Error).message}); stopped`;
    }
  };
  return {
    socket,
    stop: async () => {
      const line = await served();
      await stop();
      return line;
    },
  };
}

export interface DemoOptions {
  readonly pods: number;
  readonly backend: string;
  /** IPv4 subnet the pods get addresses from (a /16 … /28). */
  readonly subnet: string;
  /** Where the reference plugins (bridge, loopback) are looked up. */
  readonly pluginDirs: readonly string[];
  readonly timeoutMs: number;
  /** One line of progress (no newline). */
  readonly out: (line: string) => void;
  /** Aborted on Ctrl-C: the demo stops at the next step and tears down. */
  readonly signal?: AbortSignal;
  /** Resolves when the pods should be torn down (default: at once, after the pings). */
  readonly hold?: (signal: AbortSignal | undefined) => Promise<void>;
}

export interface DemoPod {
  readonly containerId: string;
  readonly netns: string;
  readonly addresses: readonly string[];
}

export interface DemoReport {
  readonly pods: readonly DemoPod[];
  readonly pings: readonly { from: string; to: string; ok: boolean }[];
  /** Problems the teardown met (empty: nothing left behind). */
  readonly teardown: readonly string[];
}

/** The demo was interrupted (Ctrl-C); teardown ran. */
export class DemoInterruptedError extends Error {
  override readonly name = 'DemoInterruptedError';
}

/** bin/podipam of this installation (this file is dist/src/runtime/demo.js). */
export const PODIPAM_BIN = fileURLToPath(new URL('../../../bin/podipam', import.meta.url));

function validate(o: DemoOptions): void {
  if (!Number.isInteger(o.pods) || o.pods < 1 || o.pods > 64) throw new RangeError(`--pods ${o.pods}: must be an integer from 1 to 64`);
  if (!Object.hasOwn(DEMO_BACKENDS, o.backend))
    throw new RangeError(`--backend ${JSON.stringify(o.backend)}: use one of ${Object.keys(DEMO_BACKENDS).join(', ')}`);
  let p;
  try {
    p = parsePrefix(o.subnet);
  } catch (e) {
    throw new RangeError(`--subnet ${JSON.stringify(o.subnet)}: ${(e as Error).message}`, { cause: e });
  }
  if (p.family !== 4 || p.len < 16 || p.len > 28) throw new RangeError(`--subnet ${JSON.stringify(o.subnet)}: must be an IPv4 prefix from /16 to /28`);
  if (2 ** (32 - p.len) - 3 < o.pods) throw new RangeError(`--subnet ${o.subnet} has no room for ${o.pods} pods`);
}

/** Runs the demo; see the file comment. Throws DemoInterruptedError after a teardown on abort. */
export async function runDemo(o: DemoOptions): Promise<DemoReport> {
  validate(o);
  if (process.getuid?.() !== 0) throw new Error('podipam demo needs root (it creates network namespaces, a bridge and veths)');
  for (const p of ['bridge', 'loopback']) findPlugin(p, o.pluginDirs); // a clear error before anything is made
  const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-8);
  const bridge = `pdemo${tag}`.slice(0, 15);
  const dir = mkdtempSync(join(tmpdir(), 'podipam-demo-'));
  const undo: (() => Promise<void> | void)[] = [() => rmSync(dir, { recursive: true, force: true })];
  const teardown: string[] = [];
  const pods: DemoPod[] = [];
  const pings: { from: string; to: string; ok: boolean }[] = [];
  let started = false;
  const stopIfAborted = () => {
    if (o.signal?.aborted) throw new DemoInterruptedError('interrupted');
  };
  try {
    const ipam = await DEMO_BACKENDS[o.backend]!(dir, o.subnet);
    undo.push(async () => {
      const line = await ipam.close();
      if (line) o.out(line);
    });
    const binDir = join(dir, 'bin');
    mkdirSync(binDir);
    symlinkSync(ipam.plugin ?? PODIPAM_BIN, join(binDir, 'podipam'));
    const runtime = new CniRuntime({ binDirs: [binDir, ...o.pluginDirs], cacheDir: join(dir, 'cache'), timeoutMs: o.timeoutMs });
    const lists: NetworkConfigList[] = [
      { cniVersion: '1.0.0', name: 'demo-lo', plugins: [{ type: 'loopback' }] },
      { cniVersion: '1.0.0', name: 'demo-pods', plugins: [{ type: 'bridge', bridge, isGateway: false, ipMasq: false, ipam: ipam.ipam }] },
    ].map((l) => parseConfList(`(demo network ${l.name})`, Buffer.from(JSON.stringify(l))));
    const nets: PodNetwork[] = [
      { list: lists[0]!, ifname: 'lo' },
      { list: lists[1]!, ifname: 'eth0' },
    ];
    // The bridge outlives its ports (the bridge plugin never deletes it): remove it at the end.
    undo.push(() => {
      spawnSync('ip', ['link', 'del', bridge], { timeout: 10_000 });
    });
    started = true;
    o.out(`podipam demo: ${o.pods} pod(s), back end ${o.backend}, subnet ${o.subnet}, bridge ${bridge}`);
    const podNames = Array.from({ length: o.pods }, (_, i) => ({ id: `demo-${tag}-${i}`, ns: `podipam-demo-${tag}-${i}` }));
    for (const p of podNames) {
      stopIfAborted();
      const netns = createNetns(p.ns);
      undo.push(() => deleteNetns(p.ns));
      undo.push(async () => {
        try {
          await detachNetworks(runtime, { containerId: p.id, netns }, nets);
        } catch (e) {
          teardown.push((e as Error).message);
        }
      });
    }
    stopIfAborted();
    const t0 = performance.now();
    const results = await Promise.all(podNames.map((p) => attachNetworks(runtime, { containerId: p.id, netns: `/var/run/netns/${p.ns}` }, nets)));
    const ms = Math.round(performance.now() - t0);
    results.forEach((r, i) => pods.push({ containerId: podNames[i]!.id, netns: podNames[i]!.ns, addresses: resultAddresses(r[1]) }));
    o.out(`attached ${o.pods} pod(s) to demo-lo + demo-pods in ${ms} ms:`);
    for (const p of pods) o.out(`  ${p.containerId}  netns ${p.netns}  eth0 ${p.addresses.join(', ')}`);
    if (pods.length < 2) o.out('one pod: no peer to ping');
    for (const [i, p] of pods.entries()) {
      if (pods.length < 2) break;
      stopIfAborted();
      const peer = pods[(i + 1) % pods.length]!;
      const to = peer.addresses.map((a) => formatAddr(parseCidr(a).addr)).find((a) => !a.includes(':'));
      if (!to) continue;
      let r = execInNetns(p.netns, ['ping', '-c1', '-W1', to]);
      for (let attempt = 0; !r.ok && attempt < 3 && !o.signal?.aborted; attempt++) r = execInNetns(p.netns, ['ping', '-c1', '-W1', to]);
      pings.push({ from: p.containerId, to: peer.containerId, ok: r.ok });
      o.out(`  ping ${p.containerId} -> ${peer.containerId} (${to}): ${r.ok ? 'ok' : `FAILED ${r.out.split('\n').pop()}`}`);
    }
    if (o.hold) await o.hold(o.signal);
    stopIfAborted();
  } finally {
    if (o.signal?.aborted) o.out('interrupted: tearing down');
    for (const u of undo.reverse()) {
      try {
        await u();
      } catch (e) {
        teardown.push((e as Error).message);
      }
    }
    if (started)
      o.out(
        teardown.length ? `teardown left problems: ${teardown.join('; ')}` : `torn down: pods deleted, namespaces, bridge ${bridge} and scratch files removed`,
      );
  }
  return { pods, pings, teardown };
}
