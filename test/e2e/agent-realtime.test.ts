/**
 * `podipam agent --realtime-priority N`: every thread of the agent runs under SCHED_RR at N
 * (read back from /proc/<pid>/task/<tid>/stat, the kernel's own record), a child it spawns would
 * not inherit it (SCHED_RESET_ON_FORK, set with it), and an agent without CAP_SYS_NICE warns
 * naming the capability and serves on at its ordinary priority. Flag and config-file values out
 * of range are usage errors naming the option.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, startAgent } from '../helpers/agent.js';
import { runCliSync } from '../helpers/plugin.js';
import { requireCommand, requireRoot } from '../helpers/prereq.js';
import { makeTempDir } from '../helpers/tmp.js';

/** Policy and real-time priority of each thread (stat fields 41 and 40, counted after the comm's closing paren). */
function threadPolicies(pid: number): { tid: string; policy: number; rtPriority: number }[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // f[0] is field 3 (state): field N is f[N - 3].
    return { tid, rtPriority: Number(f[40 - 3]), policy: Number(f[41 - 3]) };
  });
}

async function waitForLog(a: RunningAgent, text: string): Promise<void> {
  for (let i = 0; i < 200 && !a.log().includes(text); i++) await sleep(50);
  assert.ok(a.log().includes(text), `agent log lacks ${JSON.stringify(text)}:\n${a.log()}`);
}

test('--realtime-priority 1 puts every agent thread under SCHED_RR 1', async () => {
  requireRoot('setting a real-time scheduling policy');
  const dir = makeTempDir('agent-rt');
  const a = await startAgent(join(dir.path, 'a.sock'), ['--node', 'rt-node', '--data-dir', join(dir.path, 'data'), '--realtime-priority', '1']);
  try {
    await waitForLog(a, 'real-time scheduling on');
    const pid = a.child.pid!;
    const threads = threadPolicies(pid);
    assert.ok(threads.length >= 2, `expected the main thread and V8's workers, got ${threads.length}`);
    for (const t of threads) assert.deepEqual({ policy: t.policy, rtPriority: t.rtPriority }, { policy: 2, rtPriority: 1 }, `thread ${t.tid}`);
    // The agent still answers at its new priority.
    const st = await a.status();
    assert.equal(st.node, 'rt-node');
  } finally {
    await a.stop();
    dir.remove();
  }
});

test('without CAP_SYS_NICE the agent warns naming the capability and serves on at SCHED_OTHER', async () => {
  requireRoot('dropping a capability with setpriv');
  requireCommand('setpriv', ['--version'], 'util-linux');
  const dir = makeTempDir('agent-rt-eperm');
  const a = await startAgent(
    join(dir.path, 'a.sock'),
    ['--node', 'rt-node', '--data-dir', join(dir.path, 'data'), '--realtime-priority', '5'],
    {},
    { launcher: ['setpriv', '--inh-caps=-sys_nice', '--bounding-set=-sys_nice'] },
  );
  try {
    await waitForLog(a, 'cannot run at real-time priority 5');
    assert.match(a.log(), /CAP_SYS_NICE/);
    for (const t of threadPolicies(a.child.pid!)) assert.equal(t.policy, 0, `thread ${t.tid} should be SCHED_OTHER`);
    assert.equal((await a.status()).node, 'rt-node');
  } finally {
    await a.stop();
    dir.remove();
  }
});

test('--realtime-priority out of range, on the command line or in --config, is a usage error naming it', () => {
  const dir = makeTempDir('agent-rt-bad');
  try {
    for (const v of ['0', '100', 'high']) {
      const r = runCliSync('memory:', ['agent', '--socket', join(dir.path, 'x.sock'), '--metrics-listen', 'off', '--realtime-priority', v]);
      assert.equal(r.code, 2, `${v}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`--realtime-priority.*${JSON.stringify(v).slice(1, -1)}`));
    }
    const file = join(dir.path, 'agent.json');
    writeFileSync(file, JSON.stringify({ realtimePriority: 0 }));
    const r = runCliSync('memory:', ['agent', '--socket', join(dir.path, 'y.sock'), '--metrics-listen', 'off', '--config', file]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /realtimePriority/);
  } finally {
    dir.remove();
  }
});
