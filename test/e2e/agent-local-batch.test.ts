/**
 * The agent's batched local-mode ADDs killed mid-batch: 8 ADDs through the shim wait (the test
 * holds the directory's lock, as host-local would) until all 8 are in the agent, so that they
 * form one batch when the lock is released; the agent is SIGKILLed by the crash-point hook at a
 * step of that batch. No call got an answer, and what is on disk is a state host-local reads:
 * reservations in its format, every one matched by its container's DEL (host-local's own), a
 * host-local ADD afterwards given an address no one holds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { crashEnv, expectCrash } from '../helpers/crash-points.js';
import { HOST_LOCAL_BIN, type PluginRun, runPlugin } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';
import { FileLock } from '../../src/local/file-lock.js';

const N = 8;
const NET = 'batch';

const ipam = (dataDir: string) => ({ dataDir, ranges: [[{ subnet: '10.93.0.0/24' }]] });

function add(sock: string, dataDir: string, id: string): Promise<PluginRun> {
  const config = { cniVersion: '1.0.0', name: NET, ipam: { type: 'podipam', agent: sock, ...ipam(dataDir) } };
  return runPlugin(SHIM_BIN, { command: 'ADD', containerId: id, ifname: 'eth0', config, env: { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' } });
}

function hostLocal(dataDir: string, command: string, id: string): Promise<PluginRun> {
  return runPlugin(HOST_LOCAL_BIN, {
    command,
    containerId: id,
    ifname: 'eth0',
    config: { cniVersion: '1.0.0', name: NET, ipam: { type: 'host-local', ...ipam(dataDir) } },
  });
}

/** Address files → content. */
function reservations(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of readdirSync(dir).sort()) if (n !== 'lock' && !n.startsWith('last_reserved_ip.')) out.set(n, readFileSync(join(dir, n), 'utf8'));
  return out;
}

const cases = [
  // the 5th ADD of the batch reserved its address and recorded it; the 6th-8th not yet; lock held
  { spec: 'local.add.recorded@5', files: 5 },
  // every ADD of the batch reserved, the lock dropped, the first answer about to be sent
  { spec: 'local.add.before-answer', files: N },
];

for (const c of cases) {
  test(`agent killed at ${c.spec} inside a batch of ${N} ADDs: no answer sent, ${c.files} reservations host-local reads and releases`, async () => {
    requireShim();
    await withTempDir('agent-batch', async (tmp) => {
      const dataDir = join(tmp, 'data');
      const dir = join(dataDir, NET);
      const sock = join(tmp, 'run', 'agent.sock');
      // Create the directory (and its lock file) with host-local, then hold the lock.
      const first = await hostLocal(dataDir, 'ADD', 'seed');
      assert.equal(first.code, 0, first.stdout + first.stderr);
      assert.equal((await hostLocal(dataDir, 'DEL', 'seed')).code, 0);
      const agent = await startAgent(sock, ['--node', 'batch-node'], crashEnv(c.spec));
      const lock = FileLock.open(join(dir, 'lock'));
      lock.lock();
      let runs: PluginRun[];
      try {
        const calls = Array.from({ length: N }, (_, i) => add(sock, dataDir, `c${i}`));
        for (let i = 0; (await agent.status()).inFlight < N; i++) {
          assert.ok(i < 400, 'the 8 ADDs did not all reach the agent within 20 s');
          await sleep(50);
        }
        lock.unlock();
        runs = await Promise.all(calls);
      } finally {
        lock.close();
      }
      await agent.exited;
      expectCrash({ signal: agent.child.signalCode, code: agent.child.exitCode, stdout: '', stderr: agent.log() }, c.spec, 'agent');
      for (const r of runs) {
        assert.notEqual(r.code, 0, `an ADD was answered: ${r.stdout}`);
        assert.doesNotMatch(r.stdout, /"ips"/);
      }
      // On disk: the reservations of the first `files` ADDs to arrive (the shims race), host-local's
      // format, one per container, nothing else.
      const held = reservations(dir);
      const owners = [...held.values()];
      assert.equal(new Set(owners).size, c.files, `one reservation per container: ${owners.join(' ')}`);
      for (const o of owners) assert.match(o, /^c[0-7]\r\neth0$/);
      assert.deepEqual([...held.keys()].sort(), Array.from({ length: c.files }, (_, i) => `10.93.0.${i + 3}`).sort(), "after the seed's .2, round robin");
      assert.equal(readFileSync(join(dir, 'last_reserved_ip.0'), 'utf8'), `10.93.0.${c.files + 2}`);
      // host-local carries on from that state: a new ADD gets the next free address, each DEL releases its file.
      const next = await hostLocal(dataDir, 'ADD', 'after');
      assert.equal(next.code, 0, next.stdout + next.stderr);
      assert.match(next.stdout, new RegExp(`"10\\.93\\.0\\.${c.files + 3}/24"`));
      for (const id of [...Array.from({ length: N }, (_, i) => `c${i}`), 'after']) {
        const d = await hostLocal(dataDir, 'DEL', id);
        assert.equal(d.code, 0, d.stdout + d.stderr);
      }
      assert.deepEqual(readdirSync(dir).sort(), ['last_reserved_ip.0', 'lock']);
    });
  });
}
