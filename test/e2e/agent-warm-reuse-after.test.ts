/**
 * A warm agent honours its pool's reuseAfter for the addresses its own pods release, through the
 * built CLI, agent and shim on a real SQLite file: with `--cooldown 1s` and `reuseAfter 20s`, an
 * address a pod released goes to no other pod of the node within the 20 s — nor after an agent
 * restart (its release time is in the resource DB) — and `pool set --reuse-after` shortening it
 * applies to the running agent (its watch) with no restart: the address is handed out again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { podCall, untilStatus } from '../helpers/agent-pods.js';
import { runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { runCli } from './serve-harness.js';

test(
  "warm pool: an address a pod released goes to no other pod before the pool's reuseAfter (restart included); a shorter reuseAfter applies live",
  { timeout: 180_000 },
  async () => {
    requireShim();
    const dir = makeTempDir('agent-warm-reuse-after');
    let agent: RunningAgent | undefined;
    try {
      const url = `sqlite:${join(dir.path, 'c.db')}`;
      const cli = async (...args: string[]): Promise<string> => {
        const r = await runCli(['--datastore', url, ...args]);
        assert.equal(r.code, 0, `podipam ${args.join(' ')}: ${r.stderr}${r.stdout}`);
        return r.stdout;
      };
      await cli('pool', 'create', 'a', '--cidr', '10.246.0.0/24', '--block-size', '28', '--reuse-after', '20s');
      const socket = join(dir.path, 'agent.sock');
      const args = [
        '--node',
        'node-a',
        '--datastore',
        url,
        '--data-dir',
        join(dir.path, 'data'),
        '--min-idle',
        '1',
        '--max-idle',
        '16',
        '--capacity',
        '64',
        '--cooldown',
        '1s',
      ];
      agent = await startAgent(socket, args);
      let seq = 0;
      const call = async (cmd: 'ADD' | 'DEL', pod: string): Promise<string> => {
        const r = await runPlugin(SHIM_BIN, podCall(socket, 'reuse-net', cmd, `c-${pod}`, 'ns', pod, `uid-${pod}`));
        assert.equal(r.code, 0, `${cmd} ${pod}: ${r.stdout}${r.stderr}`);
        return cmd === 'DEL' ? '' : (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
      };
      const ready = (ag: RunningAgent) => untilStatus(ag, 'warm pool ready', (s) => s.warmPool?.ready === true && s.warmPool.pools.ipv4?.pending === 0);

      await ready(agent);
      const x = await call('ADD', 'first');
      await call('DEL', 'first');
      const releasedAt = Date.now();
      await new Promise((r) => setTimeout(r, 1500)); // past the cooldown
      // Without the quarantine the second or third ADD gets x (the idle queue's oldest release).
      const others: string[] = [];
      for (let i = 0; i < 4; i++) others.push(await call('ADD', `p${++seq}`));
      assert.ok(!others.includes(x), `${x} released ${Date.now() - releasedAt} ms ago went to another pod: ${others.join(' ')}`);

      // Restarted, the agent still knows when x was released.
      await agent.stop();
      agent = await startAgent(socket, args);
      await ready(agent);
      for (let i = 0; i < 3; i++) {
        const got = await call('ADD', `p${++seq}`);
        assert.notEqual(got, x, `after a restart, ${x} released ${Date.now() - releasedAt} ms ago went to another pod`);
      }
      assert.ok(Date.now() - releasedAt < 20_000, 'the checks above ran within the quarantine');

      // Shortened to 2s: the running agent applies it (its watch of the config), x is handed out again.
      await cli('pool', 'set', 'a', '--reuse-after', '2s');
      const t0 = Date.now();
      let got = '';
      while (got !== x) {
        assert.ok(Date.now() - t0 < 5000, `${x} not handed out within 5 s of reuseAfter 2s (released ${Date.now() - releasedAt} ms ago)`);
        const pod = `p${++seq}`;
        got = await call('ADD', pod);
        if (got !== x) await call('DEL', pod); // behind x in the idle queue
      }
      assert.ok(Date.now() - releasedAt < 20_000, 'handed out before the old reuseAfter ended: the change applied live');
    } finally {
      await agent?.stop();
      dir.remove();
    }
  },
);
