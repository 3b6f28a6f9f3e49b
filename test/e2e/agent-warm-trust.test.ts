/**
 * A warm agent on a real SQLite file never hands out an idle address the datastore no longer
 * lets it give, whatever the operator does, through the built CLI, agent and shim:
 * - `ipam release --ip A` of an idle warm address is refused (the agent gives it back, nothing
 *   frees it behind it); with `--force` the agent's watch drops A within seconds and no ADD gets it;
 * - `ipam reserve` over idle addresses, a pool's node selector that stops selecting the node,
 *   `pool drain`: the command returns once the agent has applied the change (its watch, not the
 *   5 s pool-view poll nor a restart: its holder view names the config generation), so an ADD
 *   served after it gets none of them; the agent gives them back;
 * - a reservation over an address a pod holds names the pod;
 * - with the agent stopped, the command waits its --warm-timeout, names the addresses the agent
 *   may still hand out and exits 3; running again, the agent gives them back.
 * Between the command's commit and the agent's watch event an ADD may still get one (the ADD
 * path makes no datastore round trip): that is why the command waits, and reports a pod that did.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { podCall, untilStatus } from '../helpers/agent-pods.js';
import { runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { stopProcess } from '../helpers/proc-locks.js';
import { runCli } from './serve-harness.js';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { warmHandlePrefix } from '../../src/warm/warm-handle.js';
import { formatAddr, formatPrefix, parseAddr, parsePrefix, prefixContains } from '../../src/ip/index.js';

const A = parsePrefix('10.242.0.0/24');
const B = parsePrefix('10.243.0.0/24');
const inA = (x: string): boolean => prefixContains(A, parseAddr(x));
const inB = (x: string): boolean => prefixContains(B, parseAddr(x));

test(
  'warm pool: release --ip, reserve, a node selector and drain take idle addresses out at the watch event; reserve, set and drain return once the agent applied the change, or exit 3 naming what it may still hand out',
  { timeout: 240_000 },
  async (t) => {
    requireShim();
    const dir = makeTempDir('agent-warm-trust');
    let agent: RunningAgent | undefined;
    try {
      const url = `sqlite:${join(dir.path, 'c.db')}`;
      const cli = async (...args: string[]): Promise<string> => {
        const r = await runCli(['--datastore', url, ...args]);
        assert.equal(r.code, 0, `podipam ${args.join(' ')}: ${r.stderr}${r.stdout}`);
        return r.stdout;
      };
      /** The addresses the node's warm handles hold, lowest first (the idle queue's order for addresses refilled together). */
      const warmHeld = async (): Promise<string[]> => {
        const store = await openStore(url);
        try {
          const ipam = new ClusterIpam(store);
          const out: bigint[] = [];
          for (const h of await ipam.warmHandles(warmHandlePrefix('node-a'))) for (const a of (await ipam.addressesOf(h)) ?? []) out.push(a.addr.value);
          return out.sort((x, y) => (x < y ? -1 : 1)).map((v) => formatAddr({ family: 4, value: v }));
        } finally {
          await store.close();
        }
      };
      await cli('pool', 'create', 'a', '--cidr', formatPrefix(A), '--block-size', '28');
      const socket = join(dir.path, 'agent.sock');
      agent = await startAgent(socket, [
        '--node',
        'node-a',
        '--datastore',
        url,
        '--data-dir',
        join(dir.path, 'data'),
        '--min-idle',
        '4',
        '--max-idle',
        '8',
        '--capacity',
        '64',
        '--cooldown',
        '1s',
      ]);
      const ag = agent;
      const inUse = new Set<string>();
      let seq = 0;
      const add = async (): Promise<string> => {
        const pod = `p${++seq}`;
        const r = await runPlugin(SHIM_BIN, podCall(socket, 'trust-net', 'ADD', `c-${pod}`, 'ns', pod, `uid-${pod}`));
        assert.equal(r.code, 0, `ADD ${pod}: ${r.stdout}${r.stderr}`);
        const addr = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
        inUse.add(addr);
        return addr;
      };
      const idle = (what: string, n: number) =>
        untilStatus(
          ag,
          what,
          (s) =>
            s.warmPool?.ready === true &&
            (s.warmPool.pools.ipv4?.idle ?? 0) >= n &&
            s.warmPool.pools.ipv4?.pending === 0 &&
            s.warmPool.pools.ipv4?.returning === 0,
        );
      const idleNow = async (): Promise<string[]> => (await warmHeld()).filter((x) => !inUse.has(x));
      /** Polls the status until `ok` holds; fails once `ms` passed. */
      const within = async (what: string, ms: number, ok: (s: Awaited<ReturnType<RunningAgent['status']>>) => boolean): Promise<number> => {
        const t0 = Date.now();
        for (;;) {
          const s = await ag.status();
          if (ok(s)) return Date.now() - t0;
          assert.ok(Date.now() - t0 < ms, `${what}: not within ${ms} ms; warm pool ${JSON.stringify(s.warmPool)}`);
          await new Promise((r) => setTimeout(r, 5));
        }
      };

      // 1. release --ip of an idle warm address: refused without --force, the address stays the agent's.
      await idle('preloaded from a', 4);
      const [first] = await idleNow();
      const refused = await runCli(['--datastore', url, 'ipam', 'release', '--ip', first!]);
      assert.equal(refused.code, 2, refused.stdout + refused.stderr);
      assert.match(refused.stderr, /idle in node node-a's warm pool.*--force/s);
      assert.ok((await warmHeld()).includes(first!), 'still held by the warm handle');

      // With --force (a node whose agent is gone, or so the operator says): the running agent drops it within seconds.
      const dropped0 = (await ag.status()).warmPool!.droppedByWatch;
      await cli('ipam', 'release', '--ip', first!, '--force');
      const tRelease = await within('the agent dropped the force-released address', 3000, (s) => s.warmPool!.droppedByWatch >= dropped0 + 1);
      for (let i = 0; i < 5; i++) assert.notEqual(await add(), first, 'a force-released idle address is never handed out once the agent saw it');

      // 2. A reservation over every idle address: the command returns once the agent gave them back
      // (it waits for that), so from then on an ADD gets none of them.
      await idle('refilled', 4);
      const reservedAddrs = await idleNow();
      const returned1 = (await ag.status()).warmPool!.returned;
      let t0 = Date.now();
      const out1 = await cli('ipam', 'reserve', 'r1', ...reservedAddrs.flatMap((x) => ['--cidr', x]));
      const tReserve = Date.now() - t0;
      assert.match(out1, /reservation "r1": node node-a's agent applied it/, out1);
      const got1 = await add();
      assert.ok(!reservedAddrs.includes(got1), `the ADD after the command returned got the reserved ${got1}`);
      await within('reserved idle addresses returned', 3000, (s) => s.warmPool!.returned >= returned1 + reservedAddrs.length);
      assert.deepEqual(
        (await warmHeld()).filter((x) => reservedAddrs.includes(x)),
        [],
        'the datastore gives none of the reserved ones to the node any more',
      );

      // 3. Pool a stops selecting the node: when the command returns a's idle ones are back, an ADD gets one of b.
      await cli('pool', 'create', 'b', '--cidr', formatPrefix(B), '--block-size', '28');
      await idle('refilled from a', 4);
      const idleA = (await idleNow()).filter(inA);
      assert.ok(idleA.length >= 4, idleA.join(' '));
      const returned2 = (await ag.status()).warmPool!.returned;
      t0 = Date.now();
      const out2 = await cli('pool', 'set', 'a', '--node-selector', 'zone=elsewhere');
      const tSelector = Date.now() - t0;
      assert.match(out2, /pool "a": node node-a's agent applied it/, out2);
      const got2 = await add();
      assert.ok(inB(got2), `the ADD after the selector change got ${got2}`);
      await within('idle addresses of a returned', 3000, (s) => s.warmPool!.returned >= returned2 + idleA.length);
      assert.deepEqual((await idleNow()).filter(inA), [], 'no idle address of a left');

      // 4. a selects the node again, b is drained: when the command returns b's idle ones are back, an ADD gets a's.
      await cli('pool', 'set', 'a', '--node-selector', 'all()');
      await idle('refilled from b', 4);
      const idleB = (await idleNow()).filter(inB);
      // The queue refills from both pools now; the drain must have some of b's to take out.
      assert.ok(idleB.length >= 1, `no idle address from b to withdraw: ${(await idleNow()).join(' ')}`);
      const returned3 = (await ag.status()).warmPool!.returned;
      t0 = Date.now();
      const out3 = await cli('pool', 'drain', 'b');
      const tDrain = Date.now() - t0;
      assert.match(out3, /pool "b": node node-a's agent applied it/, out3);
      const got3 = await add();
      assert.ok(inA(got3), `the ADD after the drain got ${got3}`);
      await within('idle addresses of b returned', 3000, (s) => s.warmPool!.returned >= returned3 + idleB.length);

      // 5. An address a pod holds: the reservation names the pod (it keeps it until its DEL), nothing to wait for.
      const out4 = await cli('ipam', 'reserve', 'r-used', '--cidr', got3);
      assert.ok(out4.includes(`${got3} in use by pod ns/p${seq}: it keeps it until its DEL`), out4);

      // 6. An agent that does not answer (stopped): the command waits --warm-timeout, then names what it
      // may still hand out and exits 3; once the agent runs again it gives them back.
      await idle('refilled from a again', 4);
      const pending = (await idleNow()).filter(inA).slice(0, 2);
      assert.ok(await stopProcess(ag.child.pid!), 'the agent exited before it could be stopped');
      try {
        const r = await runCli(['--datastore', url, 'ipam', 'reserve', 'r-stopped', ...pending.flatMap((x) => ['--cidr', x]), '--warm-timeout', '1s']);
        assert.equal(r.code, 3, r.stdout + r.stderr);
        assert.match(
          r.stdout,
          /node node-a's agent has not applied it after 1\.0 s \(stopped, or cut off from the datastore\?\): it may hand .* to pods until it does/,
          r.stdout,
        );
        for (const x of pending) assert.ok(r.stdout.includes(x), r.stdout);
      } finally {
        process.kill(ag.child.pid!, 'SIGCONT');
      }
      for (let i = 0; ; i++) {
        const left = (await warmHeld()).filter((x) => pending.includes(x));
        if (left.length === 0) break;
        assert.ok(i < 100, `the agent, running again, did not give back ${left.join(' ')} within 10 s`);
        await new Promise((r) => setTimeout(r, 100));
      }
      t.diagnostic(
        `release --force: taken out of the idle queue after ${tRelease} ms (status polled); the command's run until the agent applied the change: reserve ${tReserve} ms, node selector ${tSelector} ms, drain ${tDrain} ms`,
      );
    } finally {
      await agent?.stop();
      dir.remove();
    }
  },
);
