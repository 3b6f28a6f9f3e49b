/**
 * Runtime reconciliation under a real containerd (test/helpers/containerd.ts, driven over CRI
 * as kubelet drives it): real sandboxes get addresses through install-cni's conflist, the shim
 * and the agent (cluster back end on SQLite); allocations are planted for container ids the
 * runtime never had (cluster mode and local mode, through bin/podipam as the plain plugin).
 * Then: `podipam gc --runtime-endpoint … --dry-run` and `ipam check --runtime-endpoint` list
 * exactly the planted ones; the agent
 * with `--runtime-endpoint` frees nothing while its socket is gone, containerd hangs (SIGSTOP) or
 * is killed and started again on the same dirs (its shims keep the sandboxes),
 * frees exactly the planted ones once it answers again, and never frees the address of a
 * sandbox whose ADD is slow (a wrapper around the IPAM plugin sleeps after it answered: the
 * agent's call is over, the runtime does not list the sandbox yet — only the grace protects it).
 * Fails with the reason when containerd cannot run here; never skips.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startContainerd, type Containerd } from '../helpers/containerd.js';
import { criErrorText } from '../helpers/cri-client.js';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { PODIPAM_BIN, runCliSync, runPluginSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { stopProcess } from '../helpers/proc-locks.js';
import { cliOn, installAgentCni } from '../helpers/agent-cni.js';
import { freePort } from '../helpers/free-port.js';
import type { AgentStatus } from '../../src/agent/agent-stats.js';
import { openStore, type Store } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';

const NODE = 'rr-node';
const GRACE = '6s';
const SLOW_ADD_S = 4; // below the grace: a creation the grace is meant to cover

test(
  'containerd: planted allocations are freed after the grace while every real sandbox keeps its address; nothing freed while the runtime hangs or its socket is gone; a slow ADD is never freed mid-creation; gc --dry-run lists exactly the leaks',
  { timeout: 300_000 },
  async (t) => {
    requireShim();
    const dir = makeTempDir('cri-reconcile');
    const url = `sqlite:${join(dir.path, 'ds.db')}`;
    const socket = join(dir.path, 'run', 'agent.sock');
    const localDir = join(dir.path, 'networks');
    const criLink = join(dir.path, 'cri.sock');
    let ctd: Containerd | undefined;
    let agent: RunningAgent | undefined;
    let stopped: number | undefined;
    let store: Store | undefined;
    try {
      const rt = await startContainerd({ ptp: '/usr/lib/cni/ptp', loopback: '/usr/lib/cni/loopback' });
      ctd = rt;
      const cli = cliOn(url);
      cli(['pool', 'create', 'rr', '--cidr', '10.238.0.0/24', '--block-size', '28']);
      const conflistPath = installAgentCni(rt, url, { socket, node: NODE });
      const network = (JSON.parse(readFileSync(conflistPath, 'utf8')) as { name: string }).name;
      // The IPAM plugin the runtime runs: the shim, behind a wrapper that sleeps after an ADD answered while `slow` exists.
      const slowFlag = join(dir.path, 'slow');
      renameSync(join(rt.cniBinDir, 'podipam'), join(rt.cniBinDir, 'podipam-real'));
      writeFileSync(
        join(rt.cniBinDir, 'podipam'),
        `#!/bin/sh\nout=$("${join(rt.cniBinDir, 'podipam-real')}")\nrc=$?\nif [ "$CNI_COMMAND" = ADD ] && [ -e "${slowFlag}" ]; then sleep ${SLOW_ADD_S}; fi\nprintf '%s' "$out"\nexit $rc\n`,
      );
      chmodSync(join(rt.cniBinDir, 'podipam'), 0o755);
      agent = await startAgent(socket, ['--node', NODE, '--datastore', url]);

      const pod = (i: number, name = `web-${i}`) => ({ name, namespace: 'shop', uid: `00000000-0000-4000-8000-0000000000${String(i).padStart(2, '0')}` });
      const run = (i: number, name?: string) =>
        rt.cri.runPodSandbox(pod(i, name), rt.logDir).catch((e: unknown) => assert.fail(`RunPodSandbox: ${criErrorText(e)}\nagent:\n${agent?.log()}`));
      const real = [await run(1), await run(2), await run(3)];
      const realIps = await Promise.all(real.map(async (id) => (await rt.cri.status(id)).ips[0]!));

      // Planted: what the plain plugin allocated for containers the runtime never had.
      const plant = (id: string, config: unknown) => {
        const r = runPluginSync(PODIPAM_BIN, { command: 'ADD', containerId: id, ifname: 'eth0', config });
        assert.equal(r.code, 0, `plant ${id}: ${r.stdout}${r.stderr}`);
      };
      const clusterConf = { cniVersion: '1.0.0', name: network, ipam: { type: 'podipam', datastore: url, nodeName: NODE, cacheDir: join(dir.path, 'hints') } };
      const localConf = { cniVersion: '1.0.0', name: 'side', ipam: { type: 'podipam', ranges: [[{ subnet: '10.239.0.0/24' }]], dataDir: localDir } };
      plant('leak-a', clusterConf);
      plant('leak-b', clusterConf);
      plant('leak-local', localConf);
      // A second network of a real sandbox (its id is listed): kept.
      plant(real[0]!, localConf);
      const planted = ['leak-a', 'leak-b', 'leak-local'];
      store = await openStore(url);
      const ipam = new ClusterIpam(store);
      const known = new Set([...real, ...planted]);
      /** Which known container ids hold cluster addresses (their handle names them). */
      const clusterHolders = async (): Promise<string[]> => {
        const items = (await ipam.listAllocations({ limit: 200 })).items;
        return [...known].filter((id) => items.some((x) => x.handle.includes(id))).sort();
      };
      const localHolders = (): string[] =>
        existsSync(join(localDir, 'side'))
          ? readdirSync(join(localDir, 'side'))
              .filter((n) => /^\d/.test(n))
              .map((n) => readFileSync(join(localDir, 'side', n), 'utf8').split('\r\n')[0]!)
              .sort()
          : [];
      assert.deepEqual(await clusterHolders(), [...real, 'leak-a', 'leak-b'].sort());

      await sleep(6_500); // past the grace
      const gcArgs = (extra: readonly string[]) => [
        'gc',
        '--runtime-endpoint',
        `unix://${rt.socket}`,
        '--runtime-list-interval',
        '1s',
        '--grace',
        GRACE,
        '--data-dir',
        localDir,
        '--node',
        NODE,
        '--json',
        ...extra,
      ];
      const dry = JSON.parse(cli(gcArgs(['--dry-run']))) as { dryRun: boolean; items: { containerId: string; ageSeconds: number; lists: string[] }[] };
      assert.equal(dry.dryRun, true);
      assert.deepEqual(dry.items.map((i) => i.containerId).sort(), planted, `gc --dry-run lists exactly the planted allocations: ${JSON.stringify(dry)}`);
      for (const i of dry.items) assert.ok(i.ageSeconds >= 6 && i.lists.length === 2, JSON.stringify(i));
      // ipam check on this node: the same ones, as found leaks (exit 1), from a runtime pass of its own.
      const check = runCliSync(url, [
        'ipam',
        'check',
        '--json',
        '--runtime-endpoint',
        `unix://${rt.socket}`,
        '--runtime-list-interval',
        '1s',
        '--grace',
        GRACE,
        '--data-dir',
        localDir,
        '--node',
        NODE,
      ]);
      assert.equal(check.code, 1, check.stderr);
      const report = JSON.parse(check.stdout) as { leaks: unknown[]; runtime: { node: string; provable: { containerId: string }[]; suspected: unknown[] } };
      assert.deepEqual(report.leaks, []);
      assert.equal(report.runtime.node, NODE);
      assert.deepEqual(report.runtime.provable.map((p) => p.containerId).sort(), planted);
      assert.deepEqual(report.runtime.suspected, []);
      assert.deepEqual(await clusterHolders(), [...real, 'leak-a', 'leak-b'].sort(), 'the dry run freed nothing');
      assert.deepEqual(localHolders(), ['leak-local', real[0]!].sort());

      // The agent with the runtime endpoint, through a link the test takes away: first the socket is gone …
      await agent.stop();
      const metricsPort = await freePort();
      agent = await startAgent(socket, [
        '--metrics-listen',
        `127.0.0.1:${metricsPort}`,
        '--node',
        NODE,
        '--datastore',
        url,
        '--runtime-endpoint',
        `unix://${criLink}`,
        '--runtime-reconcile-interval',
        '1s',
        '--runtime-reconcile-grace',
        GRACE,
        '--runtime-reconcile-data-dir',
        localDir,
      ]);
      const a = agent;
      const until = async (
        what: string,
        ok: (r: NonNullable<AgentStatus['runtimeReconcile']>) => boolean,
        ms = 30_000,
      ): Promise<NonNullable<AgentStatus['runtimeReconcile']>> => {
        const end = Date.now() + ms;
        for (;;) {
          const r = (await a.status()).runtimeReconcile;
          assert.ok(r, 'the agent reports runtime reconciliation');
          if (ok(r)) return r;
          if (Date.now() > end) assert.fail(`${what}: not within ${ms} ms: ${JSON.stringify(r)}\n${a.log().slice(-3000)}`);
          await sleep(200);
        }
      };
      const gone = await until('two failed passes while the socket is gone', (r) => r.errors >= 2);
      assert.equal(gone.state, 'failed');
      assert.equal(gone.freed['runtime-absent'], 0);
      assert.match(gone.lastError ?? '', /listing the runtime's sandboxes/);
      // … then the socket is there but containerd hangs (stopped: it accepts, never answers).
      const ctdPid = rt.pid;
      assert.equal(ctdPid, containerdPid(rt), "the helper's pid is containerd's");
      stopped = ctdPid;
      assert.ok(await stopProcess(ctdPid), 'containerd exited before it could be stopped');
      symlinkSync(rt.socket, criLink);
      const before = gone.errors;
      const hung = await until('two failed passes while containerd hangs', (r) => r.errors >= before + 2);
      assert.equal(hung.freed['runtime-absent'], 0);
      assert.equal(hung.state, 'failed');
      assert.deepEqual(await clusterHolders(), [...real, 'leak-a', 'leak-b'].sort(), 'nothing freed while the runtime did not answer');
      assert.deepEqual(localHolders(), ['leak-local', real[0]!].sort());
      // … then containerd dies as it hangs (SIGKILL: its shims keep the sandboxes) and starts again
      // on the same dirs: nothing is freed while it is down, and what it lists once back decides.
      const hungErrors = hung.errors;
      await rt.restart(async () => {
        stopped = undefined;
        const down = await until('two failed passes while containerd is down', (r) => r.errors >= hungErrors + 2);
        assert.equal(down.freed['runtime-absent'], 0);
        assert.deepEqual(await clusterHolders(), [...real, 'leak-a', 'leak-b'].sort(), 'nothing freed while containerd was down');
        assert.deepEqual(localHolders(), ['leak-local', real[0]!].sort());
      }, 'SIGKILL');

      // Back: two fresh answers, and exactly the planted allocations go.
      const back = await until('the planted allocations freed', (r) => r.freed['runtime-absent'] === 3);
      assert.deepEqual(back.lastFreed.map((f) => f.containerId).sort(), planted);
      for (const f of back.lastFreed) assert.ok(f.ageMs >= 6_000 && f.lists[1] - f.lists[0] >= 1_000, `evidence: ${JSON.stringify(f)}`);
      assert.deepEqual(await clusterHolders(), [...real].sort(), 'every real sandbox keeps its address');
      assert.deepEqual(localHolders(), [real[0]!], "the real sandbox's second network keeps its file");
      assert.match(a.log(), /runtime reconciliation freed leak-a\/eth0/);
      for (const [i, id] of real.entries()) assert.equal((await rt.cri.status(id)).ips[0], realIps[i]);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      assert.match(metrics, /^podipam_runtime_reconcile_freed_total\{reason="runtime-absent"\} 3$/m);
      assert.match(metrics, /^podipam_runtime_reconcile_suspected_leaks 0$/m);
      assert.ok(Number(/^podipam_runtime_reconcile_errors_total (\d+)$/m.exec(metrics)?.[1]) >= 4, metrics);
      assert.ok(Number(/^podipam_runtime_reconcile_last_success_timestamp_seconds (\S+)$/m.exec(metrics)?.[1]) > Date.now() / 1000 - 60, metrics);

      // A slow ADD: the agent answered, the sandbox is not listed for SLOW_ADD_S more seconds.
      writeFileSync(slowFlag, '');
      const seen = new Set<string>();
      let creating = true;
      const watcher = (async () => {
        while (creating) {
          for (const s of (await a.status()).runtimeReconcile!.suspected) if (s.reason === 'young') seen.add(s.containerId);
          await sleep(200);
        }
      })();
      const slowId = await run(9, 'slow');
      known.add(slowId);
      creating = false;
      await watcher;
      rmSync(slowFlag);
      t.diagnostic(`suspected while creating: ${[...seen].join(', ')}`);
      assert.ok(seen.has(slowId), `the loop saw the slow sandbox's allocation without its sandbox (young) while it was created: ${[...seen].join(', ')}`);
      // Past the grace, listed now: kept.
      await sleep(7_000);
      const end = await until('a pass after the grace', () => true);
      assert.equal(end.freed['runtime-absent'], 3, 'nothing more freed');
      assert.deepEqual(await clusterHolders(), [...real, slowId].sort());
      assert.equal((await rt.cri.status(slowId)).ips.length, 1);
    } finally {
      if (stopped !== undefined) process.kill(stopped, 'SIGCONT');
      await ctd?.stop();
      await agent?.stop();
      await store?.close();
      dir.remove();
    }
  },
);

/** containerd's pid (the process started with this test's config). */
function containerdPid(ctd: Containerd): number {
  const config = join(ctd.dir, 'config.toml');
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
      if (cmd[0] === '/usr/bin/containerd' && cmd.includes(config)) return Number(p);
    } catch {
      // gone
    }
  }
  assert.fail(`no containerd process with --config ${config}`);
}

test(
  'containerd, warm pool: an allocation the runtime never had is freed after the grace (no longer in use); every real sandbox keeps its address',
  { timeout: 240_000 },
  async () => {
    requireShim();
    const dir = makeTempDir('cri-reconcile-warm');
    const url = `sqlite:${join(dir.path, 'ds.db')}`;
    const socket = join(dir.path, 'run', 'agent.sock');
    let ctd: Containerd | undefined;
    let agent: RunningAgent | undefined;
    try {
      const rt = await startContainerd({ ptp: '/usr/lib/cni/ptp', loopback: '/usr/lib/cni/loopback' });
      ctd = rt;
      const cli = cliOn(url);
      cli(['pool', 'create', 'rw', '--cidr', '10.237.0.0/24', '--block-size', '28']);
      const conflistPath = installAgentCni(rt, url, { socket, node: NODE });
      // The warm pool serves networks whose IPAM config names only the agent.
      const conflist = JSON.parse(readFileSync(conflistPath, 'utf8')) as { name: string; plugins: { ipam?: unknown }[] };
      const ipamConf = { type: 'podipam', agent: socket };
      const withIpam = conflist.plugins.find((p) => p.ipam !== undefined);
      assert.ok(withIpam, 'the conflist has an IPAM section');
      withIpam.ipam = ipamConf;
      writeFileSync(conflistPath, JSON.stringify(conflist));
      agent = await startAgent(socket, [
        '--node',
        NODE,
        '--datastore',
        url,
        '--data-dir',
        join(dir.path, 'agent'),
        '--min-idle',
        '4',
        '--cooldown',
        '1s',
        '--runtime-endpoint',
        `unix://${rt.socket}`,
        '--runtime-reconcile-interval',
        '1s',
        '--runtime-reconcile-grace',
        GRACE,
      ]);
      const a = agent;
      const pod = (i: number) => ({ name: `warm-${i}`, namespace: 'shop', uid: `00000000-0000-4000-8000-0000000001${String(i).padStart(2, '0')}` });
      const run = (i: number) =>
        rt.cri.runPodSandbox(pod(i), rt.logDir).catch((e: unknown) => assert.fail(`RunPodSandbox: ${criErrorText(e)}\nagent:\n${a.log()}`));
      const real = [await run(1), await run(2)];
      const realIps = await Promise.all(real.map(async (id) => (await rt.cri.status(id)).ips[0]!));
      // Planted: an ADD through the shim for a container id the runtime never had (a DEL lost after it).
      const r = runPluginSync(SHIM_BIN, {
        command: 'ADD',
        containerId: 'leak-warm',
        ifname: 'eth0',
        config: { cniVersion: '1.0.0', name: conflist.name, ipam: ipamConf },
      });
      assert.equal(r.code, 0, `plant: ${r.stdout}${r.stderr}`);
      const leakedIp = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
      assert.ok(!realIps.includes(leakedIp));
      const inUse = async (): Promise<number> => Object.values((await a.status()).warmPool?.pools ?? {}).reduce((n, p) => n + p.inUse, 0);
      assert.equal(await inUse(), 3, 'two sandboxes and the planted allocation in use');

      // Young: kept (suspected) until the grace has passed, then freed with its evidence.
      const end = Date.now() + 60_000;
      let freedAt = 0;
      for (;;) {
        const s = await a.status();
        const rr = s.runtimeReconcile;
        if (rr && (rr.freed['runtime-absent'] ?? 0) >= 1) {
          freedAt = Date.now();
          assert.deepEqual(
            rr.lastFreed.map((f) => f.containerId),
            ['leak-warm'],
          );
          for (const f of rr.lastFreed) assert.ok(f.ageMs >= 6_000 && f.lists[1] - f.lists[0] >= 1_000, `evidence: ${JSON.stringify(f)}`);
          break;
        }
        if (Date.now() > end) assert.fail(`the planted warm allocation not freed within 60 s: ${JSON.stringify(rr)}\n${a.log().slice(-3000)}`);
        await sleep(200);
      }
      assert.ok(freedAt > 0);
      assert.equal(await inUse(), 2, 'only the real sandboxes hold addresses');
      assert.equal((await a.status()).warmPool?.runtimeAbsent, 1);
      for (const [i, id] of real.entries()) assert.equal((await rt.cri.status(id)).ips[0], realIps[i], 'a real sandbox keeps its address');
      // More passes: nothing more is freed.
      await sleep(3_000);
      assert.equal((await a.status()).runtimeReconcile?.freed['runtime-absent'], 1);
      assert.equal(await inUse(), 2);
    } finally {
      await ctd?.stop();
      await agent?.stop();
      dir.remove();
    }
  },
);
