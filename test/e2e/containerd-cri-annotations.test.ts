/**
 * Pod-aware allocation under a real container runtime: Debian's containerd + runc driven over
 * CRI as kubelet drives it, with `podipam install-cni`'s conflist (ptp; it declares the
 * `io.kubernetes.cri.pod-annotations` capability, so containerd hands the pod's annotations to
 * ptp, and ptp to podipam), the native shim and `podipam agent` on a SQLite datastore.
 * Pods carry each placement annotation — podipam's, Calico's, Cilium multi-pool's and
 * Spiderpool's (a pattern, the per-interface list) — and get what they ask for; a bad one fails
 * RunPodSandbox with the CNI message; an ip-set "Deployment" of 5 keeps its 5 addresses when
 * its pods are recreated, a 6th pod gets code 100 naming the set, and pods without the
 * annotation never get a set address. Fails with the reason when containerd cannot run here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startContainerd, type Containerd } from '../helpers/containerd.js';
import { criErrorText, type PodMeta } from '../helpers/cri-client.js';
import { type RunningAgent, requireShim, startAgent } from '../helpers/agent.js';
import { makeTempDir } from '../helpers/tmp.js';
import { cliOn, installAgentCni } from '../helpers/agent-cni.js';
import { parseAddr, parsePrefix, prefixContains } from '../../src/ip/index.js';

const NODE = 'cri-node';
let uidSeq = 0;
const pod = (name: string, annotations: Record<string, string> = {}): PodMeta => ({
  name,
  namespace: 'shop',
  uid: `20000000-0000-4000-8000-${String(++uidSeq).padStart(12, '0')}`,
  labels: { app: name.replace(/-[0-9a-z]+$/, '') },
  annotations,
});

test(
  'containerd over CRI: each placement annotation (podipam, Calico, Cilium, Spiderpool) is honoured, a bad one fails RunPodSandbox, an ip-set Deployment keeps its addresses',
  { timeout: 900_000 },
  async () => {
    requireShim();
    const dir = makeTempDir('cri-ann');
    const url = `sqlite:${join(dir.path, 'ds.db')}`;
    const socket = join(dir.path, 'run', 'agent.sock');
    let ctd: Containerd | undefined;
    let agent: RunningAgent | undefined;
    try {
      // ptp, not bridge: pods here draw from three pools, so from several blocks with a gateway each,
      // and bridge keeps one IPv4 gateway address per bridge (it refuses a second).
      const rt = await startContainerd({ ptp: '/usr/lib/cni/ptp', loopback: '/usr/lib/cni/loopback' });
      ctd = rt;
      const cli = cliOn(url);
      cli(['pool', 'create', 'a-main', '--cidr', '10.237.0.0/26', '--block-size', '28']);
      cli(['pool', 'create', 'blue', '--cidr', '10.238.0.0/26', '--block-size', '28']);
      // One /28 block: 13 addresses a pod may get (.34-.46), 5 of them the set's.
      cli(['pool', 'create', 'green', '--cidr', '10.239.0.32/28', '--block-size', '28']);
      cli(['ipset', 'create', 'db', '--pool', 'green', '--addresses', '10.239.0.40-10.239.0.44']);
      installAgentCni(rt, url, { socket, node: NODE, extra: ['--interface', 'ptp'] });
      const a = await startAgent(socket, ['--node', NODE, '--datastore', url]);
      agent = a;
      const run = async (p: PodMeta): Promise<{ id: string; ip: string }> => {
        const id = await rt.cri
          .runPodSandbox(p, rt.logDir)
          .catch((e: unknown) => assert.fail(`RunPodSandbox ${p.name}: ${criErrorText(e)}\nagent:\n${a.log()}`));
        const s = await rt.cri.status(id);
        assert.equal(s.ips.length, 1, `${p.name}: one address: ${JSON.stringify(s)}`);
        return { id, ip: s.ips[0]! };
      };
      const refused = async (p: PodMeta): Promise<string> => {
        try {
          const id = await rt.cri.runPodSandbox(p, rt.logDir);
          const s = await rt.cri.status(id);
          return assert.fail(`RunPodSandbox ${p.name} succeeded with ${JSON.stringify(s.ips)}; it must fail`);
        } catch (e) {
          return criErrorText(e);
        }
      };
      const stop = async (id: string): Promise<void> => {
        await rt.cri.stopPodSandbox(id);
        await rt.cri.removePodSandbox(id);
      };
      const inside = (cidr: string, ip: string): boolean => prefixContains(parsePrefix(cidr), parseAddr(ip));

      // No annotation: the default pools (every pool selecting the node, by name: a-main first).
      const plain = await run(pod('plain-0'));
      assert.ok(inside('10.237.0.0/26', plain.ip), `an unannotated pod draws from the first pool: ${plain.ip}`);
      const pools = await run(pod('blue-0', { 'podipam.io/pools': 'blue' }));
      assert.ok(inside('10.238.0.0/26', pools.ip), `podipam.io/pools=blue: ${pools.ip}`);
      const fixed = await run(pod('fixed-0', { 'podipam.io/ip': '10.238.0.20' }));
      assert.equal(fixed.ip, '10.238.0.20', 'podipam.io/ip');
      const calicoName = await run(pod('calico-0', { 'cni.projectcalico.org/ipv4pools': '["green"]' }));
      assert.ok(inside('10.239.0.32/28', calicoName.ip), `Calico ipv4pools by name: ${calicoName.ip}`);
      const calicoCidr = await run(pod('calico-1', { 'cni.projectcalico.org/ipv4pools': '["10.238.0.0/26"]' }));
      assert.ok(inside('10.238.0.0/26', calicoCidr.ip), `Calico ipv4pools by CIDR: ${calicoCidr.ip}`);
      const calicoAddr = await run(pod('calico-2', { 'cni.projectcalico.org/ipAddrs': '["10.237.0.30"]' }));
      assert.equal(calicoAddr.ip, '10.237.0.30', 'Calico ipAddrs');
      // As users moving from Cilium multi-pool and Spiderpool write them (containerd's interface is eth0).
      const cilium = await run(pod('cilium-0', { 'ipam.cilium.io/ip-pool': 'blue' }));
      assert.ok(inside('10.238.0.0/26', cilium.ip), `Cilium ip-pool: ${cilium.ip}`);
      const cilium4 = await run(pod('cilium-1', { 'ipam.cilium.io/ipv4-pool': 'blue' }));
      assert.ok(inside('10.238.0.0/26', cilium4.ip), `Cilium ipv4-pool: ${cilium4.ip}`);
      const spider = await run(pod('spider-0', { 'ipam.spidernet.io/ippool': '{"ipv4":["b?ue"]}' }));
      assert.ok(inside('10.238.0.0/26', spider.ip), `Spiderpool ippool with a pattern: ${spider.ip}`);
      const spiders = await run(pod('spider-1', { 'ipam.spidernet.io/ippools': '[{"interface":"net1","ipv4":["blue"]},{"interface":"eth0","ipv4":["a-*"]}]' }));
      assert.ok(inside('10.237.0.0/26', spiders.ip), `Spiderpool ippools: the eth0 entry: ${spiders.ip}`);

      // Refusals carry the CNI message through containerd.
      assert.match(await refused(pod('taken-0', { 'podipam.io/ip': '10.238.0.20' })), /10\.238\.0\.20.*shop\/fixed-0/, 'a taken address names its holder');
      assert.match(
        await refused(pod('bad-0', { 'podipam.io/ip': 'not-an-ip' })),
        /podipam\.io\/ip.*not-an-ip.*shop\/bad-0/,
        'a malformed annotation names itself, the value and the pod',
      );
      assert.match(
        await refused(pod('bad-1', { 'podipam.io/pools': 'no-such-pool' })),
        /podipam\.io\/pools.*no-such-pool/,
        'an unknown pool is refused, never a fallback',
      );
      assert.match(
        await refused(pod('bad-2', { 'ipam.cilium.io/ip-pool': 'no-such-pool' })),
        /ipam\.cilium\.io\/ip-pool.*no-such-pool.*shop\/bad-2.*does not exist/,
        "Cilium's unknown pool likewise",
      );
      assert.match(
        await refused(pod('bad-3', { 'ipam.spidernet.io/ippool': '{"ipv4pools":["blue"]}' })),
        /ipam\.spidernet\.io\/ippool.*shop\/bad-3.*unknown field .*ipv4pools/,
        "Spiderpool's old field name is refused, not ignored",
      );

      // An ip-set "Deployment" of 5, recreated with new uids: the same 5 addresses.
      const setAddrs = ['10.239.0.40', '10.239.0.41', '10.239.0.42', '10.239.0.43', '10.239.0.44'];
      const gen1 = await Promise.all([0, 1, 2, 3, 4].map((i) => run(pod(`db-a${i}`, { 'podipam.io/ip-set': 'db' }))));
      assert.deepEqual(gen1.map((p) => p.ip).sort(), setAddrs, "the set's pods hold exactly its 5 addresses");
      assert.match(await refused(pod('db-a5', { 'podipam.io/ip-set': 'db' })), /ip-set.*"?db"?/, 'a 6th pod: the full set is named');
      for (const p of gen1) await stop(p.id);
      const gen2 = await Promise.all([0, 1, 2, 3, 4].map((i) => run(pod(`db-b${i}`, { 'podipam.io/ip-set': 'db' }))));
      assert.deepEqual(gen2.map((p) => p.ip).sort(), setAddrs, 'recreated pods get the same 5 addresses');
      // Pods without the annotation, drawing from green until it is full, never get a set address.
      const others: string[] = [];
      for (let i = 0; i < 16; i++) {
        try {
          others.push((await rt.cri.status(await rt.cri.runPodSandbox(pod(`g-${i}`, { 'podipam.io/pools': 'green' }), rt.logDir))).ips[0]!);
        } catch (e) {
          assert.match(criErrorText(e), /green/, `green is full, named: ${criErrorText(e)}`);
          break;
        }
      }
      assert.equal(others.length, 13 - 5 - 1, `pods filled green's 13 addresses but the set's 5 and calico-0's: ${others.join(', ')}`);
      for (const ip of others) assert.ok(!setAddrs.includes(ip), `${ip} is not one of the set's`);
      const st = await a.status();
      assert.ok(JSON.stringify(st).includes('"ADD"'), 'the agent served the ADDs');
    } finally {
      await ctd?.stop();
      await agent?.stop();
      dir.remove();
    }
  },
);
