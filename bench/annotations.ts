/**
 * Pod-aware allocation on the pod start path: ADD+DEL through the native shim into one agent in
 * cluster mode (SQLite datastore, an API server double for its watch-fed pod cache), side by
 * side with host-local, the subjects alternating so they share the machine's load:
 *
 *   host-local          the reference plugin, one range
 *   plain               a pod without annotations
 *   runtime annotation  `podipam.io/pools: blue` in runtimeConfig (as containerd passes it)
 *   namespace (cache)   the pod's namespace is annotated `podipam.io/pools: blue` in the API
 *                       server only: the agent's pod cache supplies it
 *
 * Per subject: ADD and DEL p50/p99, the ADD p50 against host-local's, the datastore round
 * trips per ADD+DEL (the agent's counter) and the API server requests made during the calls
 * (the double's counters: the cache must add none) — each call spawned from Node — then the same
 * subjects through bench/native/cni-driver.c (posix_spawn, as a runtime execs a plugin, ~0.1 ms of
 * harness per call instead of Node's ~1.5 ms, which pulls every ratio towards 1): p50/p99 and the
 * ratio to host-local. Knob: PODIPAM_BENCH_PAIRS (200).
 * Run alone: `node dist/bench/index.js annotations` after a build.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent, AS_SHIPPED } from '../test/helpers/agent.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../test/helpers/fake-kube-apiserver.js';
import { HOST_LOCAL_BIN, runCliSync } from '../test/helpers/plugin.js';
import { makeTempDir } from '../test/helpers/tmp.js';
import { PAIRS, ms, q, ratio } from './lib/cni-subject.js';
import { buildLeanDrivers, seqTimes } from './lib/lean-driver.js';

const NODE = 'bench-node';

interface Subject {
  readonly name: string;
  readonly bin: string;
  readonly conf: Record<string, unknown>;
  readonly env: Record<string, string>;
  readonly namespace?: string;
}

interface Figures {
  add: number[];
  del: number[];
  trips: number;
  api: number;
}

function call(s: Subject, command: string, id: string): number {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    CNI_COMMAND: command,
    CNI_CONTAINERID: id,
    CNI_IFNAME: 'eth0',
    CNI_NETNS: '/var/run/netns/bench',
    CNI_PATH: '/usr/lib/cni',
    ...(s.namespace ? { CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${s.namespace};K8S_POD_NAME=${id};K8S_POD_UID=uid-${id}` } : {}),
    ...s.env,
  };
  const t0 = performance.now();
  const r = spawnSync(s.bin, [], { env, input: JSON.stringify(s.conf), encoding: 'utf8' });
  const t = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${s.name} ${command} ${id}: ${r.stdout}${r.stderr}`);
  return t;
}

const apiRequests = (f: FakeKubeApiServer): number =>
  [f.podRequests, f.namespaceRequests, f.nodeRequests].reduce((n, c) => n + c.get + c.list + c.watch, 0) + f.podRequests.delete;

async function waitSynced(agent: RunningAgent): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const st = (await agent.status()) as { podCache?: { synced: boolean } };
    if (st.podCache?.synced) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the agent pod cache did not sync within 10 s');
}

/** The subjects again through the posix_spawn driver: ADD/DEL p50 and p99, ADD p50 against host-local's. */
function lean(dir: string, subjects: readonly Subject[], rows: string[]): void {
  const { driver } = buildLeanDrivers(dir);
  const seq = new Map(subjects.map((s): [string, { add: number[]; del: number[] }] => [s.name, { add: [], del: [] }]));
  for (let round = 0; round < 4; round++) {
    for (const s of round % 2 ? subjects : [...subjects].reverse()) {
      const conf = join(dir, `lean-${s.name.replace(/\W+/g, '-')}.json`);
      writeFileSync(conf, JSON.stringify({ ...s.conf, name: `lean-${String(s.conf.name)}` }));
      const env = {
        PATH: process.env.PATH,
        ...s.env,
        ...(s.namespace ? { CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${s.namespace};K8S_POD_NAME=lean;K8S_POD_UID=uid-lean` } : {}),
      };
      const r = spawnSync(driver, ['seq', s.bin, conf, String(Math.ceil(PAIRS / 4))], { env, encoding: 'utf8', maxBuffer: 1 << 26 });
      if (r.status !== 0) throw new Error(`cni-driver seq ${s.name}: ${r.stderr}`);
      const t = seqTimes(r.stdout);
      seq.get(s.name)!.add.push(...t.add);
      seq.get(s.name)!.del.push(...t.del);
    }
  }
  const hl = seq.get('host-local')!;
  const head = `${'lean driver'.padEnd(20)} ${['ADD p50', 'ADD p99', 'DEL p50', 'ADD p50/h-l'].map((c) => c.padStart(12)).join(' ')}`;
  console.log(`  ${head}`);
  rows.push(head);
  for (const s of subjects) {
    const f = seq.get(s.name)!;
    const line = `${s.name.padEnd(20)} ${[ms(q(f.add, 0.5)), ms(q(f.add, 0.99)), ms(q(f.del, 0.5)), ratio(q(f.add, 0.5), q(hl.add, 0.5))].map((c) => c.padStart(12)).join(' ')}`;
    console.log(`  ${line}`);
    rows.push(line);
  }
}

export async function run(): Promise<readonly string[]> {
  requireShim();
  const dir = makeTempDir('bench-ann');
  const fake = await startFakeKubeApiServer();
  let agent: RunningAgent | undefined;
  try {
    const url = `sqlite:${join(dir.path, 'ds.db')}`;
    for (const [name, cidr] of [
      ['a-main', '10.200.0.0/16'],
      ['blue', '10.201.0.0/16'],
    ] as const) {
      const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr, '--block-size', '26']);
      if (r.code !== 0) throw new Error(`pool create ${name}: ${r.stderr}`);
    }
    fake.addNode(NODE);
    fake.addNamespace('plain');
    fake.addNamespace('placed', { 'podipam.io/pools': 'blue' });
    const kubeconfig = join(dir.path, 'kubeconfig');
    fake.writeKubeconfig(kubeconfig);
    const a = await startAgent(join(dir.path, 'agent.sock'), ['--node', NODE, '--datastore', url, '--kubeconfig', kubeconfig], {}, AS_SHIPPED);
    agent = a;
    await waitSynced(a);
    const ipam = { type: 'podipam', agent: a.socket, datastore: url, nodeName: NODE };
    const shimEnv = { PODIPAM_AGENT_SOCKET: a.socket, PODIPAM_PLUGIN: '' };
    const subjects: Subject[] = [
      {
        name: 'host-local',
        bin: HOST_LOCAL_BIN,
        conf: { cniVersion: '1.0.0', name: 'bench-hl', ipam: { type: 'host-local', dataDir: join(dir.path, 'hl'), ranges: [[{ subnet: '10.202.0.0/16' }]] } },
        env: {},
      },
      { name: 'plain', bin: SHIM_BIN, conf: { cniVersion: '1.0.0', name: 'bench-plain', ipam }, env: shimEnv, namespace: 'plain' },
      {
        name: 'runtime annotation',
        bin: SHIM_BIN,
        conf: { cniVersion: '1.0.0', name: 'bench-rt', ipam, runtimeConfig: { 'io.kubernetes.cri.pod-annotations': { 'podipam.io/pools': 'blue' } } },
        env: shimEnv,
        namespace: 'plain',
      },
      { name: 'namespace (cache)', bin: SHIM_BIN, conf: { cniVersion: '1.0.0', name: 'bench-ns', ipam }, env: shimEnv, namespace: 'placed' },
    ];
    const out = new Map(subjects.map((s): [string, Figures] => [s.name, { add: [], del: [], trips: 0, api: 0 }]));
    // One warm-up pair each (the first ADD claims the network's block).
    for (const s of subjects) {
      call(s, 'ADD', 'warm0');
      call(s, 'DEL', 'warm0');
    }
    for (let i = 0; i < PAIRS; i++) {
      const order = i % 2 ? subjects : [...subjects].reverse();
      for (const s of order) {
        const f = out.get(s.name)!;
        const trips0 = s.bin === SHIM_BIN ? (await a.status()).datastore.roundTrips : 0;
        const api0 = apiRequests(fake);
        f.add.push(call(s, 'ADD', `p${i}`));
        f.del.push(call(s, 'DEL', `p${i}`));
        f.api += apiRequests(fake) - api0;
        if (s.bin === SHIM_BIN) f.trips += (await a.status()).datastore.roundTrips - trips0;
      }
    }
    const hl = out.get('host-local')!;
    const rows: string[] = [];
    const head = `${'subject'.padEnd(20)} ${['ADD p50', 'ADD p99', 'DEL p50', 'ADD p50/h-l', 'trips/pair', 'API reqs'].map((c) => c.padStart(12)).join(' ')}`;
    console.log(
      `annotations: ${PAIRS} sequential ADD+DEL pairs per subject (alternating), cluster mode through shim + agent on SQLite, pod cache on an API server double`,
    );
    console.log(`  ${head}`);
    rows.push(head);
    for (const s of subjects) {
      const f = out.get(s.name)!;
      const line = `${s.name.padEnd(20)} ${[ms(q(f.add, 0.5)), ms(q(f.add, 0.99)), ms(q(f.del, 0.5)), ratio(q(f.add, 0.5), q(hl.add, 0.5)), s.bin === SHIM_BIN ? (f.trips / PAIRS).toFixed(2) : '-', String(f.api)].map((c) => c.padStart(12)).join(' ')}`;
      console.log(`  ${line}`);
      rows.push(line);
    }
    lean(dir.path, subjects, rows);
    return rows.map((r) => `annotations ${r}`);
  } finally {
    await agent?.stop();
    await fake.close();
    dir.remove();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await run();
}
