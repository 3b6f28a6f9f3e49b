/**
 * podipam under a real container runtime: Debian's containerd + runc, driven over CRI as
 * kubelet drives it (RunPodSandbox with the pod's metadata, labels and annotations,
 * PodSandboxStatus, StopPodSandbox, RemovePodSandbox), with the conflist `podipam install-cni`
 * writes (ptp, its default for the agent back end, + podipam in agent mode), the native shim it installs and `podipam agent`
 * serving the cluster back end on a SQLite datastore. Fails with the reason when containerd
 * cannot run here (test/helpers/containerd.ts); never skips.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startContainerd, type Containerd } from '../helpers/containerd.js';
import { criErrorText } from '../helpers/cri-client.js';
import { type RunningAgent, requireShim, startAgent } from '../helpers/agent.js';
import { makeTempDir } from '../helpers/tmp.js';
import { cliOn, installAgentCni } from '../helpers/agent-cni.js';
import { openStore, type Store } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { parseAddr, parsePrefix, prefixContains } from '../../src/ip/index.js';

const NODE = 'cri-node';
const POOL_CIDR = '10.236.0.0/24';

test(
  "containerd over CRI: pods started through install-cni's conflist, the shim and the agent get distinct pool addresses; Stop releases them; a failing ADD fails RunPodSandbox with the CNI message",
  { timeout: 600_000 },
  async () => {
    requireShim();
    const dir = makeTempDir('cri');
    const url = `sqlite:${join(dir.path, 'ds.db')}`;
    const socket = join(dir.path, 'run', 'agent.sock');
    let ctd: Containerd | undefined;
    let agent: RunningAgent | undefined;
    let store: Store | undefined;
    try {
      const rt = await startContainerd({ ptp: '/usr/lib/cni/ptp', loopback: '/usr/lib/cni/loopback' });
      ctd = rt;
      const cli = cliOn(url);
      cli(['pool', 'create', 'cri', '--cidr', POOL_CIDR, '--block-size', '28']);
      installAgentCni(rt, url, { socket, node: NODE });
      const a = await startAgent(socket, ['--node', NODE, '--datastore', url]);
      agent = a;
      store = await openStore(url);
      const ipam = new ClusterIpam(store);
      const pool = parsePrefix(POOL_CIDR);

      // Four pods at once, as kubelet starts pods of a ReplicaSet.
      const pods = [0, 1, 2, 3].map((i) => ({
        name: `web-${i}`,
        namespace: 'shop',
        uid: `00000000-0000-4000-8000-00000000000${i}`,
        labels: { app: 'web' },
        annotations: { 'example.com/note': `pod ${i}` },
      }));
      const ids = await Promise.all(
        pods.map((p) =>
          rt.cri.runPodSandbox(p, rt.logDir).catch((e: unknown) => assert.fail(`RunPodSandbox ${p.name}: ${criErrorText(e)}\nagent:\n${a.log()}`)),
        ),
      );
      const ips: string[] = [];
      for (const id of ids) {
        const s = await rt.cri.status(id);
        assert.equal(s.state, 0, `sandbox ${id} is ready`);
        assert.equal(s.ips.length, 1, `one address per pod: ${JSON.stringify(s)}`);
        assert.ok(prefixContains(pool, parseAddr(s.ips[0]!)), `${s.ips[0]} is inside pool ${POOL_CIDR}`);
        ips.push(s.ips[0]!);
      }
      assert.equal(new Set(ips).size, 4, `four distinct addresses: ${ips.join(', ')}`);
      const held = (await ipam.listAllocations({ limit: 100 })).items;
      for (const [i, id] of ids.entries()) {
        const a = held.find((x) => x.ip === ips[i]);
        assert.ok(a, `the datastore holds ${ips[i]}`);
        assert.ok(a.handle.includes(id), `${ips[i]} is held by the sandbox's handle (${a.handle} names ${id})`);
      }
      const st = await a.status();
      assert.equal(JSON.stringify(st).includes('"ADD"'), true, `the agent served the ADDs: ${JSON.stringify(st)}`);

      // Stop runs the CNI DEL: every address is free again.
      for (const id of ids) {
        await rt.cri.stopPodSandbox(id);
        await rt.cri.removePodSandbox(id);
      }
      const after = (await ipam.listAllocations({ limit: 100 })).items.filter((a) => ips.includes(a.ip));
      assert.deepEqual(after, [], 'no address of a stopped pod is held');

      // A config the back end refuses: RunPodSandbox fails with the plugin's message.
      const conf = join(rt.cniConfDir, readConfName(rt));
      const c = JSON.parse(readFileSync(conf, 'utf8')) as { plugins: { ipam?: Record<string, unknown> }[] };
      c.plugins[0]!.ipam!.pools = ['no-such-pool'];
      writeFileSync(conf, JSON.stringify(c));
      let failure = '';
      for (let i = 0; i < 50 && failure === ''; i++) {
        try {
          const id = await rt.cri.runPodSandbox(
            { name: `bad-${i}`, namespace: 'shop', uid: `10000000-0000-4000-8000-0000000000${String(i).padStart(2, '0')}` },
            rt.logDir,
          );
          // containerd had not reloaded the config yet: that pod got an address; let it go.
          await rt.cri.stopPodSandbox(id);
          await rt.cri.removePodSandbox(id);
          await new Promise((r) => setTimeout(r, 200));
        } catch (e) {
          failure = criErrorText(e);
        }
      }
      assert.match(failure, /no-such-pool/, `RunPodSandbox failed naming the pool: ${failure}`);
    } finally {
      await ctd?.stop();
      await agent?.stop();
      await store?.close();
      dir.remove();
    }
  },
);

function readConfName(ctd: Containerd): string {
  const names = readdirSync(ctd.cniConfDir).filter((n) => n.endsWith('.conflist'));
  assert.equal(names.length, 1, `install-cni wrote one conflist: ${names.join(', ')}`);
  return names[0]!;
}
