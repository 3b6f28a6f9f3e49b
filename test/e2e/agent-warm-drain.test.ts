/**
 * A warm agent's idle addresses of a pool that stops being usable, on a real SQLite file: the
 * agent holds idle addresses of pool a (and pods hold some), pool b is there too; `pool drain a`
 * → within a few maintenance ticks the idle addresses of a are returned (the datastore holds
 * no address of a for the node beyond what its pods hold), the pool refills from b, and new
 * ADDs never get an address of a; `pool drain a --wait` ends once a's pods are DEL'd (their
 * addresses, idle again, are returned too). After `pool undrain a` and `pool disable b`, the
 * idle addresses of b go back the same way and the warm pool serves from a again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { podCall, untilStatus } from '../helpers/agent-pods.js';
import { runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { runCli } from './serve-harness.js';
import { openStore } from '../../src/store/index.js';
import { BLOCK_PREFIX } from '../../src/cluster/records/keys.js';
import { decodeBlock } from '../../src/cluster/records/block-record.js';
import { addrOfOrdinal } from '../../src/alloc/block.js';
import { formatAddr, parseAddr, parsePrefix, prefixContains } from '../../src/ip/index.js';

const A = parsePrefix('10.240.0.0/24');
const B = parsePrefix('10.241.0.0/24');
const inA = (x: string): boolean => prefixContains(A, parseAddr(x));
const inB = (x: string): boolean => prefixContains(B, parseAddr(x));

test(
  'warm pool: idle addresses of a drained (or disabled) pool are returned, never handed out; drain --wait ends; undrained, it serves again',
  { timeout: 240_000 },
  async (t) => {
    requireShim();
    const dir = makeTempDir('agent-warm-drain');
    let agent: RunningAgent | undefined;
    try {
      const url = `sqlite:${join(dir.path, 'c.db')}`;
      const cli = async (...args: string[]): Promise<string> => {
        const r = await runCli(['--datastore', url, ...args]);
        assert.equal(r.code, 0, `podipam ${args.join(' ')}: ${r.stderr}${r.stdout}`);
        return r.stdout;
      };
      /** Every address of the node's blocks, as the datastore holds them. */
      const held = async (): Promise<string[]> => {
        const store = await openStore(url);
        try {
          return (await store.list(BLOCK_PREFIX)).map(decodeBlock).flatMap((b) => [...b.allocations.keys()].map((o) => formatAddr(addrOfOrdinal(b.cidr, o))));
        } finally {
          await store.close();
        }
      };
      await cli('pool', 'create', 'a', '--cidr', '10.240.0.0/24', '--block-size', '28');
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
      const a = agent;
      const pods = new Map<string, string>();
      const call = (command: string, pod: string): Promise<{ code: number | null; stdout: string; stderr: string }> =>
        runPlugin(SHIM_BIN, podCall(socket, 'drain-net', command, `c-${pod}`, 'ns', pod, `uid-${pod}`));
      const add = async (pod: string): Promise<string> => {
        const r = await call('ADD', pod);
        assert.equal(r.code, 0, `ADD ${pod}: ${r.stdout}${r.stderr}`);
        const addr = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
        pods.set(pod, addr);
        return addr;
      };
      const del = async (pod: string): Promise<void> => {
        const r = await call('DEL', pod);
        assert.equal(r.code, 0, `DEL ${pod}: ${r.stdout}${r.stderr}`);
        pods.delete(pod);
      };
      const idle = async (what: string, n: number): Promise<void> => {
        await untilStatus(a, what, (s) => s.warmPool?.ready === true && (s.warmPool.pools.ipv4?.idle ?? 0) >= n && s.warmPool.pools.ipv4?.pending === 0);
      };

      // Pods hold two addresses of a; four more of a sit idle.
      await idle('preloaded from a', 4);
      for (const p of ['a1', 'a2']) assert.ok(inA(await add(p)), `${p} got ${pods.get(p)}`);
      await idle('refilled from a', 4);
      await cli('pool', 'create', 'b', '--cidr', '10.241.0.0/24', '--block-size', '28');
      const before = await held();
      assert.equal(before.filter(inA).length, 6, `two in use and four idle of a: ${before.join(' ')}`);
      const returned0 = (await a.status()).warmPool!.returned;
      // What the pool holds names pods and the warm pool's idle stock apart (the pod records are
      // written behind: within a second or so the two pods show by name).
      type Held = {
        allocated: number;
        inUse: number;
        idle: number;
        nodes: { node: string; pods: { pod?: string; handle: string; addresses: string[] }[]; warm?: { handles: string[]; idle: string[] } }[];
      };
      let shown: Held | undefined;
      for (let i = 0; i < 50 && shown?.inUse !== 2; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 100));
        shown = JSON.parse(await cli('pool', 'show', 'a', '-o', 'json')) as Held;
      }
      assert.deepEqual([shown!.allocated, shown!.inUse, shown!.idle], [6, 2, 4], JSON.stringify(shown));
      assert.deepEqual(
        shown!.nodes.map((n) => [n.node, n.pods.map((p) => [p.pod, p.addresses]), n.warm?.idle.length]),
        [
          [
            'node-a',
            [
              ['ns/a1', [pods.get('a1')]],
              ['ns/a2', [pods.get('a2')]],
            ],
            4,
          ],
        ],
        JSON.stringify(shown),
      );
      assert.ok(
        shown!.nodes[0]!.warm!.handles.every((h) => h.startsWith('podipam-warm:node-a:')),
        JSON.stringify(shown),
      );

      // Drained: the idle four go back in the refiller's return, the pool refills from b.
      await cli('pool', 'drain', 'a');
      const t0 = Date.now();
      await untilStatus(a, 'idle addresses of a returned', (s) => s.warmPool!.returned >= returned0 + 4);
      await idle('refilled from b', 4);
      const t1 = Date.now() - t0;
      assert.ok(t1 < 15_000, `withdrawn and refilled in ${t1} ms: more than a few 1 s ticks`);
      const after = await held();
      assert.deepEqual(after.filter(inA).sort(), [...pods.values()].filter(inA).sort(), 'the datastore holds of a only what the pods hold');
      assert.ok(after.filter(inB).length >= 4, `refilled from b: ${after.join(' ')}`);
      const s1 = (await a.status()).warmPool!;
      // Drained again (idempotent), its text: the pods by name, no warm handle among them, nothing idle left.
      const again = await cli('pool', 'drain', 'a');
      // First the agent's answer (it applied the drain; the pods keep theirs), then what the pool holds.
      assert.match(
        again,
        /^pool "a": node node-a's agent applied it \([0-9.]+ s\): it hands none of these addresses to a new pod from now on\n {2}\S+ in use by pod ns\/a1: it keeps it until its DEL\n {2}\S+ in use by pod ns\/a2: it keeps it until its DEL\npool "a" draining: 2 addresses still held\n {2}node node-a: 2 pods\n {4}ns\/a1 {2}\S+\n {4}ns\/a2 {2}\S+\n$/,
        again,
      );
      assert.equal(s1.pools.ipv4!.returning, 0);
      for (const p of ['b1', 'b2', 'b3', 'b4', 'b5', 'b6']) assert.ok(inB(await add(p)), `${p} got ${pods.get(p)} from the drained pool`);

      // drain --wait follows a to empty as its pods go: their addresses, idle again, go back too.
      const wait = runCli(['--datastore', url, 'pool', 'drain', 'a', '--wait', '--timeout', '60s'], {}, 90_000);
      await del('a1');
      assert.ok(inB(await add('b7')), 'a released address of a is never handed out');
      await del('a2');
      const w = await wait;
      assert.equal(w.code, 0, w.stderr + w.stdout);
      assert.match(w.stdout, /0 addresses still held/);
      assert.deepEqual((await held()).filter(inA), []);

      // Undrained, and b disabled: b's idle addresses go back the same way, a serves again.
      await idle('topped up from b after the ADDs', 4);
      await cli('pool', 'undrain', 'a');
      const s2 = (await a.status()).warmPool!;
      const idleB = s2.pools.ipv4!.idle + s2.pools.ipv4!.returning;
      assert.ok(idleB >= 4, JSON.stringify(s2.pools));
      t.diagnostic(`before disabling b: ${JSON.stringify(s2.pools)} returned ${s2.returned} refilled ${s2.refilled}`);
      await cli('pool', 'disable', 'b');
      await untilStatus(a, 'idle addresses of b returned', (s) => s.warmPool!.returned >= s2.returned + idleB && s.warmPool!.pools.ipv4!.returning === 0);
      await idle('refilled from a again', 4);
      assert.deepEqual((await held()).filter(inB).sort(), [...pods.values()].filter(inB).sort(), 'the datastore holds of b only what the pods hold');
      assert.ok(inA(await add('c1')), `c1 got ${pods.get('c1')}: the undrained pool serves again`);
      for (const p of [...pods.keys()]) await del(p);
      const check = await runCli(['--datastore', url, 'ipam', 'check', '--json']);
      assert.equal(check.code, 0, check.stdout + check.stderr);
      assert.deepEqual((JSON.parse(check.stdout) as { problems: unknown[] }).problems, []);
    } finally {
      await agent?.stop();
      dir.remove();
    }
  },
);
