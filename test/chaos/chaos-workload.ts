/**
 * The partition rig's pods: on every node, `lanes` loops that each start a pod (a CNI ADD
 * through the native shim, run inside the node's network namespace with `ip netns exec`, to the
 * node's agent), keep it a while, and stop it (DEL) — as kubelet does through containerd: an ADD
 * that fails is followed by a DEL of the same sandbox, and a DEL that fails is retried until it
 * succeeds (each lane retries its own before starting another pod; `drain` retries all of them
 * at the end). Every call is recorded with its start and end (CallRecord) for the checker.
 *
 * A call that has not answered after `callTimeoutMs` is killed and recorded as failed ("timed
 * out"): its outcome is unknown, which the checker treats as such.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SHIM_BIN } from '../helpers/agent.js';
import { callEnv } from '../helpers/plugin.js';
import type { CallKind, CallRecord } from './history-checker.js';

export interface WorkloadNode {
  /** Node name (the agent's --node, the cluster network's nodeName). */
  readonly name: string;
  readonly netns: string;
  readonly socket: string;
  /** Directory for the cluster network's hint files. */
  readonly cacheDir: string;
}

export interface WorkloadNetwork {
  readonly name: string;
  /** Relative weight in the lanes' choice of network. */
  readonly weight: number;
  /** The `ipam` section of the network's config on `node`. */
  ipam(node: WorkloadNode): Record<string, unknown>;
}

export interface WorkloadOptions {
  readonly nodes: readonly WorkloadNode[];
  readonly networks: readonly WorkloadNetwork[];
  readonly lanes: number;
  /** How long a started pod is kept, ms (uniform in [min, max]). */
  readonly holdMs: readonly [number, number];
  readonly callTimeoutMs: number;
  /** The seeded random source (0 ≤ x < 1). */
  readonly random: () => number;
  /** Extra environment of every shim call (PODIPAM_PLUGIN for its fallback, test hooks). */
  readonly env: Readonly<Record<string, string>>;
}

interface Attachment {
  readonly node: WorkloadNode;
  readonly network: WorkloadNetwork;
  readonly containerId: string;
  readonly args: string;
}

export class Workload {
  readonly calls: CallRecord[] = [];
  #seq = 0;
  #stopping = false;
  #lanes: Promise<void>[] = [];
  /** Attachments whose DEL has not yet succeeded after a failure, per lane. */
  readonly #pending: Attachment[][] = [];
  #pods = 0;

  constructor(private readonly o: WorkloadOptions) {}

  start(): void {
    for (const node of this.o.nodes) {
      for (let l = 0; l < this.o.lanes; l++) {
        const pending: Attachment[] = [];
        this.#pending.push(pending);
        this.#lanes.push(this.#lane(node, pending));
      }
    }
  }

  /** For a run that failed: no more pods, and every shim still running is killed now. */
  abort(): void {
    this.#stopping = true;
    for (const c of live) c.kill('SIGKILL');
  }

  /** Stops starting pods; resolves once every lane has finished its current pod. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#lanes);
  }

  /** Retries every pending DEL every 500 ms until all succeed or `deadlineMs` passes; the ones left. */
  async drain(deadlineMs: number): Promise<number> {
    const until = Date.now() + deadlineMs;
    for (;;) {
      for (const pending of this.#pending) {
        for (const a of [...pending]) if ((await this.#call(a, 'DEL')).ok) pending.splice(pending.indexOf(a), 1);
      }
      const left = this.#pending.reduce((n, p) => n + p.length, 0);
      if (left === 0 || Date.now() > until) return left;
      await sleep(500);
    }
  }

  async #lane(node: WorkloadNode, pending: Attachment[]): Promise<void> {
    while (!this.#stopping) {
      for (const a of [...pending]) if (!this.#stopping && (await this.#call(a, 'DEL')).ok) pending.splice(pending.indexOf(a), 1);
      const a = this.#attachment(node);
      const add = await this.#call(a, 'ADD');
      if (add.ok) await sleep(this.o.holdMs[0] + this.o.random() * (this.o.holdMs[1] - this.o.holdMs[0]));
      const del = await this.#call(a, 'DEL');
      if (!del.ok) pending.push(a);
      // Under a fault, calls fail fast: do not spin.
      if (!add.ok || !del.ok) await sleep(100 + this.o.random() * 200);
    }
  }

  #attachment(node: WorkloadNode): Attachment {
    const total = this.o.networks.reduce((n, x) => n + x.weight, 0);
    let r = this.o.random() * total;
    const network = this.o.networks.find((x) => (r -= x.weight) < 0) ?? this.o.networks[this.o.networks.length - 1]!;
    const containerId = randomBytes(32).toString('hex');
    const pod = `pod-${node.name}-${++this.#pods}`;
    const args = `IgnoreUnknown=true;K8S_POD_NAMESPACE=chaos;K8S_POD_NAME=${pod};K8S_POD_INFRA_CONTAINER_ID=${containerId};K8S_POD_UID=${randomUUID()}`;
    return { node, network, containerId, args };
  }

  async #call(a: Attachment, kind: CallKind): Promise<CallRecord> {
    const env = callEnv({
      command: kind,
      containerId: a.containerId,
      ifname: 'eth0',
      netns: `/var/run/netns/chaos-${a.containerId.slice(0, 12)}`,
      args: a.args,
      env: { PODIPAM_AGENT_SOCKET: a.node.socket, ...this.o.env },
    });
    const config = JSON.stringify({ cniVersion: '1.0.0', name: a.network.name, ipam: a.network.ipam(a.node) });
    const start = Date.now();
    const r = await runIn(a.node.netns, env, config, this.o.callTimeoutMs);
    const end = Date.now();
    let addresses: string[] = [];
    let ok = r.code === 0;
    let error: string | undefined = ok
      ? undefined
      : r.timedOut
        ? `timed out after ${this.o.callTimeoutMs} ms`
        : `exit ${r.code}: ${r.stdout}${r.stderr}`.trim();
    if (ok && kind === 'ADD') {
      try {
        const res = JSON.parse(r.stdout) as { ips?: { address?: string }[] };
        addresses = (res.ips ?? []).map((ip) => String(ip.address).split('/')[0]!);
      } catch {
        ok = false;
        error = `exit 0 but not a result: ${r.stdout}`;
      }
    }
    const rec: CallRecord = {
      seq: this.#seq++,
      node: a.node.name,
      network: a.network.name,
      containerId: a.containerId,
      ifname: 'eth0',
      kind,
      start,
      end,
      ok,
      addresses,
      ...(error === undefined ? {} : { error }),
    };
    this.calls.push(rec);
    return rec;
  }
}

/** Shims running now (abort() kills them). */
const live = new Set<ChildProcess>();

/** Runs the shim inside `netns` with `env` and `stdin`; kills it after `timeoutMs`. */
function runIn(
  netns: string,
  env: NodeJS.ProcessEnv,
  stdin: string,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', netns, SHIM_BIN], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    live.add(child);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
    child.on('error', (e) => (stderr += String(e)));
    child.on('close', (code) => {
      live.delete(child);
      clearTimeout(timer);
      resolve({ code, stdout, stderr, timedOut });
    });
  });
}
