/**
 * The warm-up's bursts (src/agent/warm-up.ts) run a node's concurrent paths before the first pod:
 * with V8 optimising during the warm-up only, a path it never ran stays in the baseline tiers for
 * the agent's life — before the bursts, the cluster back end's group commit and group release
 * (src/cluster/txn/assign-group.ts, release-group.ts) did, in every burst of pods. Through the
 * built binary under V8's --trace-opt, on a SQLite datastore (the warm-up's are then SQLite files):
 * after the warm-up, `planAndCommitAssigns` and `planAndCommitReleases` (the groups' planning,
 * their heaviest functions) are among the functions V8 optimised (the thin `assignGroup` and
 * `releaseGroup` around them mostly are too, not always: not asserted).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { callAgent } from '../../src/wire/agent-client.js';

const dir = makeTempDir('agent-warm-up-groups');
after(() => dir.remove());

test("the warm-up's bursts get the group commit and the group release optimised", { timeout: 90_000 }, async () => {
  const socket = join(dir.path, 'agent.sock');
  const child = spawn(
    process.execPath,
    [
      '--trace-opt',
      PODIPAM_BIN,
      'agent',
      '--socket',
      socket,
      '--node',
      'groups',
      '--datastore',
      `sqlite:${join(dir.path, 'ds.db')}`,
      '--metrics-listen',
      'off',
      '--no-masquerade',
    ],
    { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  try {
    let status: { warmUp?: { rounds: number; target: number } } | undefined;
    for (let i = 0; status === undefined; i++) {
      assert.ok(i < 600, `the agent not ready in 60 s:\n${err}`);
      assert.equal(child.exitCode, null, `the agent exited:\n${err}`);
      try {
        const a = await callAgent(socket, { kind: 'status' }, { connectTimeoutMs: 1000, answerTimeoutMs: 5000 });
        status = JSON.parse(a.body.toString('utf8')) as typeof status;
      } catch {
        await sleep(100);
      }
    }
    const optimised = (name: string): boolean => new RegExp(`completed optimizing [^<]*<JSFunction ${name} \\(sfi`).test(out);
    const w = JSON.stringify(status?.warmUp);
    assert.ok(optimised('planAndCommitAssigns'), `the group commit's planAndCommitAssigns optimised (warm-up ${w})`);
    assert.ok(optimised('planAndCommitReleases'), `the group release's planAndCommitReleases optimised (warm-up ${w})`);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});
