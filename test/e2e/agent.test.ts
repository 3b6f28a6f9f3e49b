/**
 * `podipam agent` as a process: one agent per socket, a killed agent's stale socket replaced,
 * status and Prometheus metrics, SIGTERM draining a call in flight, and bin/podipam forwarding a
 * config that names the agent (with the standalone rule when no agent listens).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { join } from 'node:path';
import { SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { PODIPAM_BIN, type PluginCall, runPlugin, runPluginSync } from '../helpers/plugin.js';
import { freePort } from '../helpers/free-port.js';
import { makeTempDir } from '../helpers/tmp.js';

const dir = makeTempDir('agent');
after(() => dir.remove());

const localConf = (ipam: Record<string, unknown> = {}) => ({
  cniVersion: '1.0.0',
  name: 'agentnet',
  ipam: { type: 'podipam', dataDir: join(dir.path, 'data'), ranges: [[{ subnet: '10.78.0.0/24' }]], ...ipam },
});
const add = (id: string, env: Record<string, string>, ipam?: Record<string, unknown>): PluginCall => ({
  command: 'ADD',
  containerId: id,
  ifname: 'eth0',
  config: localConf(ipam),
  env,
});

test('a second agent on the same socket refuses to start; a SIGKILLed agent leaves a socket the next one replaces', async () => {
  requireShim();
  const sock = join(dir.path, 'one', 'agent.sock');
  const first = await startAgent(sock);
  try {
    const second = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', '--socket', sock, '--metrics-listen', 'off'], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(second.status, 1, second.stderr);
    assert.match(second.stderr, /another podipam agent is serving .*agent\.sock/);
    // the first one still serves
    const r = runPluginSync(SHIM_BIN, add('k1', { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' }));
    assert.equal(r.code, 0, r.stdout);
  } finally {
    await first.kill();
  }
  assert.ok(existsSync(sock), 'SIGKILL leaves the socket file behind');
  const next = await startAgent(sock);
  try {
    const r = runPluginSync(SHIM_BIN, add('k2', { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' }));
    assert.equal(r.code, 0, r.stdout);
  } finally {
    assert.equal(await next.stop(), 0);
  }
  assert.equal(existsSync(sock), false, 'a clean stop removes the socket');
});

test('status over the socket and Prometheus metrics count calls by verb and result', async () => {
  const sock = join(dir.path, 'stats', 'agent.sock');
  const port = await freePort();
  const agent = await startAgent(sock, ['--metrics-listen', `127.0.0.1:${port}`]);
  try {
    const env = { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' };
    for (let i = 0; i < 5; i++) assert.equal(runPluginSync(SHIM_BIN, add(`s${i}`, env)).code, 0);
    const bad = runPluginSync(SHIM_BIN, { command: 'ADD', containerId: 'bad', ifname: 'eth0', config: '{"cniVersion":', env });
    assert.equal(JSON.parse(bad.stdout).code, 6);
    const s = await agent.status();
    assert.equal(s.requests.ADD?.ok, 5);
    assert.equal(s.requests.ADD?.['code 6'], 1);
    assert.ok(s.latencyMs.ADD!.p50 > 0 && s.latencyMs.ADD!.n === 6);
    assert.equal(s.backends.local, 5);
    const text = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', 'status', '--socket', sock], { encoding: 'utf8' });
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /ADD +ok 5, code 6 1; p50/);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    // Whole lines: the warm-up's calls (6 per round) are counted apart, never here.
    assert.match(metrics, /^podipam_agent_requests_total\{verb="ADD",result="ok"\} 5$/m);
    assert.match(metrics, /^podipam_agent_request_duration_seconds_count\{verb="ADD"\} 6$/m);
    assert.match(metrics, /podipam_agent_in_flight 0/);
  } finally {
    await agent.stop();
  }
  const down = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', 'status', '--socket', sock], { encoding: 'utf8' });
  assert.equal(down.status, 1, 'status of a stopped agent fails (readiness probe)');
  assert.match(down.stderr, /agent not answering/);
});

test('SIGTERM drains: a call in flight gets its whole answer, then the agent exits 0', async () => {
  // A datastore that accepts connections and never answers: the cluster call waits for its deadline.
  const blackhole: Server = createServer(() => {});
  await new Promise<void>((r) => blackhole.listen(0, '127.0.0.1', r));
  const port = (blackhole.address() as { port: number }).port;
  const sock = join(dir.path, 'drain', 'agent.sock');
  const agent = await startAgent(sock);
  try {
    const call: PluginCall = {
      command: 'ADD',
      containerId: 'd1',
      ifname: 'eth0',
      config: { cniVersion: '1.0.0', name: 'drainnet', ipam: { type: 'podipam', datastore: `etcd://127.0.0.1:${port}`, nodeName: 'n1' } },
      env: { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' },
    };
    const pending = runPlugin(SHIM_BIN, call);
    for (let i = 0; i < 100 && (await agent.status()).inFlight === 0; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal((await agent.status()).inFlight, 1, 'the call is in flight');
    agent.child.kill('SIGTERM');
    const r = await pending;
    const e = JSON.parse(r.stdout) as { code: number; msg: string };
    assert.equal(e.code, 11, r.stdout);
    assert.doesNotMatch(e.msg, /closed the connection/, 'answered by the agent, not cut off');
    assert.equal(await agent.exited, 0);
  } finally {
    await agent.kill();
    blackhole.close();
  }
});

test('bin/podipam forwards a config naming the agent; with no agent it runs a self-sufficient config itself, else code 11', async () => {
  const sock = join(dir.path, 'fwd', 'agent.sock');
  const agent = await startAgent(sock);
  try {
    const r = runPluginSync(PODIPAM_BIN, add('f1', {}, { agent: sock }));
    assert.equal(r.code, 0, r.stdout);
    assert.equal((await agent.status()).requests.ADD?.ok, 1, 'the agent served it');
    const only = runPluginSync(PODIPAM_BIN, {
      command: 'ADD',
      containerId: 'f2',
      ifname: 'eth0',
      config: { cniVersion: '1.0.0', name: 'x', ipam: { type: 'podipam', agent: sock } },
    });
    assert.equal(JSON.parse(only.stdout).code, 7, only.stdout);
  } finally {
    await agent.stop();
  }
  const standalone = runPluginSync(PODIPAM_BIN, add('f3', {}, { agent: sock }));
  assert.equal(standalone.code, 0, standalone.stdout);
  const none = runPluginSync(PODIPAM_BIN, {
    command: 'ADD',
    containerId: 'f4',
    ifname: 'eth0',
    config: { cniVersion: '1.0.0', name: 'x', ipam: { type: 'podipam', agent: sock } },
  });
  assert.equal(JSON.parse(none.stdout).code, 11);
  assert.match(JSON.parse(none.stdout).msg, /agent\.sock/);
});

test('a directory lock held by another process stalls only that network: the agent serves other networks meanwhile', async () => {
  const sock = join(dir.path, 'locks', 'agent.sock');
  const agent = await startAgent(sock);
  const env = { PODIPAM_AGENT_SOCKET: sock, PODIPAM_PLUGIN: '' };
  const netDir = (n: string) => join(dir.path, 'locks-data', n);
  const conf = (n: string) => ({
    cniVersion: '1.0.0',
    name: n,
    ipam: { type: 'podipam', dataDir: join(dir.path, 'locks-data'), ranges: [[{ subnet: '10.79.0.0/24' }]] },
  });
  try {
    // Create net-a's directory and lock file, then hold its lock as host-local would.
    assert.equal(runPluginSync(SHIM_BIN, { command: 'ADD', containerId: 'a0', ifname: 'eth0', config: conf('net-a'), env }).code, 0);
    // flock(1) runs `sleep` holding the lock: a process group of its own, killed as one.
    const holder = spawn('flock', [join(netDir('net-a'), 'lock'), 'sleep', '30'], { stdio: 'ignore', detached: true });
    const release = () => {
      try {
        process.kill(-holder.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    };
    try {
      await waitFor(
        () =>
          readFileSync('/proc/locks', 'utf8')
            .split('\n')
            .some((l) => l.includes('FLOCK') && l.includes(` ${holder.pid} `)),
        'flock(1) to hold the lock',
      );
      const blocked = runPlugin(SHIM_BIN, { command: 'ADD', containerId: 'a1', ifname: 'eth0', config: conf('net-a'), env });
      let settled = false;
      void blocked.then(() => (settled = true));
      for (let i = 0; i < 5; i++) {
        const r = await runPlugin(SHIM_BIN, { command: 'ADD', containerId: `b${i}`, ifname: 'eth0', config: conf('net-b'), env });
        assert.equal(r.code, 0, r.stdout);
      }
      assert.equal(settled, false, 'the call on net-a still waits for its lock');
      assert.equal((await agent.status()).inFlight, 1);
      release();
      const r = await blocked;
      assert.equal(r.code, 0, r.stdout);
    } finally {
      release();
    }
  } finally {
    await agent.stop();
  }
});

async function waitFor(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}
