/**
 * The edges of the agent protocol, through the built binaries: whom bin/podipam and the shim
 * accept as their agent (peer uid, an answer that is not a CNI result), a caller the socket's
 * mode refuses, the agent's metrics listener (Host check, bounded labels, a failed listen), its
 * `<socket>.lock` planted as a symlink, `agent status` against a non-status answer, the warm
 * back end's routes and the node name from the environment.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeAnswer } from '../../src/wire/frame.js';
import { SHIM_BIN, requireShim, startAgent, warmSizing } from '../helpers/agent.js';
import { PODIPAM_BIN, type PluginCall, type PluginRun, runCliSync, runPlugin } from '../helpers/plugin.js';
import { freePort } from '../helpers/free-port.js';
import { makeTempDir } from '../helpers/tmp.js';

const dir = makeTempDir('agent-edges');
after(() => dir.remove());
const NOBODY = 65534;

/** A config only an agent can serve (no `ranges`, no `datastore`): no standalone fallback. */
const agentCall = (sock: string, command = 'ADD', env: Record<string, string> = {}): PluginCall => ({
  command,
  containerId: 'e1',
  ifname: 'eth0',
  config: { cniVersion: '1.1.0', name: 'edgenet', ipam: { type: 'podipam', agent: sock } },
  env: { PODIPAM_PLUGIN: '', ...env },
});

const errOf = (r: PluginRun): { code: number; msg: string } => {
  assert.equal(r.code, 1, `exit status 1 with an error: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout) as { code: number; msg: string };
};

/** A fake agent in this process: answers every request with `status` and `body`. */
async function fakeAgent(name: string, status: number, body: string): Promise<{ path: string; server: Server }> {
  const path = join(dir.path, `${name}.sock`);
  const server = createServer((s: Socket) => {
    s.on('error', () => {});
    s.once('data', () => s.end(encodeAnswer({ status, body: Buffer.from(body) })));
  });
  await new Promise<void>((r) => server.listen(path, r));
  return { path, server };
}

test('an agent running as another uid is refused by bin/podipam as by the shim: code 11, its answer never printed', async () => {
  requireShim();
  // Outside the test's 0700 temp dir, so that uid nobody can create the socket.
  const d = mkdtempSync(join(tmpdir(), 'podipam-foreign-agent-'));
  chmodSync(d, 0o777);
  const sock = join(d, 'a.sock');
  const answer = JSON.stringify({ cniVersion: '1.1.0', ips: [{ address: '8.8.8.8/32' }] });
  const script = `const h=Buffer.alloc(16),b=Buffer.from(${JSON.stringify(answer)});h.write('PDPM',0);h.writeUInt32BE(1,4);h.writeUInt32BE(0,8);h.writeUInt32BE(b.length,12);
require('net').createServer((s)=>{s.on('error',()=>{});s.once('data',()=>s.end(Buffer.concat([h,b])))}).listen(${JSON.stringify(sock)},()=>console.log('up'))`;
  const child: ChildProcess = spawn(process.execPath, ['-e', script], { uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.once('data', () => resolve());
      child.once('exit', (c) => reject(new Error(`fake agent exited ${c}`)));
    });
    for (const bin of [PODIPAM_BIN, SHIM_BIN]) {
      const r = await runPlugin(bin, agentCall(sock));
      assert.doesNotMatch(r.stdout, /8\.8\.8\.8/, `${bin} printed the foreign agent's answer`);
      const e = errOf(r);
      assert.equal(e.code, 11, `${bin}: ${r.stdout}`);
      assert.match(e.msg, new RegExp(`${sock}:? runs as uid ${NOBODY}, not root or uid 0: refused`), bin);
    }
  } finally {
    child.kill('SIGKILL');
    rmSync(d, { recursive: true, force: true });
  }
});

test('an answer that is not a CNI result is code 11 in bin/podipam and the shim, never printed', async () => {
  requireShim();
  const cases: { name: string; command: string; status: number; body: string }[] = [
    { name: 'bare', command: 'ADD', status: 0, body: '8.8.8.8/32' },
    { name: 'noversion', command: 'ADD', status: 0, body: '{"ips": [{"address": "8.8.8.8/32"}]}' },
    { name: 'trailing', command: 'ADD', status: 0, body: '{"cniVersion": "1.1.0"} 8.8.8.8/32' },
    { name: 'empty', command: 'ADD', status: 0, body: '' },
    { name: 'delout', command: 'DEL', status: 0, body: '8.8.8.8/32' },
    { name: 'errtext', command: 'ADD', status: 1, body: 'oops 8.8.8.8/32' },
    { name: 'errnocode', command: 'DEL', status: 1, body: '{"msg": "8.8.8.8/32"}' },
  ];
  for (const c of cases) {
    const f = await fakeAgent(`bad-${c.name}`, c.status, c.body);
    try {
      for (const bin of [PODIPAM_BIN, SHIM_BIN]) {
        const r = await runPlugin(bin, agentCall(f.path, c.command));
        const what = `${c.name} through ${bin}: ${r.stdout}`;
        assert.doesNotMatch(r.stdout, /8\.8\.8\.8|oops/, what);
        const e = errOf(r);
        assert.equal(e.code, 11, what);
        assert.match(e.msg, new RegExp(`${f.path}:? answered .*not a CNI (result|error)`), what);
      }
    } finally {
      f.server.close();
    }
  }
  // Well-formed answers still pass through untouched.
  const okAnswer = '{\n    "cniVersion": "1.1.0",\n    "ips": [\n        {\n            "address": "10.9.0.2/24"\n        }\n    ],\n    "dns": {}\n}';
  const good = await fakeAgent('good', 0, okAnswer);
  const del = await fakeAgent('gooddel', 0, '');
  const err = await fakeAgent('gooderr', 1, '{\n    "code": 7,\n    "msg": "bad"\n}');
  try {
    for (const bin of [PODIPAM_BIN, SHIM_BIN]) {
      const r = await runPlugin(bin, agentCall(good.path));
      assert.equal(r.code, 0, `${bin}: ${r.stdout}`);
      assert.equal(r.stdout, okAnswer);
      const d = await runPlugin(bin, agentCall(del.path, 'DEL'));
      assert.deepEqual([d.code, d.stdout], [0, ''], bin);
      assert.equal(errOf(await runPlugin(bin, agentCall(err.path))).code, 7, bin);
    }
  } finally {
    for (const f of [good, del, err]) f.server.close();
  }
});

test('a caller the socket mode refuses (EACCES) gets a permanent error naming the socket, from the shim and bin/podipam', async () => {
  requireShim();
  const d = join(mkdtempSync(join(tmpdir(), 'podipam-eacces-')), 'run');
  const agent = await startAgent(join(d, 'agent.sock'));
  try {
    chmodSync(join(d, '..'), 0o755);
    chmodSync(d, 0o755); // the directory is reachable: the 0600 socket itself refuses uid nobody
    for (const bin of [SHIM_BIN, PODIPAM_BIN]) {
      const r = spawnSync(bin, [], {
        uid: NOBODY,
        gid: NOBODY,
        env: {
          PATH: process.env.PATH,
          CNI_COMMAND: 'ADD',
          CNI_CONTAINERID: 'p1',
          CNI_IFNAME: 'eth0',
          CNI_NETNS: '/x',
          CNI_PATH: '/usr/lib/cni',
          PODIPAM_PLUGIN: '',
          PODIPAM_CNI_LOG: '/dev/null',
        },
        input: JSON.stringify(agentCall(agent.socket).config),
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(r.status, 1, `${bin}: ${r.stdout}${r.stderr}`);
      const e = JSON.parse(r.stdout) as { code: number; msg: string };
      assert.equal(e.code, 5, `${bin}: not 11 (retrying cannot help): ${r.stdout}`);
      assert.match(e.msg, new RegExp(`${agent.socket}.*permission denied.*uid ${NOBODY}`, 'i'), bin);
    }
  } finally {
    await agent.stop();
    rmSync(join(d, '..'), { recursive: true, force: true });
  }
});

test('agent status against a socket that answers no status: exit 1 with a clear message, no stack', async () => {
  for (const [name, body] of [
    ['text', 'hello'],
    ['array', '[1, 2]'],
    ['partial', '{"pid": 1}'],
  ] as const) {
    const f = await fakeAgent(`status-${name}`, 0, body);
    try {
      const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const c = spawn(PODIPAM_BIN, ['agent', 'status', '--socket', f.path], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        c.stdout.setEncoding('utf8').on('data', (x: string) => (stdout += x));
        c.stderr.setEncoding('utf8').on('data', (x: string) => (stderr += x));
        c.on('close', (code) => resolve({ code, stdout, stderr }));
      });
      assert.equal(r.code, 1, `${name}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, new RegExp(`${f.path}.*not an agent status`), name);
      assert.doesNotMatch(r.stderr, /\n\s+at /, `${name}: a stack trace`);
    } finally {
      f.server.close();
    }
  }
});

test('<socket>.lock planted as a symbolic link is refused, never followed', () => {
  const d = join(dir.path, 'lockrun');
  mkdirSync(d, { mode: 0o700 });
  const victim = join(dir.path, 'victim.txt');
  writeFileSync(victim, 'precious\n');
  symlinkSync(victim, join(d, 'agent.sock.lock'));
  const r = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', '--socket', join(d, 'agent.sock'), '--metrics-listen', 'off'], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /agent\.sock\.lock.*symbolic link/);
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'the link target is untouched');
  assert.equal(existsSync(join(d, 'agent.sock')), false, 'nothing served');
});

test('the metrics listener: a foreign Host gets 421; CNI_COMMAND values become bounded labels; a listen that fails stops the agent (exit 2)', async () => {
  requireShim();
  const port = await freePort();
  const sock = join(dir.path, 'metrics', 'agent.sock');
  const agent = await startAgent(sock, ['--metrics-listen', `127.0.0.1:${port}`]);
  try {
    const get = (host: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const http = process.getBuiltinModule('node:http');
        const req = http.get({ host: '127.0.0.1', port, path: '/metrics', headers: { host } }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (x: string) => (body += x));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
      });
    assert.equal((await get(`evil.example:${port}`)).status, 421, 'DNS rebinding: a foreign Host');
    assert.equal((await get(`localhost:${port}`)).status, 200);
    for (let i = 0; i < 20; i++) {
      const r = await runPlugin(SHIM_BIN, agentCall(sock, `X${i}`));
      assert.equal(errOf(r).code, 4, r.stdout);
    }
    await runPlugin(SHIM_BIN, agentCall(sock, 'ADD')); // no warm pool: an error, a known verb
    const m = await get(`127.0.0.1:${port}`);
    const verbs = new Set([...m.body.matchAll(/podipam_agent_requests_total\{verb="([^"]*)"/g)].map((x) => x[1]));
    assert.deepEqual([...verbs].sort(), ['ADD', 'other'], m.body);
    assert.doesNotMatch(m.body, /verb="X/);
    const st = await agent.status();
    assert.deepEqual(Object.keys(st.requests).sort(), ['ADD', 'other'], 'status is bounded the same way');

    // Another agent on the metrics port already taken: exit 2, and its socket is not left serving.
    const sock2 = join(dir.path, 'metrics2', 'agent.sock');
    const r = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', '--socket', sock2, '--metrics-listen', `127.0.0.1:${port}`], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`127\\.0\\.0\\.1:${port}.*in use`));
    assert.equal(existsSync(sock2), false, 'no socket left behind');
  } finally {
    await agent.stop();
  }
});

test('the warm back end refuses bad routes as the local and cluster back ends do (code 7 naming the field)', async () => {
  requireShim();
  const url = `sqlite:${join(dir.path, 'warm.db')}`;
  assert.equal(runCliSync(url, ['pool', 'create', 'w4', '--cidr', '10.212.0.0/16']).code, 0);
  const sock = join(dir.path, 'warm', 'agent.sock');
  const agent = await startAgent(sock, ['--node', 'wnode', '--datastore', url, '--data-dir', join(dir.path, 'warm-data'), ...warmSizing(2, 4, 8)]);
  try {
    const call = (routes: unknown, id: string): PluginCall => ({
      command: 'ADD',
      containerId: id,
      ifname: 'eth0',
      config: { cniVersion: '1.1.0', name: 'warmnet', ipam: { type: 'podipam', agent: sock, routes } },
      env: { PODIPAM_PLUGIN: '' },
    });
    const bad: [unknown, RegExp][] = [
      [[{ dst: 'not-a-cidr' }], /ipam\.routes\[0\]\.dst: invalid CIDR address "not-a-cidr"/],
      [[{ dst: '0.0.0.0/0', mtu: 'huge' }], /ipam\.routes\[0\]\.mtu: must be an integer, got string "huge"/],
      [[{ dst: '0.0.0.0/0', gw: 'nowhere' }], /ipam\.routes\[0\]\.gw: invalid IP address "nowhere"/],
      [{ dst: '0.0.0.0/0' }, /ipam\.routes: must be an array/],
    ];
    for (const [routes, msg] of bad) {
      for (const bin of [SHIM_BIN, PODIPAM_BIN]) {
        const r = await runPlugin(bin, call(routes, 'w1'));
        assert.doesNotMatch(r.stdout, /not-a-cidr"\s*}/, 'never echoed as a route');
        const e = errOf(r);
        assert.equal(e.code, 7, r.stdout);
        assert.match(e.msg, msg);
      }
    }
    // A good route is normalised as the other back ends print it; mtu is kept (1.1.0).
    const ok = await runPlugin(SHIM_BIN, call([{ dst: '0:0::0/0', gw: 'FD00::1', mtu: 1400, foo: 1 }], 'w2'));
    assert.equal(ok.code, 0, ok.stdout);
    assert.deepEqual((JSON.parse(ok.stdout) as { routes: unknown }).routes, [{ dst: '::/0', gw: 'fd00::1', mtu: 1400 }]);
  } finally {
    await agent.stop();
  }
});

test('the node name comes from $NODENAME, else $NODE_NAME (as the DaemonSet and the systemd unit set it)', async () => {
  const a = await startAgent(join(dir.path, 'node1', 'agent.sock'), [], { NODE_NAME: 'node-from-node-name' });
  try {
    assert.equal((await a.status()).node, 'node-from-node-name');
  } finally {
    await a.stop();
  }
  const b = await startAgent(join(dir.path, 'node2', 'agent.sock'), [], { NODENAME: 'node-from-nodename', NODE_NAME: 'ignored' });
  try {
    assert.equal((await b.status()).node, 'node-from-nodename', "$NODENAME, Calico's name for it, wins when both are set");
    // The shim forwards the caller's $NODE_NAME too: a cluster-mode config without nodeName is
    // served for the caller's node (here a name the agent refuses, so the message shows which).
    requireShim();
    const r = await runPlugin(SHIM_BIN, {
      command: 'ADD',
      containerId: 'n1',
      ifname: 'eth0',
      config: { cniVersion: '1.0.0', name: 'nodenet', ipam: { type: 'podipam', datastore: `sqlite:${join(dir.path, 'node.db')}`, cacheDir: '' } },
      env: { PODIPAM_AGENT_SOCKET: b.socket, PODIPAM_PLUGIN: '', NODE_NAME: 'Caller_Node' },
    });
    const e = errOf(r);
    assert.equal(e.code, 7, r.stdout);
    assert.match(e.msg, /ipam\.nodeName \(from \$NODENAME, \$NODE_NAME or the host name\) "Caller_Node"/);
  } finally {
    await b.stop();
  }
});
