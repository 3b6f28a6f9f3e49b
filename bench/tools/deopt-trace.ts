/**
 * What V8 throws away after an agent's warm-up: an agent of this dist/ (on a SQLite datastore of
 * its own, dual-stack pools, as shipped: `--optimize warm-up`) started under
 * `--trace-deopt-verbose`, then, once it is ready, PAIRS ADD/DEL pairs made as a runtime makes
 * them (the JavaScript client of the protocol; CNI_ARGS with namespace, name, sandbox and UID, as
 * containerd passes them) in MODE: `warm` (the agent's warm pool), `local` (a local range) or
 * `cluster` (the datastore's pools). Prints the functions the warm-up left deoptimised when the
 * agent was ready (bench/lib/left-deoptimised.ts, from V8's --trace-opt too), then every
 * deoptimisation after the agent was ready with its reason and source position (with V8
 * optimising during the warm-up only, a function thrown away in either way runs in the baseline
 * tiers for the agent's life), and how many. A one-off tool
 * (bench/tools/: not one of `npm run bench`'s modules).
 *
 *   node dist/bench/tools/deopt-trace.js [warm|local|cluster] [pairs]
 *
 * PODIPAM_BENCH_DEOPT_DATASTORE=etcd: the agent on a 1-member etcd started for the run (default: SQLite).
 * PODIPAM_BENCH_DEOPT_OUT=FILE writes V8's whole trace after the agent was ready to FILE (the
 * maps and inlined frames behind each line).
 */
import { spawn } from 'node:child_process';
import { openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClusterIpam } from '../../src/cluster/service/index.js';
import { openStore } from '../../src/store/index.js';
import { callAgent } from '../../src/wire/agent-client.js';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { startEtcd } from '../../test/helpers/etcd.js';
import { leftDeoptimised } from '../lib/left-deoptimised.js';

const MODES = ['warm', 'local', 'cluster'] as const;
const mode = process.argv[2] ?? 'warm';
const pairs = Number(process.argv[3] ?? 500);
if (!(MODES as readonly string[]).includes(mode)) throw new Error(`mode must be one of ${MODES.join(', ')}: got ${mode}`);
if (!(Number.isInteger(pairs) && pairs >= 1 && pairs <= 20_000)) throw new Error(`pairs must be an integer from 1 to 20000: got ${process.argv[3]}`);

const dist = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const dir = makeTempDir('deopt-trace');
const MIN_IDLE = 64;
const opts = { connectTimeoutMs: 2000, answerTimeoutMs: 10_000 };
// PODIPAM_BENCH_DEOPT_DATASTORE=etcd: the agent's datastore a 1-member etcd started for the run (else a SQLite file).
const etcd = process.env['PODIPAM_BENCH_DEOPT_DATASTORE'] === 'etcd' ? await startEtcd({ members: 1 }) : undefined;
try {
  const url = etcd?.url ?? `sqlite:${join(dir.path, 'ds.db')}`;
  const admin = new ClusterIpam(await openStore(url));
  await admin.createPool({ name: 'v4', cidr: '10.64.0.0/16' });
  await admin.createPool({ name: 'v6', cidr: 'fd00:64::/64' });
  await admin.store.close();
  const trace = join(dir.path, 'trace.txt');
  const socket = join(dir.path, 'agent.sock');
  const args = [
    'agent',
    '--socket',
    socket,
    '--node',
    'deopt',
    '--datastore',
    url,
    '--data-dir',
    join(dir.path, 'agent'),
    '--metrics-listen',
    'off',
    '--no-masquerade',
  ];
  const pool = mode === 'warm' ? ['--min-idle', String(MIN_IDLE), '--max-idle', '256', '--capacity', '1024', '--cooldown', '1s'] : [];
  // V8 prints its trace with C stdio, block-buffered into a file: line-buffered (stdbuf), the
  // file's size when the agent is ready is where the warm-up's lines end.
  const child = spawn('stdbuf', ['-oL', process.execPath, '--trace-opt', '--trace-deopt-verbose', join(dist, 'src/main.js'), ...args, ...pool], {
    stdio: ['ignore', openSync(trace, 'w'), 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the agent exited: ${stderr}`);
      try {
        const st = JSON.parse((await callAgent(socket, { kind: 'status' }, { connectTimeoutMs: 500, answerTimeoutMs: 5000 })).body.toString('utf8')) as {
          warmPool?: { ready: boolean; pools: Record<string, { idle: number }> };
          warmUp?: unknown;
          optimizing?: boolean;
        };
        if (mode !== 'warm' || (st.warmPool?.ready && (st.warmPool.pools.ipv4?.idle ?? 0) >= MIN_IDLE)) {
          // A warm-up short of its rounds (a busy machine) leaves V8 optimising: deoptimisations then do not last.
          console.log(`warm-up ${JSON.stringify(st.warmUp)}; V8 optimising after it: ${String(st.optimizing)}`);
          break;
        }
      } catch {
        /* not listening yet */
      }
      if (i > 600) throw new Error(`the agent was not ready in 30 s: ${stderr}`);
      await new Promise((w) => setTimeout(w, 50));
    }
    const readyAt = statSync(trace).size;
    // What the warm-up left deoptimised: with V8 stopped after it, those run in the baseline tiers for good.
    const left = leftDeoptimised(readFileSync(trace).subarray(0, readyAt).toString('utf8'));
    for (const l of left) console.log(`left deoptimised by the warm-up: ${l.name}: ${l.reason}`);
    console.log(`${left.length} functions left deoptimised when the agent was ready`);
    const ipam =
      mode === 'warm'
        ? { type: 'podipam', agent: socket }
        : mode === 'local'
          ? { type: 'podipam', ranges: [[{ subnet: '10.70.0.0/16' }]], dataDir: join(dir.path, 'local') }
          : { type: 'podipam', datastore: url, nodeName: 'deopt', pools: ['v4'] };
    const stdin = Buffer.from(JSON.stringify({ cniVersion: '1.0.0', name: 'deoptnet', type: 'bridge', ipam }));
    for (let i = 0; i < pairs; i++) {
      const id = `deopt${String(i).padStart(6, '0')}`;
      for (const verb of ['ADD', 'DEL']) {
        const env = {
          CNI_COMMAND: verb,
          CNI_CONTAINERID: id,
          CNI_NETNS: '/var/run/netns/deopt',
          CNI_IFNAME: 'eth0',
          CNI_PATH: '/opt/cni/bin',
          CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p${i};K8S_POD_INFRA_CONTAINER_ID=${id};K8S_POD_UID=00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        };
        const a = await callAgent(socket, { kind: 'cni', call: { env, stdin } }, opts);
        if (a.status !== 0) throw new Error(`${verb} ${id} failed: ${a.body.toString('utf8')}`);
      }
      await new Promise((w) => setTimeout(w, 1));
    }
    // Read once the agent has exited (its stdio flushed).
    child.kill('SIGTERM');
    await new Promise((w) => (child.exitCode !== null || child.signalCode !== null ? w(undefined) : child.once('exit', w)));
    const afterText = readFileSync(trace).subarray(readyAt).toString('utf8');
    // PODIPAM_BENCH_DEOPT_OUT=FILE: V8's whole trace after the agent was ready (maps, inlined frames), to read further.
    const out = process.env['PODIPAM_BENCH_DEOPT_OUT'];
    if (out) writeFileSync(out, afterText);
    const after = afterText.split('\n');
    let n = 0;
    for (let i = 0; i < after.length; i++) {
      const line = after[i]!;
      const bailout = /^\[bailout \(kind: ([^,]+), reason: ([^)]*)\): begin\. deoptimizing \S+ <JSFunction ([^ >]*)/.exec(line);
      const marked = /^\[marking dependent code .*<SharedFunctionInfo ([^>]*)>\).*reason: ([^\]]*)\]/.exec(line);
      if (bailout) {
        n++;
        const at = /;;; deoptimize at <([^>]*)>/.exec(after[i + 1] ?? '');
        console.log(`${bailout[3] || '(anonymous)'}: ${bailout[2]} (${bailout[1]}) at ${at ? at[1]!.replace(`file://${dist}/`, '') : '?'}`);
      } else if (marked) {
        n++;
        console.log(`${marked[1]}: ${marked[2]} (marked)`);
      }
    }
    console.log(`${n} deoptimisations after the agent was ready, over ${pairs} ${mode} ADD/DEL pairs`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((w) => (child.exitCode !== null || child.signalCode !== null ? w(undefined) : child.once('exit', w)));
  }
} finally {
  await etcd?.stop();
  dir.remove();
}
