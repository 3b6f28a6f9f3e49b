/**
 * `podipam demo`: pods up through bridge + podipam on each back end (local, cluster, and agent
 * through the shim and an agent the demo starts and stops), pinging each other, and
 * everything gone afterwards — also when interrupted with Ctrl-C (SIGINT) while the pods are up.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { requirePrerequisites, sh, testSubnet } from './runtime-harness.js';

/** Removes whatever a demo that went wrong left (its bridge, namespaces), so a failure stays local. */
function sweep(out: string): void {
  const bridge = /bridge (pdemo\w+)/.exec(out)?.[1];
  if (!bridge) return;
  const tag = bridge.slice('pdemo'.length);
  for (const ns of sh('ip', ['netns', 'list']).out.split('\n')) {
    const name = ns.split(' ')[0];
    if (name?.startsWith(`podipam-demo-${tag}-`)) sh('ip', ['netns', 'del', name]);
  }
  sh('ip', ['link', 'del', bridge]);
}

/** The names the demo announced (bridge, namespaces) must all be gone. */
function assertGone(out: string): void {
  const bridge = /bridge (pdemo\w+)/.exec(out)?.[1];
  assert.ok(bridge, out);
  assert.ok(!sh('ip', ['link', 'show', bridge]).ok, `bridge ${bridge} left`);
  const tag = bridge.slice('pdemo'.length);
  assert.ok(!sh('ip', ['netns', 'list']).out.includes(`podipam-demo-${tag}`), 'namespaces left');
  assert.ok(!readdirSync(tmpdir()).some((f) => f.startsWith('podipam-demo-') && out.includes(f)), 'scratch dir left');
}

for (const backend of ['local', 'cluster', 'agent']) {
  test(`podipam demo --backend ${backend}: pods get addresses, ping each other, all torn down`, () => {
    requirePrerequisites(['bridge', 'loopback']);
    const r = spawnSync(PODIPAM_BIN, ['demo', '--pods', '3', '--backend', backend, '--subnet', testSubnet(228)], { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) sweep(r.stdout);
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.equal((r.stdout.match(/ eth0 10\.228\.\d+\.\d+\/\d+/g) ?? []).length, 3, r.stdout);
    assert.equal((r.stdout.match(/ping .*: ok/g) ?? []).length, 3, r.stdout);
    if (backend === 'agent') assert.match(r.stdout, /podipam agent \(pid \d+\) served 3 ADD and 3 DEL calls; stopped/);
    assert.match(r.stdout, /torn down: pods deleted/);
    assertGone(r.stdout);
  });
}

test('podipam demo --hold --backend agent: Ctrl-C (SIGINT to the whole process group, as a terminal sends it) tears everything down', async () => {
  requirePrerequisites(['bridge', 'loopback']);
  const child = spawn(PODIPAM_BIN, ['demo', '--pods', '2', '--hold', '--backend', 'agent', '--subnet', testSubnet(229)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  while (!out.includes('press Ctrl-C') && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 50));
  try {
    assert.ok(out.includes('press Ctrl-C'), out);
    const bridge = /bridge (pdemo\w+)/.exec(out)![1]!;
    assert.ok(sh('ip', ['link', 'show', bridge]).ok, 'the pods are not up');
    process.kill(-child.pid!, 'SIGINT');
    const code = await exited;
    assert.equal(code, 130, out);
    assert.match(out, /interrupted: tearing down/);
    assert.match(out, /served 2 ADD and 2 DEL calls/, 'the agent went before the pods were deleted');
    assert.match(out, /torn down: pods deleted/);
    assertGone(out);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    sweep(out);
  }
});

test('podipam demo: bad options are clear usage errors', () => {
  const bad = spawnSync(PODIPAM_BIN, ['demo', '--backend', 'nope'], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--backend "nope": use one of local, cluster, agent/);
  const pods = spawnSync(PODIPAM_BIN, ['demo', '--pods', '999'], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(pods.status, 2);
  assert.match(pods.stderr, /--pods 999: must be an integer from 1 to 64/);
});
