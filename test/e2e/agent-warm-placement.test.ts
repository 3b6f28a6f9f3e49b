/**
 * Placement annotations in the agent's warm pool, end to end through the native shim and the
 * built agent on a real SQLite datastore file: two pools, the warm pool on pool A; the pod's
 * annotations come as the runtime passes them (`runtimeConfig["io.kubernetes.cri.pod-annotations"]`)
 * with its identity in CNI_ARGS.
 * - `podipam.io/pools=pool-b` → an address of B, allocated directly under the pod's own handle
 *   (never one of A's idle addresses: the idle count and hit counter do not move);
 * - `podipam.io/ip` → exactly that address; the same address for another pod → 101;
 * - `podipam.io/ip-set` → the set's addresses, a full set → 100 naming it, DEL returns one to the set;
 * - an unannotated pod still gets an idle address of A (hit counter up);
 * - a malformed annotation → code 7 naming it;
 * - SIGKILL and restart: the annotated pod still holds its address (CHECK, repeated ADD), not
 *   adopted into the idle queue, not freed;
 * - DEL of the annotated pods frees their handles on the datastore; `podipam ipam check` clean.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { type PluginCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { parseAddr } from '../../src/ip/index.js';

test(
  'warm pool through the shim: annotated pods allocated directly from the pool they name (never from the idle queue), podipam.io/ip exact, restart keeps them, DEL frees their handles, bad annotation → 7',
  { timeout: 180_000 },
  async (t) => {
    requireShim();
    const dir = makeTempDir('agent-warm-placement');
    let agent: RunningAgent | undefined;
    try {
      const url = `sqlite:${join(dir.path, 'ds.db')}`;
      for (const [name, cidr] of [
        ['pool-a', '10.212.0.0/16'],
        ['pool-b', '10.213.0.0/16'],
      ] as const) {
        const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
        assert.equal(r.code, 0, r.stderr);
      }
      const socket = join(dir.path, 'run', 'agent.sock');
      const args = [
        '--node',
        'pnode',
        '--datastore',
        url,
        '--data-dir',
        join(dir.path, 'agent'),
        '--pools',
        'pool-a',
        '--min-idle',
        '4',
        '--max-idle',
        '8',
        '--capacity',
        '64',
        '--cooldown',
        '1s',
      ];
      agent = await startAgent(socket, args);
      const warmReady = async (a: RunningAgent): Promise<Awaited<ReturnType<RunningAgent['status']>>> => {
        for (let i = 0; ; i++) {
          const s = await a.status();
          if (s.warmPool?.ready && (s.warmPool.pools.ipv4?.idle ?? 0) >= 4) return s;
          assert.ok(i < 200, `warm pool not preloaded: ${JSON.stringify(s.warmPool)}\n${a.log()}`);
          await sleep(25);
        }
      };
      const call = (command: string, pod: string, annotations?: Record<string, string>, prevResult?: unknown): PluginCall => ({
        command,
        containerId: `c-${pod}`,
        ifname: 'eth0',
        args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=web;K8S_POD_NAME=${pod};K8S_POD_UID=uid-${pod}`,
        config: {
          cniVersion: '1.0.0',
          name: 'pnet',
          ipam: { type: 'podipam', agent: socket },
          ...(annotations ? { runtimeConfig: { 'io.kubernetes.cri.pod-annotations': annotations } } : {}),
          ...(prevResult ? { prevResult } : {}),
        },
        env: { PODIPAM_PLUGIN: '' },
      });
      const add = async (pod: string, annotations?: Record<string, string>): Promise<string> => {
        const r = await runPlugin(SHIM_BIN, call('ADD', pod, annotations));
        assert.equal(r.code, 0, `ADD ${pod}: ${r.stdout} ${r.stderr}\n${agent?.log()}`);
        return (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address;
      };
      const ok = async (command: string, pod: string, prevResult?: unknown): Promise<void> => {
        const r = await runPlugin(SHIM_BIN, call(command, pod, undefined, prevResult));
        assert.equal(r.code, 0, `${command} ${pod}: ${r.stdout} ${r.stderr}`);
      };
      const errorCode = async (pod: string, annotations: Record<string, string>): Promise<{ code: number; msg: string }> => {
        const r = await runPlugin(SHIM_BIN, call('ADD', pod, annotations));
        assert.notEqual(r.code, 0, `ADD ${pod} should fail: ${r.stdout}`);
        const e = JSON.parse(r.stdout) as { code: number; msg: string };
        return { code: e.code, msg: e.msg };
      };

      const s0 = await warmReady(agent);
      const idle0 = s0.warmPool!.pools.ipv4!.idle;
      const hits0 = s0.warmPool!.hits;

      // Annotated with pool-b: an address of B, the idle queue of A untouched.
      const b = await add('annotated-b', { 'podipam.io/pools': 'pool-b' });
      assert.match(b, /^10\.213\.\d+\.\d+\/26$/);
      let s = await agent.status();
      assert.equal(s.warmPool!.pools.ipv4!.idle, idle0, 'no idle address of pool A was taken');
      assert.equal(s.warmPool!.pools.ipv4!.inUse, 0);
      assert.equal(s.warmPool!.hits, hits0);
      assert.equal(s.warmPool!.direct, 1);

      // podipam.io/ip: exactly that address; taken by another pod → 101.
      const fixed = await add('fixed', { 'podipam.io/ip': '10.213.9.9' });
      assert.equal(fixed, '10.213.9.9/26');
      const taken = await errorCode('fixed-2', { 'podipam.io/ip': '10.213.9.9' });
      assert.equal(taken.code, 101, taken.msg);

      // podipam.io/ip-set: the set's addresses, directly; a full set → 100 naming it; DEL returns
      // the address to the set (a new member gets it again).
      const mk = runCliSync(url, ['ipset', 'create', 'vms', '--pool', 'pool-b', '--addresses', '10.213.20.10-10.213.20.11']);
      assert.equal(mk.code, 0, mk.stderr);
      const set1 = await add('vm-1', { 'podipam.io/ip-set': 'vms' });
      const set2 = await add('vm-2', { 'podipam.io/ip-set': 'vms' });
      assert.deepEqual([set1, set2].sort(), ['10.213.20.10/26', '10.213.20.11/26']);
      const full = await errorCode('vm-3', { 'podipam.io/ip-set': 'vms' });
      assert.equal(full.code, 100, full.msg);
      assert.match(full.msg, /ip-set "vms"/);
      await ok('DEL', 'vm-1');
      assert.equal(await add('vm-4', { 'podipam.io/ip-set': 'vms' }), set1, 'the freed set address went to the next member');
      await ok('DEL', 'vm-2');
      await ok('DEL', 'vm-4');
      assert.equal((await agent.status()).warmPool!.direct, 2, 'the set pods were direct attachments, now released');

      // A malformed annotation → 7 naming it.
      const bad = await errorCode('bad', { 'podipam.io/pools': 'Not A Pool!' });
      assert.equal(bad.code, 7, bad.msg);
      assert.match(bad.msg, /podipam\.io\/pools/);
      assert.match(bad.msg, /web\/bad/);

      // Unannotated: an idle address of A, a hit.
      const plain = await add('plain');
      assert.match(plain, /^10\.212\./);
      s = await agent.status();
      assert.equal(s.warmPool!.hits, hits0 + 1, 'the unannotated pod was a hit');
      assert.equal(s.warmPool!.pools.ipv4!.inUse, 1);
      t.diagnostic(`warm after the ADDs: ${JSON.stringify(s.warmPool)}`);
      // The warm pod is shown by pod, and its address names it, once its record is written behind.
      {
        const ipam = new ClusterIpam(await openStore(url));
        try {
          let shown: Awaited<ReturnType<ClusterIpam['handlesOfPod']>> = [];
          for (let i = 0; i < 100 && shown.length === 0; i++) {
            shown = await ipam.handlesOfPod('web', 'plain');
            if (shown.length === 0) await sleep(50);
          }
          assert.equal(shown.length, 1, 'ipam show --pod finds the warm pod');
          assert.deepEqual(
            shown[0]!.addresses.map((x) => `${x.ip}/26`),
            [plain],
          );
          assert.equal(shown[0]!.pod, 'web/plain');
          const holder = await ipam.holderOfAddress(parseAddr(plain.split('/')[0]!));
          assert.equal(holder?.pod, 'web/plain', `the warm address names its pod: ${JSON.stringify(holder)}`);
          const cli = runCliSync(url, ['ipam', 'show', '--pod', 'web/plain', '-o', 'json']);
          assert.equal(cli.code, 0, cli.stderr);
          assert.match(cli.stdout, new RegExp(plain.split('/')[0]!.replace(/\./g, '\\.')));
        } finally {
          await ipam.store.close();
        }
      }

      // SIGKILL and restart: the annotated pods keep their addresses.
      await agent.kill();
      agent = await startAgent(socket, args);
      const s2 = await warmReady(agent);
      assert.equal(s2.warmPool!.direct, 2, 'both direct attachments known after the restart');
      assert.equal(s2.warmPool!.quarantined, 0);
      assert.equal(s2.warmPool!.pools.ipv4!.inUse, 1, 'only the unannotated pod is in the pool');
      await ok('CHECK', 'annotated-b', { cniVersion: '1.0.0', ips: [{ address: b }] });
      assert.equal(await add('annotated-b', { 'podipam.io/pools': 'pool-b' }), b, 'a repeated ADD: what the handle holds');
      const ipam = new ClusterIpam(await openStore(url));
      try {
        assert.equal((await ipam.addressesOf('pnet:c-annotated-b:eth0'))?.length, 1, 'the handle still holds the address');
        // DEL of the annotated pods: their handles are freed on the datastore.
        await ok('DEL', 'annotated-b');
        await ok('DEL', 'fixed');
        await ok('DEL', 'plain');
        assert.equal(await ipam.addressesOf('pnet:c-annotated-b:eth0'), undefined);
        assert.equal(await ipam.addressesOf('pnet:c-fixed:eth0'), undefined);
      } finally {
        await ipam.store.close();
      }
      const s3 = await agent.status();
      assert.equal(s3.warmPool!.direct, 0);
      assert.equal(s3.warmPool!.pools.ipv4!.idle, s2.warmPool!.pools.ipv4!.idle + 1, "only the unannotated pod's address joined the idle queue");
      const check = runCliSync(url, ['ipam', 'check']);
      assert.equal(check.code, 0, `ipam check: ${check.stdout} ${check.stderr}`);
    } finally {
      await agent?.stop();
      dir.remove();
    }
  },
);
